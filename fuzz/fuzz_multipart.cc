// multipart/related upload bodies, fed in pieces. Input: the Content-Type line, a newline, the
// body; the body is split where the first byte of the input says.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "multipart.h"

namespace ti = trainyard::storage::internal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return 0;
  auto boundary = ti::MultipartBoundary(in.substr(0, nl));
  if (!boundary.ok()) return 0;
  std::string_view body = in.substr(nl + 1);
  size_t total = 0;
  ti::MultipartParser parser(
      *boundary,
      [](size_t, const ti::MultipartParser::Headers&) { return trainyard::Status::Ok(); },
      [&total](size_t, const char*, size_t n) {
        total += n;
        return trainyard::Status::Ok();
      });
  size_t step = body.empty() ? 1 : 1 + static_cast<unsigned char>(body[0]) % 64;
  for (size_t off = 0; off < body.size(); off += step) {
    if (!parser.Feed(body.data() + off, std::min(step, body.size() - off)).ok()) return 0;
  }
  (void)parser.Finish();
  return 0;
}
