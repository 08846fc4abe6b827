// List page tokens: anything decodes or is refused; a decoded token encodes back to itself.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "store_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string token(reinterpret_cast<const char*>(data), size);
  auto seq = trainyard::store::internal::DecodePageToken(token);
  if (!seq.ok() || !seq->has_value()) return 0;
  auto again = trainyard::store::internal::DecodePageToken(
      trainyard::store::internal::EncodePageToken(**seq));
  if (!again.ok() || *again != *seq) {
    std::fprintf(stderr, "token %s does not round-trip\n", token.c_str());
    std::abort();
  }
  return 0;
}
