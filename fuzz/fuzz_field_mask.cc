// The `fields` partial-response mask (src/api/field_mask.h): the first line is the mask, the
// rest a JSON document (a job list when empty). Anything parses or is refused with
// INVALID_ARGUMENT naming `fields`; an accepted mask prints (ToString) to a text that parses to
// the same mask; masking is idempotent, keeps only what the document had, and the canonical
// text masks the same way.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "field_mask.h"

using nlohmann::ordered_json;
using trainyard::api::ApplyFieldMask;
using trainyard::api::FieldMask;
using trainyard::api::ParseFieldMask;

namespace {

[[noreturn]] void Fail(const char* what, const std::string& mask) {
  std::fprintf(stderr, "%s: mask \"%s\"\n", what, mask.c_str());
  std::abort();
}

// Every object key of `part` is a key of `whole` at the same place (arrays element-wise).
bool Within(const ordered_json& part, const ordered_json& whole) {
  if (part.is_object()) {
    if (!whole.is_object()) return false;
    for (const auto& [k, v] : part.items()) {
      if (!whole.contains(k) || !Within(v, whole[k])) return false;
    }
    return true;
  }
  if (part.is_array()) {
    if (!whole.is_array() || part.size() != whole.size()) return false;
    for (size_t i = 0; i < part.size(); ++i) {
      if (!Within(part[i], whole[i])) return false;
    }
    return true;
  }
  return part == whole;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  size_t nl = input.find('\n');
  std::string mask_text = input.substr(0, nl);
  std::string doc_text = nl == std::string::npos ? "" : input.substr(nl + 1);
  auto mask = ParseFieldMask(mask_text);
  if (!mask.ok()) {
    if (mask.status().violations().empty() || mask.status().violations()[0].field != "fields") {
      Fail("a refusal that does not name fields", mask_text);
    }
    return 0;
  }
  auto again = ParseFieldMask(mask->ToString());
  if (!again.ok() || !(*again == *mask)) Fail("the canonical text does not round-trip", mask_text);
  ordered_json doc = ordered_json::parse(
      doc_text.empty() ? R"({"jobs":[{"jobId":"a","state":"RUNNING","labels":{"k":"v"},)"
                         R"("trainingInput":{"args":["1"],"hyperparameters":{"maxTrials":3}}},)"
                         R"({"jobId":"b"}],"nextPageToken":"t"})"
                       : doc_text,
      nullptr, false);
  if (doc.is_discarded()) return 0;
  ordered_json once = ApplyFieldMask(doc, *mask);
  if (!Within(once, doc)) Fail("the masked answer has what the document had not", mask_text);
  if (ApplyFieldMask(once, *mask) != once) Fail("masking twice differs", mask_text);
  if (ApplyFieldMask(doc, *again) != once) Fail("the canonical mask masks differently", mask_text);
  return 0;
}
