// Object names, bucket names and locations: a name that validates never escapes its bucket.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "trainyard/storage/bucket_store.h"

namespace ts = trainyard::storage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (ts::ValidateObjectName(text).ok()) {
    std::string s(text);
    if (s.empty() || s[0] == '/' || s.find('\0') != std::string::npos ||
        ("/" + s + "/").find("/../") != std::string::npos ||
        ("/" + s + "/").find("/./") != std::string::npos) {
      std::fprintf(stderr, "accepted an escaping name: %s\n", s.c_str());
      std::abort();
    }
  }
  (void)ts::ValidateBucketName(text);
  auto loc = ts::ParseLocation(text);
  if (loc.ok() && loc->kind == ts::Location::Kind::kBucket && !loc->object.empty() &&
      !ts::ValidateObjectName(loc->object).ok()) {
    std::fprintf(stderr, "a location with an invalid object: %s\n", std::string(text).c_str());
    std::abort();
  }
  return 0;
}
