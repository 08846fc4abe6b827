// gcloud-style --config files (YAML or JSON): what parses must be JSON text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "trainyard/model/job_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto json_text = trainyard::model::ConfigFileToJobJson(text);
  if (!json_text.ok()) return 0;
  if (!nlohmann::json::accept(*json_text)) {
    std::fprintf(stderr, "not JSON: %s\n", json_text->c_str());
    std::abort();
  }
  return 0;
}
