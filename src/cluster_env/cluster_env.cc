#include "trainyard/cluster_env/cluster_env.h"

namespace trainyard::cluster_env {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

constexpr auto kReplace = json::error_handler_t::replace;

void DumpPython(const ordered_json& j, std::string* out) {
  if (j.is_object()) {
    *out += '{';
    bool first = true;
    for (const auto& [key, value] : j.items()) {
      if (!first) *out += ", ";
      first = false;
      *out += ordered_json(key).dump(-1, ' ', true, kReplace);
      *out += ": ";
      DumpPython(value, out);
    }
    *out += '}';
  } else if (j.is_array()) {
    *out += '[';
    for (size_t i = 0; i < j.size(); ++i) {
      if (i > 0) *out += ", ";
      DumpPython(j[i], out);
    }
    *out += ']';
  } else {
    *out += j.dump(-1, ' ', true, kReplace);
  }
}

std::string SnakeCase(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c >= 'A' && c <= 'Z') {
      if (!out.empty()) out.push_back('_');
      out.push_back(static_cast<char>(c - 'A' + 'a'));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// "host:port" -> host, port (0 when there is none).
std::pair<std::string, int> SplitAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return {address, 0};
  int port = 0;
  for (size_t i = colon + 1; i < address.size(); ++i) {
    const char c = address[i];
    if (c < '0' || c > '9') return {address, 0};
    port = port * 10 + (c - '0');
    if (port > 65535) return {address, 0};
  }
  return {address.substr(0, colon), port};
}

}  // namespace

std::string Dump(const ordered_json& value, JsonStyle style) {
  if (style == JsonStyle::kPython) {
    std::string out;
    DumpPython(value, &out);
    return out;
  }
  return json(value).dump(-1, ' ', false, kReplace);
}

ordered_json TfCluster(const std::vector<Task>& tasks, const std::string& primary,
                       const std::vector<std::string>& always_listed) {
  ordered_json cluster = ordered_json::object();
  for (const std::string& type : always_listed) cluster[type] = ordered_json::array();
  for (const Task& t : tasks) {
    if (t.type == "evaluator") continue;  // evaluators are never in TF_CONFIG's cluster
    cluster[t.type == "master" ? primary : t.type].push_back(t.address);
  }
  return cluster;
}

ordered_json ClusterSpecCluster(const std::vector<Task>& tasks) {
  ordered_json cluster = ordered_json::object();
  for (const Task& t : tasks) cluster[t.type].push_back(t.address);
  return cluster;
}

ordered_json TfConfig(const ordered_json& job, const TfTask& task, const ordered_json& cluster) {
  ordered_json config = ordered_json::object();
  config["job"] = job;
  ordered_json t = ordered_json::object();
  t["type"] = task.type;
  t["index"] = task.index;
  if (!task.cloud.empty()) t["cloud"] = task.cloud;
  if (!task.trial.empty()) t["trial"] = task.trial;
  config["task"] = std::move(t);
  config["cluster"] = cluster;
  config["environment"] = "cloud";
  return config;
}

std::vector<std::pair<std::string, std::string>> TorchDistributedEnv(bool primary,
                                                                     int64_t worker_index,
                                                                     int64_t workers,
                                                                     const std::string& master_addr,
                                                                     int master_port) {
  if (!primary && worker_index < 0) return {};
  const int64_t rank = primary ? 0 : worker_index + 1;
  return {{"MASTER_ADDR", master_addr},
          {"MASTER_PORT", std::to_string(master_port)},
          {"WORLD_SIZE", std::to_string(1 + workers)},
          {"RANK", std::to_string(rank)},
          {"LOCAL_RANK", "0"}};
}

json SnakeKeys(const json& j) {
  if (j.is_object()) {
    json out = json::object();
    for (const auto& [k, v] : j.items()) out[SnakeCase(k)] = SnakeKeys(v);
    return out;
  }
  if (j.is_array()) {
    json out = json::array();
    for (const auto& v : j) out.push_back(SnakeKeys(v));
    return out;
  }
  return j;
}

RunEnvironment::RunEnvironment(RunPlan run) : run_(std::move(run)) {
  tf_cluster_ = TfCluster(run_.tasks, run_.primary);
  cluster_spec_cluster_ = ClusterSpecCluster(run_.tasks);
  if (!run_.training_input.is_object()) run_.training_input = json::object();
  job_ = run_.training_input;
  // Compact: a container's environment goes through a line-based env file.
  snake_job_ = SnakeKeys(run_.training_input).dump(-1, ' ', false, kReplace);
  for (const Task& t : run_.tasks) {
    if (t.type == "worker") ++workers_;
    if (t.type == "master") std::tie(master_host_, master_port_) = SplitAddress(t.address);
  }
}

