// List page tokens: anything decodes or is refused, in any order and with any filter text; a
// decoded token encodes back to itself.
//
// Input: one byte choosing the order (key and direction), then the filter text up to the first
// newline, then the token.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "store_common.h"

using trainyard::store::JobOrder;
using trainyard::store::JobOrderKey;
using trainyard::store::ListJobsRequest;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  ListJobsRequest request;
  request.order = JobOrder{static_cast<JobOrderKey>(data[0] % 6), (data[0] / 6) % 2 == 1};
  const size_t newline = rest.find('\n');
  if (newline != std::string::npos) {
    request.filter_text = rest.substr(0, newline);
    rest.erase(0, newline + 1);
  }
  request.page_token = rest;
  auto cursor = trainyard::store::internal::DecodePageToken(request);
  if (!cursor.ok() || !cursor->has_value()) return 0;
  if (trainyard::store::internal::EncodeCursor(request, **cursor) != request.page_token) {
    std::fprintf(stderr, "token %s does not round-trip\n", request.page_token.c_str());
    std::abort();
  }
  return 0;
}
