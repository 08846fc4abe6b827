#include "trainyard/core/etag.h"

namespace trainyard {
namespace {

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool IfNoneMatchHits(std::string_view header, std::string_view etag) {
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view tag = TrimSpace(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    if (tag == "*") return true;
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (!tag.empty() && tag == etag) return true;
  }
  return false;
}

}  // namespace trainyard
