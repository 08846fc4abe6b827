// The cloudml-hypertune metric file a trainer writes (read back by the executor): the first line
// of the input is the metric tag, the rest the file. Every record read has a finite value.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hypertune_metrics.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string tag(nl == std::string_view::npos ? std::string_view("accuracy") : in.substr(0, nl));
  std::string_view file = nl == std::string_view::npos ? in : in.substr(nl + 1);
  auto records = trainyard::executor::ParseMetricFile(file, tag);
  for (const auto& r : records) {
    if (!std::isfinite(r.value)) std::abort();
  }
  return 0;
}
