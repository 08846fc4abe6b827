// The Content-Range header of a resumable-upload PUT: anything parses or is refused; an accepted
// range has 0 <= first <= last < total, a defined Length(), and prints back to itself.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "upload_range.h"

namespace ti = trainyard::storage::internal;

namespace {
std::string Print(const ti::ContentRange& r) {
  std::string s = "bytes ";
  s += r.first ? std::to_string(*r.first) + "-" + std::to_string(*r.last) : "*";
  s += "/";
  s += r.total ? std::to_string(*r.total) : "*";
  return s;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string header(reinterpret_cast<const char*>(data), size);
  auto r = ti::ParseContentRange(header);
  if (!r.ok()) return 0;
  if (r->first.has_value() != r->last.has_value()) std::abort();
  if (r->first) {
    if (*r->first < 0 || r->Length() < 1) std::abort();
    if (r->total && *r->last >= *r->total) std::abort();
  }
  if (r->total && *r->total < 0) std::abort();
  auto again = ti::ParseContentRange(Print(*r));
  if (!again.ok() || again->first != r->first || again->last != r->last ||
      again->total != r->total) {
    std::fprintf(stderr, "%s does not print back\n", header.c_str());
    std::abort();
  }
  return 0;
}
