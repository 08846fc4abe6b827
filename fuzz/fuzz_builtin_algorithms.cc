// Built-in algorithms (builtin_algorithms.h): the first line is an image URI (a job's
// masterConfig.imageUri), the rest the metadata.json a trainer wrote. Recognition must only
// accept gcr.io/cloud-ml-algos/<known name>; builtInAlgorithmOutput always names the framework
// and takes versions only from strings.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "trainyard/scheduler/builtin_algorithms.h"

using trainyard::scheduler::BuiltInAlgorithmOutputJson;
using trainyard::scheduler::FindBuiltInAlgorithm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  const std::string_view uri = in.substr(0, nl);
  const std::string_view meta = nl == std::string_view::npos ? "" : in.substr(nl + 1);
  const auto* algo = FindBuiltInAlgorithm(uri);
  if (algo == nullptr) return 0;
  const std::string name = std::string("cloud-ml-algos/") + algo->image;
  const size_t at = uri.find(name);
  const char after = at + name.size() < uri.size() ? uri[at + name.size()] : '\0';
  if (at == std::string_view::npos || (after != '\0' && after != ':' && after != '@')) {
    std::fprintf(stderr, "accepted %.*s as %s\n", static_cast<int>(uri.size()), uri.data(),
                 algo->image);
    std::abort();
  }
  const auto out = BuiltInAlgorithmOutputJson(*algo, meta, "", "", "gs://b/model");
  if (!out.contains("framework") || !out["framework"].is_string() ||
      (out.contains("pythonVersion") && !out["pythonVersion"].is_string()) ||
      (out.contains("runtimeVersion") && !out["runtimeVersion"].is_string())) {
    std::fprintf(stderr, "bad output %s\n", out.dump().c_str());
    std::abort();
  }
  return 0;
}
