#include "regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace trainyard::resource::internal {
namespace {

// Enough for any filter a person writes; a pathological pattern stops here instead of hanging.
constexpr uint32_t kMatchLimit = 1000000;
constexpr uint32_t kDepthLimit = 10000;

}  // namespace

std::shared_ptr<const Regex> Regex::Compile(std::string_view pattern, Flags flags,
                                            std::string* error) {
  uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
  if (flags.ignore_case) options |= PCRE2_CASELESS;
  if (flags.multiline) options |= PCRE2_MULTILINE;
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                 options, &code, &offset, nullptr);
  if (re == nullptr) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(code, buf, sizeof buf);
    if (error != nullptr) {
      *error = std::string(reinterpret_cast<const char*>(buf)) + " at position " +
               std::to_string(offset);
    }
    return nullptr;
  }
  std::shared_ptr<Regex> out(new Regex());
  out->code_ = re;
  return out;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

bool Regex::Search(std::string_view text) const {
  auto* re = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
  pcre2_match_context* ctx = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(ctx, kMatchLimit);
  pcre2_set_depth_limit(ctx, kDepthLimit);
  int rc = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0, md, ctx);
  pcre2_match_context_free(ctx);
  pcre2_match_data_free(md);
  return rc >= 0;
}

std::string Regex::Escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\0') {
      out += "\\x00";
      continue;
    }
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || (static_cast<unsigned char>(c) >= 0x80);
    if (!plain) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace trainyard::resource::internal
