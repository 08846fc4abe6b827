#include "trainyard/scheduler/builtin_algorithms.h"

namespace trainyard::scheduler {

namespace {

// The images of the tabular algorithms (compat §4); the image algorithms (image_classification,
// image_object_detection) need TensorFlow and stay custom containers.
constexpr BuiltInAlgorithm kAlgorithms[] = {
    {"boosted_trees", "trainyard_algorithms.boosted_trees", "XGBOOST"},
    {"xgboost_dist", "trainyard_algorithms.xgboost_dist", "XGBOOST"},
    {"linear_learner_cpu", "trainyard_algorithms.linear_learner", "PYTORCH"},
    {"linear_learner_gpu", "trainyard_algorithms.linear_learner", "PYTORCH"},
    {"wide_deep_learner_cpu", "trainyard_algorithms.wide_deep", "PYTORCH"},
    {"wide_deep_learner_gpu", "trainyard_algorithms.wide_deep", "PYTORCH"},
};

constexpr std::string_view kRepository = "cloud-ml-algos/";

}  // namespace

const BuiltInAlgorithm* FindBuiltInAlgorithm(std::string_view uri) {
  // gcr.io or a regional host of it (us.gcr.io, eu.gcr.io, asia.gcr.io).
  const size_t slash = uri.find('/');
  if (slash == std::string_view::npos) return nullptr;
  const std::string_view host = uri.substr(0, slash);
  if (host != "gcr.io" && !(host.size() > 7 && host.ends_with(".gcr.io"))) return nullptr;
  std::string_view rest = uri.substr(slash + 1);
  if (!rest.starts_with(kRepository)) return nullptr;
  rest.remove_prefix(kRepository.size());
  // The name ends at a tag (":latest") or a digest ("@sha256:...").
  const size_t end = rest.find_first_of(":@");
  const std::string_view name = rest.substr(0, end);
  for (const BuiltInAlgorithm& a : kAlgorithms) {
    if (name == a.image) return &a;
  }
  return nullptr;
}

std::string BuiltInOutputDir(const std::string& job_dir, const std::string& trial_id) {
  std::string dir = job_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (!trial_id.empty()) dir += "/" + trial_id;
  return dir;
}

nlohmann::ordered_json BuiltInAlgorithmOutputJson(const BuiltInAlgorithm& algo,
                                                  std::string_view metadata_text,
                                                  const std::string& job_runtime_version,
                                                  const std::string& job_python_version,
                                                  const std::string& model_path) {
  std::string runtime_version = job_runtime_version;
  std::string python_version = job_python_version;
  const nlohmann::json meta = nlohmann::json::parse(metadata_text, nullptr, false);
  if (meta.is_object()) {
    auto text = [&meta](const char* key, std::string* out) {
      auto it = meta.find(key);
      if (it != meta.end() && it->is_string() && !it->get<std::string>().empty()) {
        *out = it->get<std::string>();
      }
    };
    text("runtime_version", &runtime_version);
    text("python_version", &python_version);
  }
  // Field order as the service prints it (compat §4).
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["framework"] = algo.framework;
  if (!runtime_version.empty()) out["runtimeVersion"] = runtime_version;
  if (!python_version.empty()) out["pythonVersion"] = python_version;
  if (!model_path.empty()) out["modelPath"] = model_path;
  return out;
}

}  // namespace trainyard::scheduler
