// AI Platform's built-in algorithms (compat §4 BuiltInAlgorithmOutput): a job whose
// masterConfig.imageUri names one of Google's algorithm images (gcr.io/cloud-ml-algos/<name>,
// any tag or digest) runs a Python trainer that Trainyard ships (python/trainyard_algorithms,
// installed next to the hypertune module) on the runtime's Python, with no container pull.
// docs/builtin-algorithms.md lists the algorithms, their arguments and their differences.
// Pure functions: no I/O, no clock, no locks.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace trainyard::scheduler {

struct BuiltInAlgorithm {
  const char* image;      // the image's name under gcr.io/cloud-ml-algos/
  const char* module;     // the Python module Trainyard runs instead
  const char* framework;  // builtInAlgorithmOutput.framework
};

// The algorithm an image URI names (gcr.io/cloud-ml-algos/<name>[:tag][@digest]), or nullptr.
const BuiltInAlgorithm* FindBuiltInAlgorithm(std::string_view image_uri);

// Where one run of a built-in algorithm writes its output: the job dir, or the trial's
// subdirectory of it (<job-dir>/<trialId>) in a tuning job. No trailing slash.
std::string BuiltInOutputDir(const std::string& job_dir, const std::string& trial_id);

// builtInAlgorithmOutput: the framework of the algorithm; pythonVersion and runtimeVersion
// from the metadata the trainer wrote (<output>/artifacts/metadata.json; its text, maybe
// empty or malformed), else the job's own; modelPath when it is not empty.
nlohmann::ordered_json BuiltInAlgorithmOutputJson(const BuiltInAlgorithm& algo,
                                                  std::string_view metadata_text,
                                                  const std::string& job_runtime_version,
                                                  const std::string& job_python_version,
                                                  const std::string& model_path);

}  // namespace trainyard::scheduler
