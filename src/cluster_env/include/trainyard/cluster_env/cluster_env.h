// The cluster environment of a replica: from a run's plan (its tasks and their addresses) to the
// variables a trainer reads: TF_CONFIG, CLUSTER_SPEC and CLOUD_ML_JOB (custom containers),
// CLOUD_ML_*, torch.distributed's env:// variables and CUDA's. compat §6.
//
// A pure library: no I/O, no clock, no threads, no daemon state. It depends on nothing but the
// JSON library, so the same rules serve the scheduler (every replica it launches), `trainyard
// local train` (gcloud's local cluster) and, later, the launcher on a compute node that learns
// its peers' addresses only there (Slurm).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace trainyard::cluster_env {

// One task of a run's cluster with the address its peers reach it at.
struct Task {
  std::string type;  // AI Platform's name: "master", "worker", "ps" or "evaluator"
  int64_t index = 0;
  std::string address;  // "host:port"
};

// How JSON values are written. kCompact: the daemon's form (no spaces, object keys sorted,
// non-ASCII kept as UTF-8). kPython: Python's json.dumps with its defaults (", " and ": ",
// insertion order, non-ASCII escaped as \uXXXX), which gcloud's `local train` produces.
enum class JsonStyle { kCompact, kPython };

std::string Dump(const nlohmann::ordered_json& value, JsonStyle style);

// TF_CONFIG's "cluster" (compat §6.1): the addresses of each task type in task order, the
// master listed under `primary` ("master" or "chief"), evaluators never. The `always_listed`
// types come first, in that order, as [] when they have no task (gcloud's local cluster always
// lists "ps" and "worker"); the others follow in the order of their first task.
nlohmann::ordered_json TfCluster(const std::vector<Task>& tasks, const std::string& primary,
                                 const std::vector<std::string>& always_listed = {});

// CLUSTER_SPEC's "cluster" (custom containers, compat §6.2): always "master", evaluators included.
nlohmann::ordered_json ClusterSpecCluster(const std::vector<Task>& tasks);

// The TF_CONFIG object of one task with its keys in gcloud's order
// {"job", "task": {"type", "index"[, "cloud"][, "trial"]}, "cluster", "environment": "cloud"}
// (kCompact output sorts them anyway).
struct TfTask {
  std::string type;  // as TF_CONFIG names it (the primary already renamed)
  int64_t index = 0;
  std::string cloud;  // task.cloud, "" = absent
  std::string trial;  // task.trial, "" = absent (compat §6.3: the trial number as a string)
};
nlohmann::ordered_json TfConfig(const nlohmann::ordered_json& job, const TfTask& task,
                                const nlohmann::ordered_json& cluster);

// Every variable TorchDistributedEnv may set (a caller that must clear them for replicas
// outside the world uses this list).
inline constexpr std::array<const char*, 5> kTorchEnvNames = {"MASTER_ADDR", "MASTER_PORT",
                                                              "WORLD_SIZE", "RANK", "LOCAL_RANK"};

// torch.distributed's env:// rendezvous as Trainyard gives it (issue 4): the world is the
// primary (rank 0, which hosts the store) and the workers (ranks 1..N); parameter servers and
// evaluators are outside it and get nothing. `primary` is the master (or chief), else
// `worker_index` >= 0 names a worker. Each replica stands for its own machine, so LOCAL_RANK is
// 0; the primary listens on `master_addr`:`master_port`.
std::vector<std::pair<std::string, std::string>> TorchDistributedEnv(bool primary,
                                                                     int64_t worker_index,
                                                                     int64_t workers,
                                                                     const std::string& master_addr,
                                                                     int master_port);

// workerCount -> worker_count, recursively (the proto field names CLOUD_ML_JOB uses, compat
// §6.3).
nlohmann::json SnakeKeys(const nlohmann::json& value);

// Everything a run's replicas share.
struct RunPlan {
  std::vector<Task> tasks;  // every replica of the run (a job's, or one trial's), cluster order
  // TF_CONFIG's name for the master: "master" or "chief" (runtime 2.1+, compat §6.1; containers
  // say "master" unless the job sets useChiefInTfConfig).
  std::string primary = "master";
  std::string project;
  std::string job_id;
  std::string trial_id;    // "" outside hyperparameter tuning
  std::string metric_tag;  // hyperparameterMetricTag of a tuning job's trial
  // The TrainingInput as the user sent it (camelCase); discarded or non-object = {}.
  nlohmann::json training_input;
};

// A RunPlan as JSON text and back (the Slurm driver receives the plan of its run in a file and
// fills in the addresses the replicas report). Parsing names the first bad field.
std::string RunPlanToJson(const RunPlan& plan);
bool RunPlanFromJson(const std::string& text, RunPlan* plan, std::string* error);

// Builds the environment of each replica of one run; the shared parts are computed once.
class RunEnvironment {
 public:
  explicit RunEnvironment(RunPlan run);

  // The variables of task `i` of the run: TF_CONFIG, CLOUD_ML_JOB_ID, CLOUD_ML_PROJECT_ID, the
  // trial's CLOUD_ML_TRIAL_ID and CLOUD_ML_HP_METRIC_TAG, torch's variables (primary and
  // workers), CUDA_VISIBLE_DEVICES (`gpus`, the host's indices; renumbered from 0 inside a
  // container, which sees only its own devices) and CUDA_DEVICE_ORDER=PCI_BUS_ID. A container
  // replica's TF_CONFIG carries the job as a snake_case JSON string, and it also gets
  // CLUSTER_SPEC and CLOUD_ML_JOB (compat §6.2, §6.3).
  std::map<std::string, std::string> ForTask(size_t i, const std::vector<int>& gpus,
                                             bool container) const;

  const RunPlan& run() const { return run_; }

 private:
  RunPlan run_;
  nlohmann::ordered_json tf_cluster_;
  nlohmann::ordered_json cluster_spec_cluster_;
  nlohmann::ordered_json job_;  // the TrainingInput object
  std::string snake_job_;       // the same with snake_case keys, compact JSON
  std::string master_host_;
  int master_port_ = 0;
  int64_t workers_ = 0;
};

}  // namespace trainyard::cluster_env
