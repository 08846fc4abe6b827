// The tuning study JSON (a HyperparameterSpec, as trainyard-tuner and the scheduler read it): an
// accepted config passes ValidateStudyConfig, and every parameter's value text (the input's
// first line) that ParseValue accepts prints back to a text that parses to the same value.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "trainyard/tuning/study.h"

namespace tt = trainyard::tuning;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string_view value = nl == std::string_view::npos ? std::string_view() : in.substr(0, nl);
  std::string_view json = nl == std::string_view::npos ? in : in.substr(nl + 1);
  auto config = tt::ParseStudyConfig(json);
  if (!config.ok()) return 0;
  if (!tt::ValidateStudyConfig(*config).ok()) std::abort();
  for (const auto& spec : config->params) {
    auto v = tt::ParseValue(spec, value);
    if (!v.ok()) continue;
    std::string text = tt::FormatValue(spec, *v);
    auto again = tt::ParseValue(spec, text);
    if (!again.ok() || again->category != v->category ||
        (again->number != v->number && !(again->number != again->number))) {
      std::abort();
    }
  }
  return 0;
}