std::map<std::string, std::string> RunEnvironment::ForTask(size_t i, const std::vector<int>& gpus,
                                                           bool container) const {
  const Task& self = run_.tasks.at(i);
  std::map<std::string, std::string> env;
  TfTask task{self.type == "master" ? run_.primary : self.type, self.index,
              "trainyard-" + run_.job_id, run_.trial_id};
  // Custom containers see the TrainingInput with the proto's snake_case names: as a JSON string
  // in TF_CONFIG/CLUSTER_SPEC's "job" and in CLOUD_ML_JOB (compat §6.1, §6.3).
  const ordered_json job = container ? ordered_json(snake_job_) : job_;
  env["TF_CONFIG"] = Dump(TfConfig(job, task, tf_cluster_), JsonStyle::kCompact);
  if (container) {
    TfTask spec_task{self.type, self.index, "", run_.trial_id};
    ordered_json cs = TfConfig(job, spec_task, cluster_spec_cluster_);
    env["CLUSTER_SPEC"] = Dump(cs, JsonStyle::kCompact);
    env["CLOUD_ML_JOB"] = snake_job_;
  }
  env["CLOUD_ML_JOB_ID"] = run_.job_id;
  env["CLOUD_ML_PROJECT_ID"] = run_.project;
  if (!run_.trial_id.empty()) {
    env["CLOUD_ML_TRIAL_ID"] = run_.trial_id;
    env["CLOUD_ML_HP_METRIC_TAG"] = run_.metric_tag;
  }
  // Containers share the host's network, so the master's address reaches it there too.
  for (auto& [name, value] :
       TorchDistributedEnv(self.type == "master", self.type == "worker" ? self.index : -1, workers_,
                           master_host_, master_port_)) {
    env[name] = std::move(value);
  }
  // Every replica gets the GPUs given to it and no others ("" hides them all).
  std::string visible;
  for (size_t g = 0; g < gpus.size(); ++g) {
    visible +=
        (visible.empty() ? "" : ",") + std::to_string(container ? static_cast<int>(g) : gpus[g]);
  }
  env["CUDA_VISIBLE_DEVICES"] = visible;
  // Indices are nvidia-smi's, which count in PCI bus order; CUDA's default order differs.
  env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  return env;
}

std::string RunPlanToJson(const RunPlan& plan) {
  json tasks = json::array();
  for (const Task& t : plan.tasks) {
    tasks.push_back({{"type", t.type}, {"index", t.index}, {"address", t.address}});
  }
  json j = {{"tasks", tasks},
            {"primary", plan.primary},
            {"project", plan.project},
            {"jobId", plan.job_id},
            {"trialId", plan.trial_id},
            {"metricTag", plan.metric_tag},
            {"trainingInput", plan.training_input}};
  return j.dump(-1, ' ', false, kReplace);
}

bool RunPlanFromJson(const std::string& text, RunPlan* plan, std::string* error) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    *error = "the run plan is not a JSON object";
    return false;
  }
  RunPlan out;
  auto str = [&](const char* name, std::string* dst) {
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) return true;
    if (!it->is_string()) {
      *error = std::string("run plan field ") + name + " is not a string";
      return false;
    }
    *dst = it->get<std::string>();
    return true;
  };
  if (!str("primary", &out.primary) || !str("project", &out.project) ||
      !str("jobId", &out.job_id) || !str("trialId", &out.trial_id) ||
      !str("metricTag", &out.metric_tag)) {
    return false;
  }
  if (auto it = j.find("trainingInput"); it != j.end() && it->is_object()) {
    out.training_input = *it;
  }
  auto tasks = j.find("tasks");
  if (tasks == j.end() || !tasks->is_array()) {
    *error = "run plan field tasks is not an array";
    return false;
  }
  for (const json& t : *tasks) {
    if (!t.is_object() || !t.contains("type") || !t["type"].is_string() || !t.contains("index") ||
        !t["index"].is_number_integer()) {
      *error = "run plan task " + std::to_string(out.tasks.size()) + " needs a type and an index";
      return false;
    }
    Task task;
    task.type = t["type"].get<std::string>();
    task.index = t["index"].get<int64_t>();
    if (auto a = t.find("address"); a != t.end() && a->is_string()) task.address = *a;
    out.tasks.push_back(std::move(task));
  }
  *plan = std::move(out);
  return true;
}

}  // namespace trainyard::cluster_env
