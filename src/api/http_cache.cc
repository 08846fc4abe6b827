#include "http_cache.h"

#include <cstdint>
#include <cstdio>
#include <functional>

namespace trainyard::api {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string BodyEtag(std::string_view body) {
  // libstdc++'s hash of bytes (MurmurHash2, 64 bits): several GB/s, so tagging a 1 MB page of
  // log lines costs well under a millisecond.
  const uint64_t h = std::hash<std::string_view>{}(body);
  char buf[48];
  std::snprintf(buf, sizeof buf, "\"%016llx-%llx\"", static_cast<unsigned long long>(h),
                static_cast<unsigned long long>(body.size()));
  return buf;
}

bool IfNoneMatchHits(std::string_view header, std::string_view etag) {
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view tag = Trim(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    if (tag == "*") return true;
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (!tag.empty() && tag == etag) return true;
  }
  return false;
}

}  // namespace trainyard::api
