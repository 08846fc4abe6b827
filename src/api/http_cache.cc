#include "http_cache.h"

#include <cstdint>
#include <cstdio>
#include <functional>

namespace trainyard::api {

std::string BodyEtag(std::string_view body) {
  // libstdc++'s hash of bytes (MurmurHash2, 64 bits): several GB/s, so tagging a 1 MB page of
  // log lines costs well under a millisecond.
  const uint64_t h = std::hash<std::string_view>{}(body);
  char buf[48];
  std::snprintf(buf, sizeof buf, "\"%016llx-%llx\"", static_cast<unsigned long long>(h),
                static_cast<unsigned long long>(body.size()));
  return buf;
}

}  // namespace trainyard::api
