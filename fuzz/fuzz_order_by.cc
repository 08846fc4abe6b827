// projects.jobs.list's orderBy (api_util.h, ParseJobOrder): any text parses or is refused with
// INVALID_ARGUMENT naming orderBy; what parses names a key it can order by.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "api_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto order = trainyard::api::ParseJobOrder(text);
  if (!order.ok()) {
    if (order.status().code() != trainyard::StatusCode::kInvalidArgument ||
        order.status().violations().size() != 1 ||
        order.status().violations()[0].field != "orderBy") {
      std::fprintf(stderr, "orderBy refused without naming it: %s\n",
                   order.status().ToString().c_str());
      std::abort();
    }
    return 0;
  }
  const int key = static_cast<int>(order->key);
  if (key < 0 || key > static_cast<int>(trainyard::store::JobOrderKey::kState)) std::abort();
  return 0;
}
