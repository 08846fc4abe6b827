// The Job resource as value types. No I/O, no JSON library in this header.
//
// A Job keeps its TrainingInput twice: `training_input_json` is the canonical JSON the API
// returns (camelCase keys, int64 as strings, defaults such as BASIC omitted), and `spec` is the
// typed view of the fields the scheduler and executor act on. Both are produced together by
// ParseJobForCreate (job_json.h) and never drift apart.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/time.h"

namespace trainyard::model {

// google.cloud.ml.v1.Job.State, with the service's numbering.
enum class JobState {
  kStateUnspecified = 0,
  kQueued = 1,
  kPreparing = 2,
  kRunning = 3,
  kSucceeded = 4,
  kFailed = 5,
  kCancelling = 6,
  kCancelled = 7,
};

const char* JobStateName(JobState s);  // "QUEUED", ...
std::optional<JobState> ParseJobState(std::string_view name);
bool IsTerminal(JobState s);  // SUCCEEDED, FAILED, CANCELLED

// Typed view of the TrainingInput fields Trainyard acts on.
struct Scheduling {
  std::optional<Duration> max_running_time;  // unset = default (7 days)
  std::optional<Duration> max_wait_time;     // unset = no limit
  int32_t priority = 0;                      // [0, 1000]
};

// acceleratorConfig of one replica role (compat §2); count 0 = none.
struct AcceleratorSpec {
  std::string type;  // AcceleratorType enum name, e.g. "NVIDIA_TESLA_T4"
  int64_t count = 0;
};

// One replica role of TrainingInput: masterType/masterConfig, workerType/workerCount/workerConfig,
// and so on. Values are as the user gave them (no tier defaults applied; see machine_types.h).
struct ReplicaRoleSpec {
  std::string machine_type;  // "*Type"; "" = unset
  int64_t count = 0;         // "*Count"; the master's is always 1 (not stored here)
  AcceleratorSpec accelerator;
  std::string image_uri;  // "*Config.imageUri" as given ("" = unset; workers inherit the master's)
  std::vector<std::string> container_command;
  std::vector<std::string> container_args;
};

struct TrainingSpec {
  std::string scale_tier = "BASIC";  // enum name
  ReplicaRoleSpec master;            // count unused
  ReplicaRoleSpec worker;
  ReplicaRoleSpec parameter_server;
  ReplicaRoleSpec evaluator;
  bool use_chief_in_tf_config = false;
  std::vector<std::string> package_uris;
  std::string python_module;
  std::vector<std::string> args;
  std::string region;
  std::string job_dir;
  std::string runtime_version;
  std::string python_version;
  Scheduling scheduling;
  bool has_hyperparameters = false;
};

struct Job {
  std::string project;
  std::string job_id;
  // Monotonic creation sequence assigned by the store (orders lists, newest first).
  int64_t seq = 0;
  JobState state = JobState::kQueued;
  std::string training_input_json;  // canonical JSON object text
  TrainingSpec spec;
  std::map<std::string, std::string> labels;
  std::string etag;  // base64 of 8 bytes
  Timestamp create_time = 0;
  Timestamp start_time = 0;  // 0 = unset
  Timestamp end_time = 0;    // 0 = unset
  std::string error_message;
  double consumed_ml_units = 0;
  bool consumed_ml_units_set = false;  // trainingOutput.consumedMLUnits present
  // Extra TrainingOutput JSON object text (trials etc., later issues); "" = none.
  std::string training_output_json;
  int64_t job_position = 0;  // meaningful while QUEUED (not stored)
  // Trainyard extensions, live and not stored (docs/compatibility.md "Trainyard extensions"):
  // why a QUEUED job (or a PREPARING one a cluster keeps waiting) has not started, and what an
  // admitted job holds.
  std::string wait_reason;
  struct Allocation {
    bool set = false;
    int64_t cpu_millis = 0;
    int64_t memory_bytes = 0;
    int gpus = 0;
    std::vector<int> gpu_indices;  // on this node (none under a cluster backend)
  };
  Allocation allocation;

  std::string Name() const { return "projects/" + project + "/jobs/" + job_id; }
};

// One stored log line of a job (Cloud Logging entry shape, see compat §11).
enum class Severity {
  kDefault = 0,
  kDebug = 100,
  kInfo = 200,
  kNotice = 300,
  kWarning = 400,
  kError = 500,
  kCritical = 600,
  kAlert = 700,
  kEmergency = 800
};
const char* SeverityName(Severity s);  // "INFO", ...
std::optional<Severity> ParseSeverity(std::string_view name);

struct LogEntry {
  int64_t insert_id = 0;  // assigned by the store, strictly increasing over all jobs
  std::string project;
  std::string job_id;
  Timestamp timestamp = 0;
  Severity severity = Severity::kInfo;
  std::string task_name;  // "master-replica-0", "service"
  std::string trial_id;   // "" outside tuning
  std::string message;
  // Where a replica's line was read: the byte offset just past it in the log file of the
  // replica's attempt `source_attempt`. The store keeps the furthest point it stored per replica
  // and drops a line delivered again from before it (the daemon killed after the store
  // committed lines but before the executor recorded how far it had read). 0: not read from a
  // replica's log file (service lines), never dropped.
  int64_t source_offset = 0;
  int source_attempt = 0;
};

}  // namespace trainyard::model
