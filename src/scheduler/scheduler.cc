#include "trainyard/scheduler/scheduler.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "trainyard/core/log.h"
#include "trainyard/core/util.h"
#include "trainyard/executor/launcher_protocol.h"
#include "trainyard/model/machine_types.h"
#include "trainyard/model/state_machine.h"
#include "trainyard/model/torch_env.h"
#include "tuning_state.h"

namespace trainyard::scheduler {

using model::Job;
using model::JobState;
using nlohmann::json;

namespace {

constexpr const char* kLog = "sched";
// In a replica's work dir: how often the replica was restarted (see MaybeRestartLocked).
constexpr const char* kRestartsFile = "restarts";

bool ListMatches(const std::vector<std::string>& patterns, const std::string& value) {
  for (const auto& p : patterns) {
    if (p == "*" || p == value) return true;
    if (EndsWith(p, "*") && StartsWith(value, p.substr(0, p.size() - 1))) return true;
  }
  return false;
}

// `n` distinct ports free on this host right now. The kernel picks them; every socket stays
// bound until all are picked, so no port is handed out twice.
std::vector<int> PickFreePorts(size_t n) {
  std::vector<int> ports;
  std::vector<int> fds;
  for (size_t i = 0; i < n; ++i) {
    int port = 0;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = 0;
      socklen_t len = sizeof addr;
      if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
          ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
        port = ntohs(addr.sin_port);
      }
      fds.push_back(fd);
    }
    // Out of sockets: fall back to AI Platform's port, distinct per task.
    ports.push_back(port != 0 ? port : 2222 + static_cast<int>(i));
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

// Runtime 2.1 and later name the primary "chief" (compat §6.1); 1.x and unset say "master".
std::string PrimaryTaskName(const std::string& runtime_version) {
  if (runtime_version.empty()) return "master";
  auto parts = Split(runtime_version, '.');
  try {
    int major = std::stoi(parts[0]);
    int minor = parts.size() > 1 ? std::stoi(parts[1]) : 0;
    if (major > 2 || (major == 2 && minor >= 1)) return "chief";
  } catch (...) {
  }
  return "master";
}

// The ReplicaConfig of a task type, and where its fields are in the TrainingInput.
const model::ReplicaRoleSpec& RoleOf(const model::TrainingSpec& spec, const std::string& type) {
  if (type == "worker") return spec.worker;
  if (type == "ps") return spec.parameter_server;
  if (type == "evaluator") return spec.evaluator;
  return spec.master;
}

const char* ConfigFieldOf(const std::string& type) {
  if (type == "worker") return "workerConfig";
  if (type == "ps") return "parameterServerConfig";
  if (type == "evaluator") return "evaluatorConfig";
  return "masterConfig";
}

// The image a replica runs ("" = it runs the Python trainer): its own imageUri, else the
// master's (compat §2: every *Config.imageUri defaults to masterConfig.imageUri).
const std::string& ImageOf(const model::TrainingSpec& spec, const std::string& type) {
  const std::string& own = RoleOf(spec, type).image_uri;
  return own.empty() ? spec.master.image_uri : own;
}

// workerCount -> worker_count (the proto field names CLOUD_ML_JOB uses, compat §6.3).
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

// A container name unique per replica that docker and podman accept ([a-z0-9_.-], starting
// with a letter).
// Unique per replica and per daemon: job ids are case-sensitive (names keep their case), and a
// short hash of the daemon's jobs dir keeps two daemons of one user apart (`run --replace`
// would otherwise remove the other's container).
std::string ContainerName(const executor::ReplicaKey& key, const std::string& jobs_dir) {
  char tag[9];
  std::snprintf(tag, sizeof tag, "%08x",
                static_cast<unsigned>(std::hash<std::string>{}(jobs_dir)&0xffffffffu));
  std::string name = "trainyard-" + key.project + "-" + key.job_id +
                     (key.trial_id.empty() ? "" : "-" + key.trial_id) + "-" + key.TaskName() + "-" +
                     tag;
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) c = '-';
  }
  return name;
}

// The host GPUs of a container replica, from its /dev/nvidia<N> devices (its
// CUDA_VISIBLE_DEVICES is renumbered from 0 inside the container).
std::vector<int> ContainerGpus(const executor::ContainerSpec& c) {
  std::vector<int> gpus;
  for (const auto& dev : c.devices) {
    constexpr std::string_view kPrefix = "/dev/nvidia";
    if (!StartsWith(dev, kPrefix) || dev.size() == kPrefix.size()) continue;
    const std::string n = dev.substr(kPrefix.size());
    if (std::all_of(n.begin(), n.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      gpus.push_back(std::atoi(n.c_str()));
    }
  }
  return gpus;
}

std::string ReplicaMessageName(const executor::ReplicaKey& key) {
  return key.task_type + " " + std::to_string(key.index);
}

int ExitStatusOf(const executor::ReplicaExit& e) {
  return e.signal != 0 ? 128 + e.signal : e.exit_code;
}

// Only a trainer that ran and exited 0 succeeded (an install phase ended by a signal may
// report status 0).
bool ExitedCleanly(const executor::ReplicaExit& e) {
  return e.phase == "run" && e.exit_code == 0 && e.signal == 0;
}

// AI Platform's words for a replica that failed (compat §12).
std::string FailureMessage(const executor::ReplicaKey& key, const executor::ReplicaExit& e) {
  std::string who = "The replica " + ReplicaMessageName(key);
  if (e.phase == "launch") {
    return who + " could not be started: " + e.message;
  }
  if (e.phase == "lost") {
    return who + " was lost: " + e.message;
  }
  if (e.oom_killed) {
    return who + " ran out-of-memory and exited with a non-zero status of " +
           std::to_string(ExitStatusOf(e)) + ".";
  }
  std::string msg = who + " exited with a non-zero status of " + std::to_string(ExitStatusOf(e)) +
                    ". Termination reason: " + (e.signal == SIGKILL ? "Killed" : "Error") + ".";
  if (e.phase == "install") {
    msg += " Failed to install the training packages: " + e.message;
  } else if (!e.error_tail.empty()) {
    msg += " " + e.error_tail;
  }
  return msg;
}

}  // namespace

Scheduler::Scheduler(SchedulerOptions options, store::JobStore& store, executor::Executor& executor,
                     storage::BucketStore& buckets)
    : options_(std::move(options)),
      store_(store),
      executor_(executor),
      buckets_(buckets),
      paused_(options_.admission_paused),
      pool_(options_.node, options_.exact_gpu_type) {}

Scheduler::~Scheduler() { Stop(); }

Scheduler::ActiveJob::ActiveJob() = default;
Scheduler::ActiveJob::ActiveJob(ActiveJob&&) noexcept = default;
Scheduler::ActiveJob& Scheduler::ActiveJob::operator=(ActiveJob&&) noexcept = default;
Scheduler::ActiveJob::~ActiveJob() = default;

std::vector<Scheduler::Replica> Scheduler::PlanReplicas(const Job& job) {
  std::vector<Replica> out;
  for (const model::ReplicaGroup& g : model::PlanCluster(job.spec)) {
    for (int i = 0; i < g.count; ++i) {
      Replica r;
      r.key = executor::ReplicaKey{job.project, job.job_id, "", g.task_type, i};
      r.demand.cpu_millis = int64_t{g.vcpus} * 1000;
      r.demand.memory_bytes = g.memory_bytes;
      r.demand.gpus = g.gpu_count;
      if (g.gpu_count > 0) r.demand.gpu_type = g.gpu_type;
      r.ml_units_per_hour = g.ml_units_per_hour;
      out.push_back(std::move(r));
    }
  }
  return out;
}

JobDemand Scheduler::DemandOf(const std::vector<Replica>& replicas) {
  std::vector<ReplicaDemand> demands;
  demands.reserve(replicas.size());
  for (const auto& r : replicas) demands.push_back(r.demand);
  return JobDemand::Sum(demands);
}

Status Scheduler::Start() {
  TRAINYARD_ASSIGN_OR_RETURN(auto jobs, store_.ListActiveJobs());
  std::vector<std::string> dirs;
  int requeued = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& job : jobs) {
      JobKey k{job.project, job.job_id};
      ActiveJob aj;
      aj.job = std::move(job);
      if (aj.job.spec.has_hyperparameters && aj.job.state != JobState::kQueued) {
        // The replicas of its running trials, planned from the stored trials.
        if (Status st = InitTuningLocked(aj, /*recovering=*/true); !st.ok()) {
          TY_LOG_ERROR(kLog, "job {}: cannot rebuild its study: {}", aj.job.job_id, st.ToString());
          aj.job.error_message =
              "The hyperparameter tuning study could not be rebuilt after a restart: " +
              st.message();
        }
      } else {
        aj.replicas = PlanReplicas(aj.job);
      }
      if (aj.job.state == JobState::kCancelling) aj.cancel_reason = aj.job.error_message;
      // A replica was launched when its spec was written (the executor writes it first).
      bool any_launched = false;
      for (auto& r : aj.replicas) {
        r.launched = aj.job.state != JobState::kQueued &&
                     ::access((WorkDir(r.key) + "/spec.json").c_str(), F_OK) == 0;
        any_launched = any_launched || r.launched;
      }
      if (aj.job.state == JobState::kPreparing && !any_launched) {
        aj.job.training_output_json.clear();  // its trials never started
        aj.replicas.clear();
        aj.tuning.reset();
        // Admitted but never started before the daemon stopped: queue it again.
        aj.job.start_time = 0;
        if (TransitionLocked(aj, JobState::kQueued, "requeued after a daemon restart").ok()) {
          ++requeued;
        }
      }
      if (aj.job.state == JobState::kQueued) {
        EnqueueLocked(aj.job);
        continue;
      }
      if (aj.job.state == JobState::kRunning || aj.job.spec.scheduling.max_wait_time) {
        timed_.insert(k);
      }
      if (aj.job.state == JobState::kRunning) {
        // maxRunningTime counts from entering RUNNING (compat §2), not from admission.
        aj.running_since = aj.job.start_time;
        if (auto history = store_.GetStateHistory(aj.job.project, aj.job.job_id); history.ok()) {
          for (const auto& change : *history) {
            if (change.to == JobState::kRunning) aj.running_since = change.time;
          }
        }
      }
      std::map<std::string, std::pair<std::vector<ReplicaDemand>, std::vector<std::vector<int>>>>
          held;  // by owner: the job, or each running trial
      for (auto& r : aj.replicas) {
        r.running = aj.job.state == JobState::kRunning;
        if (r.launched) {
          dirs.push_back(WorkDir(r.key));
          // The spec as launched: restarts reuse it, and it names the replica's GPUs.
          if (auto text = ReadFile(WorkDir(r.key) + "/" + executor::kSpecFile); text.ok()) {
            if (auto spec = executor::SpecFromJson(*text); spec.ok()) {
              r.spec = std::move(spec).value();
              if (auto n = ReadFile(WorkDir(r.key) + "/" + kRestartsFile); n.ok()) {
                r.restarts = std::atoi(n->c_str());
              }
              auto env = r.spec.env.find("CUDA_VISIBLE_DEVICES");
              if (!r.spec.container.image.empty()) {
                r.gpus = ContainerGpus(r.spec.container);
              } else if (env != r.spec.env.end()) {
                for (const auto& part : Split(env->second, ',')) {
                  try {
                    if (!part.empty()) r.gpus.push_back(std::stoi(part));
                  } catch (...) {
                  }
                }
              }
            }
          }
        } else {
          r.exited = true;
          r.exit.phase = "lost";
          r.exit.exit_code = -1;
          r.exit.message = "the Trainyard daemon stopped before it was started";
        }
        auto& h = held[r.key.trial_id.empty() ? Owner(aj.job)
                                              : TrialOwner(aj.job, std::stoll(r.key.trial_id))];
        h.first.push_back(r.demand);
        h.second.push_back(r.gpus);
      }
      for (const auto& [owner, h] : held) pool_.Restore(owner, h.first, h.second);
      if (aj.tuning) tuning_jobs_.insert(k);
      if (aj.job.state == JobState::kRunning || aj.job.state == JobState::kCancelling) {
        aj.units_accrued_at = NowMicros();  // time the daemon was down is not counted
        aj.units_persisted_at = aj.units_accrued_at;
      }
      active_.emplace(k, std::move(aj));
    }
  }
  TY_LOG_INFO(kLog, "recovered {} unfinished jobs ({} requeued, {} replica dirs to re-attach)",
              jobs.size(), requeued, dirs.size());
  // Outside the lock: replicas whose launcher is gone are reported through OnReplicaExit.
  auto attached = executor_.Recover(dirs);
  for (const auto& key : attached) {
    TY_LOG_INFO(kLog, "re-attached to {} of job {}", key.TaskName(), key.job_id);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = active_.begin(); it != active_.end();) {
      ActiveJob& aj = it->second;
      // A cancel stored before the crash may not have reached the replicas: send it again.
      if (!aj.cancel_reason.empty()) {
        for (auto& r : aj.replicas) {
          StopReplicaLocked(r, options_.cancel_grace);
        }
      }
      if (aj.tuning) {
        // Trials the median rule stopped before the restart: the stop may not have arrived.
        for (auto& r : aj.replicas) {
          if (TrialEndingLocked(aj, r)) StopReplicaLocked(r, options_.cancel_grace);
        }
      } else if (aj.job.spec.has_hyperparameters && aj.job.state != JobState::kQueued) {
        FinishLocked(aj, JobState::kFailed, aj.job.error_message);
      }
      MaybeFinishLocked(aj);
      if (model::IsTerminal(aj.job.state)) {
        it = active_.erase(it);
      } else {
        ++it;
      }
    }
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  FlushServiceLogsLocked();
}

const RuntimeOptions* Scheduler::FindRuntime(const model::TrainingSpec& spec) const {
  for (const auto& rt : options_.runtimes) {
    if (ListMatches(rt.runtime_versions, spec.runtime_version) &&
        ListMatches(rt.python_versions, spec.python_version))
      return &rt;
  }
  return nullptr;
}

Status Scheduler::CheckRunnable(const Job& job) const {
  Status st = InvalidArgument("The job cannot run on this Trainyard");
  bool bad = false;
  if (job.spec.master.image_uri.empty() && FindRuntime(job.spec) == nullptr) {
    bad = true;
    st.AddViolation("trainingInput.runtimeVersion",
                    "no configured runtime serves runtimeVersion \"" + job.spec.runtime_version +
                        "\" with pythonVersion \"" + job.spec.python_version + "\"");
  }
  const auto replicas = PlanReplicas(job);
  if (options_.container_engine.empty()) {
    for (const auto& r : replicas) {
      const std::string& type = r.key.task_type;
      if (ImageOf(job.spec, type).empty()) continue;
      // The field the image came from: the role's own imageUri or the master's it inherits.
      const char* config =
          RoleOf(job.spec, type).image_uri.empty() ? "masterConfig" : ConfigFieldOf(type);
      bad = true;
      st.AddViolation(std::string("trainingInput.") + config + ".imageUri",
                      "custom containers need podman or docker on this machine (setting "
                      "container_engine)");
      break;
    }
  }
  for (size_t i = 0; i < job.spec.package_uris.size(); ++i) {
    const auto& uri = job.spec.package_uris[i];
    auto path = buckets_.LocalPathForUri(uri);
    std::string field = "trainingInput.packageUris[" + std::to_string(i) + "]";
    if (!path.ok()) {
      bad = true;
      st.AddViolation(field, path.status().message());
    } else if (::access(path->c_str(), R_OK) != 0) {
      bad = true;
      st.AddViolation(field, "package " + uri + " does not exist");
    }
  }
  if (!job.spec.job_dir.empty()) {
    Status jd = buckets_.ValidateJobDir(job.spec.job_dir);
    if (!jd.ok()) {
      bad = true;
      st.AddViolation("trainingInput.jobDir", jd.message());
    }
  }
  // A job that could never fit on this node is refused now rather than queued forever.
  const JobDemand demand = DemandOf(replicas);
  if (std::string never = pool_.NeverFits(demand); !never.empty()) {
    bad = true;
    std::string field = "trainingInput.scaleTier";
    const auto& spec = job.spec;
    const bool wants_gpus = demand.gpus > 0;
    struct RoleField {
      const model::ReplicaRoleSpec* role;
      const char* type;
      const char* config;
      const char* count;
    };
    const RoleField roles[] = {
        {&spec.master, "masterType", "masterConfig", nullptr},
        {&spec.worker, "workerType", "workerConfig", "workerCount"},
        {&spec.parameter_server, "parameterServerType", "parameterServerConfig",
         "parameterServerCount"},
        {&spec.evaluator, "evaluatorType", "evaluatorConfig", "evaluatorCount"}};
    if (spec.scale_tier == "CUSTOM") {
      field = "trainingInput.masterType";
      for (const auto& rf : roles) {
        if (wants_gpus) {
          if (rf.role->accelerator.count > 0) {
            field = std::string("trainingInput.") + rf.config + ".acceleratorConfig.count";
            break;
          }
          const auto* mt = model::FindMachineType(rf.role->machine_type);
          if (mt != nullptr && mt->gpu_count > 0) {
            field = std::string("trainingInput.") + rf.type;
            break;
          }
        } else if (rf.count != nullptr && rf.role->count > 0) {
          field = std::string("trainingInput.") + rf.count;  // the largest lever
          break;
        }
      }
    }
    st.AddViolation(field, "the job can never run on this Trainyard: " + never);
  }
  if (job.spec.has_hyperparameters) {
    const json ti = json::parse(job.training_input_json, nullptr, false);
    const json hp = ti.is_object() ? ti.value("hyperparameters", json::object()) : json::object();
    const std::string resume = hp.value("resumePreviousJobId", "");
    if (!resume.empty()) {
      const std::string field = "trainingInput.hyperparameters.resumePreviousJobId";
      auto prev = store_.GetJob(job.project, resume);
      std::string why;
      if (!prev.ok()) {
        why = prev.status().code() == StatusCode::kNotFound
                  ? "job \"" + resume + "\" does not exist in project " + job.project
                  : prev.status().message();
      } else if (!prev->spec.has_hyperparameters) {
        why = "job \"" + resume + "\" is not a hyperparameter tuning job";
      } else if (!model::IsTerminal(prev->state)) {
        why = "job \"" + resume + "\" is still " + model::JobStateName(prev->state) +
              "; its study can be resumed once it has ended";
      } else {
        // The same search space: the same parameters, in name and type.
        const json pti = json::parse(prev->training_input_json, nullptr, false);
        auto shape = [](const json& t) {
          std::map<std::string, std::string> m;
          if (!t.is_object() || !t.contains("hyperparameters")) return m;
          for (const auto& p : t["hyperparameters"].value("params", json::array())) {
            m[p.value("parameterName", "")] = p.value("type", "");
          }
          return m;
        };
        if (shape(pti) != shape(ti)) {
          why = "job \"" + resume +
                "\" tuned other parameters; a resumed study must list the same parameterName "
                "and type for every parameter";
        }
      }
      if (!why.empty()) {
        bad = true;
        st.AddViolation(field, why);
      }
    }
  }
  if (!bad) return Status::Ok();
  if (st.violations().size() == 1) {
    return Status(StatusCode::kInvalidArgument,
                  st.violations()[0].field + ": " + st.violations()[0].description)
        .AddViolation(st.violations()[0].field, st.violations()[0].description);
  }
  return st;
}

Result<Job> Scheduler::Submit(Job job) {
  job.state = JobState::kQueued;
  job.create_time = NowMicros();
  job.etag = RandomEtag();
  std::lock_guard<std::mutex> lock(mu_);
  TRAINYARD_ASSIGN_OR_RETURN(job.seq, store_.CreateJob(job));
  ServiceLogLocked(job, model::Severity::kInfo, "Validating job requirements...");
  ServiceLogLocked(job, model::Severity::kInfo,
                   "Job creation request has been successfully validated.");
  ServiceLogLocked(job, model::Severity::kInfo, "Job " + job.job_id + " is queued.");
  EnqueueLocked(job);
  job.job_position = QueuePositionLocked(job);
  if (!paused_) cv_.notify_all();
  return job;
}

// Queued jobs live in the store; the scheduler keeps only their queue entry (and a wait
// deadline when they have one), so 100,000 queued jobs cost a few MB here.
void Scheduler::EnqueueLocked(const Job& job) {
  QueueEntry entry{-job.spec.scheduling.priority, job.seq, JobKey{job.project, job.job_id}};
  queue_.insert({entry, DemandOf(PlanReplicas(job))});
  admission_dirty_ = true;
  if (job.spec.scheduling.max_wait_time) {
    wait_deadlines_.insert({job.create_time + *job.spec.scheduling.max_wait_time, entry});
  }
}

bool Scheduler::IsQueuedLocked(const Job& job) const {
  QueueEntry entry{-job.spec.scheduling.priority, job.seq, JobKey{job.project, job.job_id}};
  return queue_.find(entry) != queue_.end();
}

// Cancels a job that is still in the queue: it never ran, so it goes straight through
// CANCELLING to CANCELLED.
Status Scheduler::CancelQueuedLocked(Job job, const std::string& reason) {
  QueueEntry entry{-job.spec.scheduling.priority, job.seq, JobKey{job.project, job.job_id}};
  ActiveJob aj;
  aj.job = std::move(job);
  aj.cancel_reason = reason;
  aj.job.error_message = reason;
  // Leaves the queue only once the store has the cancel: a failed write keeps it queued.
  TRAINYARD_RETURN_IF_ERROR(TransitionLocked(aj, JobState::kCancelling, reason));
  queue_.erase(entry);
  ServiceLogLocked(aj.job, model::Severity::kInfo, reason);
  FinishLocked(aj, JobState::kCancelled, reason);
  if (!model::IsTerminal(aj.job.state)) {
    // CANCELLING is stored but CANCELLED is not: keep it where the deadline pass finishes it.
    active_.emplace(std::get<2>(entry), std::move(aj));
    timed_.insert(std::get<2>(entry));
  }
  return Status::Ok();
}

Status Scheduler::Cancel(const std::string& project, const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find({project, job_id});
  if (it == active_.end()) {
    // Finished jobs are a successful no-op (gcloud's documented behaviour); absent is 404.
    TRAINYARD_ASSIGN_OR_RETURN(auto job, store_.GetJob(project, job_id));
    if (job.state == JobState::kQueued && IsQueuedLocked(job)) {
      return CancelQueuedLocked(std::move(job), "The job was cancelled at the user's request.");
    }
    return Status::Ok();
  }
  RequestCancelLocked(it->second, "The job was cancelled at the user's request.");
  MaybeFinishLocked(it->second);
  if (model::IsTerminal(it->second.job.state)) active_.erase(it);
  cv_.notify_all();
  return Status::Ok();
}

void Scheduler::RequestCancelLocked(ActiveJob& aj, const std::string& reason) {
  if (!aj.cancel_reason.empty()) return;
  aj.cancel_reason = reason;
  aj.job.error_message = reason;
  (void)TransitionLocked(aj, JobState::kCancelling, reason);
  ServiceLogLocked(aj.job, model::Severity::kInfo, reason);
  for (auto& r : aj.replicas) {
    StopReplicaLocked(r, options_.cancel_grace);
  }
}

Result<Job> Scheduler::UpdateLabels(const std::string& project, const std::string& job_id,
                                    const std::map<std::string, std::string>& labels,
                                    const std::string& etag, bool check_etag) {
  std::lock_guard<std::mutex> lock(mu_);
  Job job;
  auto it = active_.find({project, job_id});
  if (it != active_.end()) {
    job = it->second.job;
  } else {
    TRAINYARD_ASSIGN_OR_RETURN(job, store_.GetJob(project, job_id));
  }
  if (check_etag && etag != job.etag) {
    return Status(StatusCode::kAborted,
                  "The etag of the job does not match: the job was modified since it was read "
                  "(got \"" +
                      etag + "\", current \"" + job.etag + "\")")
        .AddViolation("etag", "does not match the current etag");
  }
  job.labels = labels;
  job.etag = RandomEtag();
  TRAINYARD_RETURN_IF_ERROR(store_.UpdateJob(job, std::nullopt));
  if (it != active_.end()) it->second.job = job;
  return job;
}

Result<Job> Scheduler::GetJob(const std::string& project, const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find({project, job_id});
  if (it != active_.end()) return it->second.job;
  TRAINYARD_ASSIGN_OR_RETURN(auto job, store_.GetJob(project, job_id));
  if (job.state == JobState::kQueued) job.job_position = QueuePositionLocked(job);
  return job;
}

void Scheduler::FillLiveFields(std::vector<Job>& jobs) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& job : jobs) {
    auto it = active_.find({job.project, job.job_id});
    if (it != active_.end()) {
      job = it->second.job;
    } else if (job.state == JobState::kQueued) {
      job.job_position = QueuePositionLocked(job);
    }
  }
}

int64_t Scheduler::QueuePositionLocked(const Job& job) const {
  QueueEntry entry{-job.spec.scheduling.priority, job.seq, JobKey{job.project, job.job_id}};
  if (queue_.find(entry) == queue_.end()) return 0;  // 0: already scheduled (compat §1)
  return static_cast<int64_t>(queue_.order_of_key(entry)) + 1;
}

void Scheduler::SetAdmissionPaused(bool paused) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = paused;
    admission_dirty_ = true;
  }
  TY_LOG_INFO(kLog, "admission {}", paused ? "paused" : "resumed");
  cv_.notify_all();
}

bool Scheduler::admission_paused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return paused_;
}

SchedulerStats Scheduler::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SchedulerStats s;
  s.queued = static_cast<int>(queue_.size());
  for (const auto& [k, aj] : active_) {
    switch (aj.job.state) {
      case JobState::kPreparing:
        ++s.preparing;
        break;
      case JobState::kRunning:
        ++s.running;
        break;
      case JobState::kCancelling:
        ++s.cancelling;
        break;
      default:
        break;
    }
  }
  s.running_replicas = executor_.RunningCount();
  s.free_cpu_millis = pool_.free_cpu_millis();
  s.free_memory_bytes = pool_.free_memory_bytes();
  s.free_gpus = pool_.free_gpus();
  s.replica_restarts = restarts_total_;
  return s;
}

void Scheduler::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    bool more = AdmitLocked();
    CheckDeadlinesLocked(NowMicros());
    PollAllMetricsLocked(NowMicros());
    AccrueAllLocked(NowMicros());
    FlushServiceLogsLocked();
    if (more) {
      // Let API calls and executor events in between admission batches.
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
      continue;
    }
    cv_.wait_for(lock, std::chrono::microseconds(options_.tick));
  }
}

// Admits queued jobs in order (priority, then age) when their whole gang fits, at most
// kAdmitBatch per call; returns true when more could be admitted right away.
//
// Order is kept per resource: once a job ahead is short of CPU or memory nothing behind it
// starts (every job needs both), so a big job is not starved by a stream of small ones. A job
// short only of GPUs keeps the GPUs for itself (no job behind it that needs a GPU starts) but
// lets CPU-only jobs behind it run.
bool Scheduler::AdmitLocked() {
  if (paused_ || !admission_dirty_) return false;
  admission_dirty_ = false;
  // A tuning job without a running trial gets its next one first: it was admitted earlier, and
  // holds back the queue as a job short of resources would.
  if (AdmitTrialsLocked(/*first_only=*/true)) return false;
  const bool more = !queue_.empty() && AdmitQueueLocked();
  // Further parallel trials take what is left when nobody waits in the queue.
  if (queue_.empty()) AdmitTrialsLocked(/*first_only=*/false);
  return more;
}

bool Scheduler::AdmitQueueLocked() {
  constexpr int kAdmitBatch = 16;
  bool gpu_blocked = false;
  int admitted = 0;
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (options_.max_running_jobs > 0 &&
        static_cast<int>(active_.size()) >= options_.max_running_jobs) {
      return false;  // a finishing job sets admission_dirty_ again
    }
    const JobDemand& demand = it->second;
    if (gpu_blocked && demand.gpus > 0) {
      ++it;
      continue;
    }
    // A job that can never fit (the node shrank since it was queued) is admitted only to fail.
    const bool never = !pool_.NeverFits(demand).empty();
    if (!never) {
      ResourcePool::Shortage short_of = pool_.Short(demand);
      if (short_of.cpu || short_of.memory) return false;
      if (short_of.gpu) {
        gpu_blocked = true;
        ++it;
        continue;
      }
    }
    if (admitted == kAdmitBatch) {
      admission_dirty_ = true;
      return true;
    }
    const QueueEntry entry = it->first;
    const JobDemand entry_demand = it->second;
    ++it;
    const JobKey key = std::get<2>(entry);
    auto stored = store_.GetJob(key.first, key.second);
    if (!stored.ok()) {
      StatusCode code = stored.status().code();
      TY_LOG_ERROR(kLog, "job {}: cannot load it for admission: {}", key.second,
                   stored.status().ToString());
      if (code == StatusCode::kUnavailable || code == StatusCode::kResourceExhausted ||
          code == StatusCode::kAborted) {
        admission_dirty_ = true;
        return false;  // transient: tried again next pass
      }
      queue_.erase(entry);  // gone or unreadable: it must not block the jobs behind it
      continue;
    }
    queue_.erase(entry);
    if (stored->state != JobState::kQueued) continue;
    ActiveJob candidate;
    candidate.job = std::move(stored).value();
    // A tuning job's replicas are its trials', planned as each trial starts.
    if (!candidate.job.spec.has_hyperparameters) candidate.replicas = PlanReplicas(candidate.job);
    candidate.job.start_time = NowMicros();
    if (!TransitionLocked(candidate, JobState::kPreparing, "admitted").ok()) {
      // The store refused the write: the job stays QUEUED and is tried again next pass.
      queue_.insert({entry, entry_demand});
      admission_dirty_ = true;
      return false;
    }
    auto ait = active_.emplace(key, std::move(candidate)).first;
    ActiveJob& aj = ait->second;
    if (aj.job.spec.scheduling.max_wait_time) {
      wait_deadlines_.erase({aj.job.create_time + *aj.job.spec.scheduling.max_wait_time, entry});
      timed_.insert(key);  // PREPARING still counts against maxWaitTime
    }
    ++admitted;
    if (never) {
      FinishLocked(aj, JobState::kFailed,
                   "The job cannot run on this Trainyard: " + pool_.NeverFits(entry_demand));
      if (model::IsTerminal(aj.job.state)) active_.erase(ait);
      continue;
    }
    if (aj.job.spec.has_hyperparameters) {
      ServiceLogLocked(aj.job, model::Severity::kInfo, "Waiting for job to be provisioned.");
      Status st = InitTuningLocked(aj, /*recovering=*/false);
      if (st.ok()) {
        tuning_jobs_.insert(key);
        StartTrialsLocked(aj, 1);  // more once the queue has had its turn
      } else {
        FinishLocked(aj, JobState::kFailed,
                     "The hyperparameter tuning study could not start: " + st.message());
      }
      MaybeFinishLocked(aj);
      if (model::IsTerminal(aj.job.state)) active_.erase(ait);
      continue;
    }
    std::vector<ReplicaDemand> demands;
    for (const auto& r : aj.replicas) demands.push_back(r.demand);
    auto gpus = pool_.Allocate(Owner(aj.job), demands);
    if (gpus.ok()) {
      for (size_t i = 0; i < aj.replicas.size(); ++i) aj.replicas[i].gpus = (*gpus)[i];
    }
    ServiceLogLocked(aj.job, model::Severity::kInfo, "Waiting for job to be provisioned.");
    Status st = gpus.ok() ? LaunchLocked(aj, "") : gpus.status();
    if (!st.ok()) {
      MarkLaunchFailedLocked(aj, "", st);
      MaybeFinishLocked(aj);
      if (model::IsTerminal(aj.job.state)) active_.erase(ait);
      continue;
    }
    ServiceLogLocked(aj.job, model::Severity::kInfo, "Waiting for training program to start.");
  }
  return false;
}

// The replica that could not start fails its run (the job, or the trial); the ones already
// started are stopped, and the run is finished only once they are gone.
void Scheduler::MarkLaunchFailedLocked(ActiveJob& aj, const std::string& trial_id,
                                       const Status& st) {
  bool first = true;
  for (auto& r : aj.replicas) {
    if (r.launched || r.exited || r.key.trial_id != trial_id) continue;
    r.exited = true;
    r.exit.phase = "launch";
    if (first) {
      r.exit.exit_code = 1;
      r.exit.message = st.message();
      first = false;
    } else {
      r.exit.killed_by_request = true;  // never started: not a failure of its own
    }
  }
}

int Scheduler::RunAdmissionPass() {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t queued = queue_.size();
  admission_dirty_ = true;
  const bool was_paused = paused_;
  paused_ = false;
  AdmitLocked();
  paused_ = was_paused;
  return static_cast<int>(queued - queue_.size());
}

void Scheduler::CheckDeadlinesLocked(Timestamp now) {
  // Queued jobs past their maxWaitTime, earliest deadline first.
  while (!wait_deadlines_.empty() && wait_deadlines_.begin()->first < now) {
    QueueEntry entry = wait_deadlines_.begin()->second;
    wait_deadlines_.erase(wait_deadlines_.begin());
    if (queue_.find(entry) == queue_.end()) continue;  // admitted or cancelled meanwhile
    const JobKey key = std::get<2>(entry);
    auto job = store_.GetJob(key.first, key.second);
    if (!job.ok() && job.status().code() != StatusCode::kNotFound) {
      // The store could not answer: try again at the next pass.
      wait_deadlines_.insert({now + options_.tick, entry});
      break;
    }
    if (!job.ok() || job->state != JobState::kQueued) {
      queue_.erase(entry);
      continue;
    }
    std::string reason =
        "The job was cancelled because it waited longer than "
        "scheduling.maxWaitTime (" +
        FormatDuration(*job->spec.scheduling.max_wait_time) + ") to start running.";
    if (!CancelQueuedLocked(std::move(job).value(), reason).ok()) {
      wait_deadlines_.insert({now + options_.tick, entry});
      break;
    }
  }
  for (auto kit = timed_.begin(); kit != timed_.end();) {
    auto it = active_.find(*kit);
    if (it == active_.end() || model::IsTerminal(it->second.job.state)) {
      kit = timed_.erase(kit);
      continue;
    }
    ++kit;
    ActiveJob& aj = it->second;
    if (!aj.cancel_reason.empty()) {
      // Already cancelling: finish it once its replicas are gone (retries a failed write).
      MaybeFinishLocked(aj);
      if (model::IsTerminal(aj.job.state)) active_.erase(it);
      continue;
    }
    const auto& sched = aj.job.spec.scheduling;
    if ((aj.job.state == JobState::kQueued || aj.job.state == JobState::kPreparing) &&
        sched.max_wait_time && now - aj.job.create_time > *sched.max_wait_time) {
      RequestCancelLocked(aj,
                          "The job was cancelled because it waited longer than "
                          "scheduling.maxWaitTime (" +
                              FormatDuration(*sched.max_wait_time) + ") to start running.");
    } else if (aj.job.state == JobState::kRunning) {
      Duration limit = sched.max_running_time.value_or(options_.default_max_running_time);
      if (aj.running_since > 0 && now - aj.running_since > limit) {
        RequestCancelLocked(aj,
                            "The job was cancelled because it ran longer than "
                            "scheduling.maxRunningTime (" +
                                FormatDuration(limit) + ").");
      }
    } else {
      continue;
    }
    MaybeFinishLocked(aj);
    if (model::IsTerminal(aj.job.state)) active_.erase(it);
  }
}

std::string Scheduler::RunDir(const std::string& project, const std::string& job_id,
                              const std::string& trial_id) const {
  std::string dir = options_.jobs_dir + "/" + project + "/" + job_id;
  if (!trial_id.empty()) dir += "/trial-" + trial_id;
  return dir;
}

std::string Scheduler::WorkDir(const executor::ReplicaKey& key) const {
  return RunDir(key.project, key.job_id, key.trial_id) + "/" + key.TaskName();
}

Status Scheduler::LaunchLocked(ActiveJob& aj, const std::string& trial_id) {
  const Job& job = aj.job;
  // The run to launch: the job's replicas, or one trial's (each trial is its own cluster).
  std::vector<Replica*> run;
  for (auto& r : aj.replicas) {
    if (!r.launched && !r.exited && r.key.trial_id == trial_id) run.push_back(&r);
  }
  if (run.empty()) return Status::Ok();
  const TrialRun* trial = nullptr;
  if (!trial_id.empty() && aj.tuning) {
    auto t = aj.tuning->trials.find(std::stoll(trial_id));
    if (t != aj.tuning->trials.end()) trial = &t->second;
  }
  // Replicas with an image run in a container (custom-container job, compat §2); the others
  // run the Python trainer under a configured runtime.
  std::vector<std::string> images;
  bool any_python = false;
  bool any_container = false;
  for (const Replica* r : run) {
    images.push_back(ImageOf(job.spec, r->key.task_type));
    (images.back().empty() ? any_python : any_container) = true;
  }
  const RuntimeOptions* rt = nullptr;
  if (any_python) {
    rt = FindRuntime(job.spec);
    if (rt == nullptr) return FailedPrecondition("no configured runtime serves this job");
  }
  if (any_container && options_.container_engine.empty()) {
    return FailedPrecondition(
        "custom containers need podman or docker on this machine (setting container_engine)");
  }
  // One cluster map for the whole job, identical on every replica (compat §6.1): every replica
  // but the evaluators, with a port free on this host. The port stays the replica's own across
  // restarts (the spec is reused). Custom containers name the primary "master" unless the job
  // asks for "chief" (useChiefInTfConfig); the runtime version decides for the others.
  const std::string primary = any_container ? (job.spec.use_chief_in_tf_config ? "chief" : "master")
                                            : PrimaryTaskName(job.spec.runtime_version);
  auto tf_type = [&primary](const std::string& t) { return t == "master" ? primary : t; };
  json cluster = json::object();
  // CLUSTER_SPEC (custom containers, compat §6.2): always "master", and evaluators included.
  json cluster_spec_cluster = json::object();
  const std::vector<int> ports = PickFreePorts(run.size());
  int master_port = 0;
  int workers = 0;
  for (size_t i = 0; i < run.size(); ++i) {
    const auto& key = run[i]->key;
    const std::string address = "127.0.0.1:" + std::to_string(ports[i]);
    cluster_spec_cluster[key.task_type].push_back(address);
    if (key.task_type == "worker") ++workers;
    if (key.task_type == "evaluator") continue;  // evaluators are never in TF_CONFIG's cluster
    if (key.task_type == "master") master_port = ports[i];
    cluster[tf_type(key.task_type)].push_back(address);
  }
  const json job_json =
      json::parse(job.training_input_json.empty() ? "{}" : job.training_input_json, nullptr, false);
  // Custom containers see the TrainingInput with the proto's snake_case names: as an object in
  // CLOUD_ML_JOB and as a JSON string in TF_CONFIG/CLUSTER_SPEC's "job" (compat §6.1, §6.3).
  // Compact, because the container's environment goes through a line-based env file.
  std::string snake_job;
  if (any_container) {
    snake_job = SnakeKeys(job_json.is_discarded() ? json::object() : job_json)
                    .dump(-1, ' ', false, json::error_handler_t::replace);
  }
  std::vector<std::string> packages;
  for (const auto& uri : job.spec.package_uris) {
    TRAINYARD_ASSIGN_OR_RETURN(auto path, buckets_.LocalPathForUri(uri));
    packages.push_back(path);
  }
  // The trainer's argv (compat §6.4): TrainingInput.args, then --job-dir DIR.
  std::vector<std::string> trainer_args = job.spec.args;
  if (!job.spec.job_dir.empty()) {
    trainer_args.push_back("--job-dir");
    trainer_args.push_back(job.spec.job_dir);
  }
  // A trial's parameters follow (compat §6.4, Appendix C): --<parameterName>=<value>, the
  // value as trainingOutput prints it. They follow containerArgs too.
  std::vector<std::string> trial_args;
  if (trial != nullptr) {
    for (const auto& [name, value] : trial->hyperparameters) {
      trial_args.push_back("--" + name + "=" + value);
    }
  }
  trainer_args.insert(trainer_args.end(), trial_args.begin(), trial_args.end());
  // The hypertune module Trainyard ships, after whatever the daemon's own PYTHONPATH says. It
  // comes before site-packages, so it also stands in for a cloudml-hypertune the trainer's
  // packages install: both write the same file format (compat §7).
  std::string python_path;
  if (const char* pp = std::getenv("PYTHONPATH"); pp != nullptr && *pp != '\0') python_path = pp;
  if (!options_.python_support_dir.empty()) {
    python_path += (python_path.empty() ? "" : ":") + options_.python_support_dir;
  }
  for (size_t i = 0; i < run.size(); ++i) {
    Replica& r = *run[i];
    const bool in_container = !images[i].empty();
    executor::ReplicaSpec spec;
    spec.key = r.key;
    spec.work_dir = WorkDir(r.key);
    if (!in_container) {
      spec.python = rt->python;
      spec.packages = packages;
      spec.package_uris = job.spec.package_uris;
      spec.python_module = job.spec.python_module;
      spec.args = trainer_args;
      if (!python_path.empty()) spec.env["PYTHONPATH"] = python_path;
    }
    json tf;
    tf["cluster"] = cluster;
    tf["task"] = {{"type", tf_type(r.key.task_type)},
                  {"index", r.key.index},
                  {"cloud", "trainyard-" + job.job_id}};
    if (trial != nullptr) {
      // compat §6.1, §6.3: the trial number as a string, the metric tag and a metric file of
      // the replica's own (read by the scheduler while the trial runs and at its end).
      tf["task"]["trial"] = trial_id;
      const std::string metric_dir = WorkDir(r.key) + "/hypertune";
      if (Status st = MakeDirs(metric_dir); !st.ok()) return st;
      spec.env["CLOUD_ML_TRIAL_ID"] = trial_id;
      spec.env["CLOUD_ML_HP_METRIC_TAG"] = aj.tuning->metric_tag;
      spec.env["CLOUD_ML_HP_METRIC_FILE"] = metric_dir + "/output.metrics";
    }
    if (in_container) {
      tf["job"] = snake_job;
    } else {
      tf["job"] = job_json;
    }
    tf["environment"] = "cloud";
    spec.env["TF_CONFIG"] = tf.dump(-1, ' ', false, json::error_handler_t::replace);
    spec.env["CLOUD_ML_JOB_ID"] = job.job_id;
    spec.env["CLOUD_ML_PROJECT_ID"] = job.project;
    // torch.distributed with init_method="env://": the world is the master (rank 0) and the
    // workers (ranks 1..N); each replica stands for its own machine, so LOCAL_RANK is 0.
    // Containers share the host's network, so 127.0.0.1 reaches the master there too.
    for (auto& [name, value] : model::TorchDistributedEnv(
             r.key.task_type == "master", r.key.task_type == "worker" ? r.key.index : -1, workers,
             master_port)) {
      spec.env[name] = std::move(value);
    }
    // Every replica gets the GPUs given to it and no others ("" hides them all). A container
    // sees only its own GPU devices, which CUDA numbers from 0 there.
    std::string visible;
    for (size_t g = 0; g < r.gpus.size(); ++g) {
      visible += (visible.empty() ? "" : ",") +
                 std::to_string(in_container ? static_cast<int>(g) : r.gpus[g]);
    }
    spec.env["CUDA_VISIBLE_DEVICES"] = visible;
    // Indices are nvidia-smi's, which count in PCI bus order; CUDA's default order differs.
    spec.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
    if (!storage_endpoint_.empty()) {
      spec.env["STORAGE_EMULATOR_HOST"] = storage_endpoint_;
    }
    spec.env["TRAINYARD_BUCKETS_DIR"] = buckets_.root();
    spec.env_cache_dir = options_.env_cache_dir;
    spec.pip_index_url = options_.pip_index_url;
    spec.pip_find_links = options_.pip_find_links;
    if (in_container) {
      const model::ReplicaRoleSpec& role = RoleOf(job.spec, r.key.task_type);
      json cs;
      cs["cluster"] = cluster_spec_cluster;
      cs["task"] = {{"type", r.key.task_type}, {"index", r.key.index}};
      if (trial != nullptr) cs["task"]["trial"] = trial_id;
      cs["job"] = snake_job;
      cs["environment"] = "cloud";
      spec.env["CLUSTER_SPEC"] = cs.dump(-1, ' ', false, json::error_handler_t::replace);
      spec.env["CLOUD_ML_JOB"] = snake_job;
      executor::ContainerSpec& c = spec.container;
      c.engine = options_.container_engine;
      c.engine_env = options_.container_engine_env;
      c.image = images[i];
      // Docker semantics (compat §2 ReplicaConfig): containerCommand replaces the ENTRYPOINT;
      // containerArgs, else TrainingInput.args, go after it. Both are per replica role.
      if (!role.container_command.empty()) c.entrypoint = role.container_command;
      c.args = !role.container_args.empty() ? role.container_args : trainer_args;
      if (!role.container_args.empty()) {
        c.args.insert(c.args.end(), trial_args.begin(), trial_args.end());
      }
      if (trial != nullptr) {
        // The metric file at the same path inside, like the buckets.
        const std::string metric_dir = WorkDir(r.key) + "/hypertune";
        c.mounts.push_back(metric_dir + ":" + metric_dir);
      }
      c.name = ContainerName(r.key, options_.jobs_dir);
      // The bucket directory at the same path, so TRAINYARD_BUCKETS_DIR works inside.
      c.mounts.push_back(buckets_.root() + ":" + buckets_.root());
      for (int g : r.gpus) c.devices.push_back("/dev/nvidia" + std::to_string(g));
      if (!r.gpus.empty()) {
        for (const char* dev : {"/dev/nvidiactl", "/dev/nvidia-uvm"}) {
          if (::access(dev, F_OK) == 0) c.devices.push_back(dev);
        }
      }
      // The engine makes the container's cgroup from --memory/--cpus; the launcher makes none.
      if (options_.container_limits) {
        spec.limits.memory_bytes = r.demand.memory_bytes;
        spec.limits.cpu_millis = r.demand.cpu_millis;
      }
    } else if (!options_.cgroup_root.empty()) {
      spec.cgroup_root = options_.cgroup_root;
      spec.cgroup_name = "trainyard/" + job.project + "." + job.job_id +
                         (r.key.trial_id.empty() ? "" : ".trial-" + r.key.trial_id) + "." +
                         r.key.TaskName();
      spec.limits.memory_bytes = r.demand.memory_bytes;
      spec.limits.cpu_millis = r.demand.cpu_millis;
    }
    TRAINYARD_RETURN_IF_ERROR(executor_.Launch(spec));
    r.spec = std::move(spec);
    r.launched = true;
  }
  return Status::Ok();
}

Status Scheduler::TransitionLocked(ActiveJob& aj, JobState to, const std::string& reason) {
  JobState from = aj.job.state;
  model::JobEvent ev;
  switch (to) {
    case JobState::kPreparing:
      ev = model::JobEvent::kPrepare;
      break;
    case JobState::kRunning:
      ev = model::JobEvent::kRun;
      break;
    case JobState::kSucceeded:
      ev = model::JobEvent::kSucceed;
      break;
    case JobState::kFailed:
      ev = model::JobEvent::kFail;
      break;
    case JobState::kCancelling:
      ev = model::JobEvent::kCancel;
      break;
    case JobState::kCancelled:
      ev = model::JobEvent::kCancelled;
      break;
    case JobState::kQueued:
      ev = model::JobEvent::kRequeue;
      break;
    default:
      return Internal("no event leads to that state");
  }
  auto next = model::Transition(from, ev);
  if (!next.ok()) {
    TY_LOG_ERROR(kLog, "job {}: {}", aj.job.job_id, next.status().message());
    return next.status();
  }
  model::Job updated = aj.job;
  updated.state = *next;
  store::StateChange change{from, updated.state, NowMicros(), reason};
  Status st = store_.UpdateJob(updated, change);
  if (!st.ok()) {
    TY_LOG_ERROR(kLog, "job {}: cannot store state {}: {}", aj.job.job_id,
                 model::JobStateName(updated.state), st.ToString());
    return st;
  }
  aj.job = std::move(updated);
  if (aj.job.state == JobState::kRunning) {
    aj.running_since = change.time;
    aj.units_accrued_at = change.time;
    aj.units_persisted_at = change.time;
    aj.job.consumed_ml_units_set = true;
    timed_.insert({aj.job.project, aj.job.job_id});
  }
  return st;
}

void Scheduler::FinishLocked(ActiveJob& aj, JobState to, const std::string& message) {
  // The closing service line is stored before the terminal state, so a follower that stops at
  // the job's end has already been able to read it.
  if (to == JobState::kSucceeded) {
    ServiceLogLocked(aj.job, model::Severity::kInfo, "Job completed successfully.");
  } else if (to == JobState::kFailed) {
    ServiceLogLocked(aj.job, model::Severity::kError, message);
  } else {
    ServiceLogLocked(aj.job, model::Severity::kInfo, "Job cancelled.");
  }
  FlushServiceLogsLocked();
  aj.job.end_time = NowMicros();
  AccrueUnitsLocked(aj, aj.job.end_time);
  aj.units_accrued_at = 0;
  aj.job.error_message = message;
  (void)TransitionLocked(aj, to, message);
  // Its replicas are gone (or never started): what it held is free for the queue.
  pool_.Release(Owner(aj.job));
  if (aj.tuning) {
    for (const auto& [id, t] : aj.tuning->trials) pool_.Release(TrialOwner(aj.job, id));
  }
  admission_dirty_ = true;
  cv_.notify_all();
}

// The outcome rules of compat §12 over one run's replicas: the master decides; any replica that
// fails fails the run. Asks the other replicas to stop once the run is decided.
Scheduler::RunOutcome Scheduler::EvaluateRunLocked(ActiveJob& aj, const std::string& trial_id) {
  RunOutcome out;
  const Replica* master = nullptr;
  for (const auto& r : aj.replicas) {
    if (r.key.trial_id != trial_id) continue;
    if (r.launched && !r.exited) out.all_gone = false;
    if (r.key.task_type == "master") master = &r;
  }
  auto stop_all = [&] {
    for (auto& r : aj.replicas) {
      if (r.key.trial_id == trial_id) StopReplicaLocked(r, options_.cancel_grace);
    }
  };
  // The master decides: once it has exited 0 on its own, replicas that fail afterwards (DDP
  // ranks losing rank 0's store, TF workers losing the chief) do not change the outcome.
  if (master != nullptr && master->exited && ExitedCleanly(master->exit) &&
      !master->exit.killed_by_request) {
    stop_all();
    out.succeeded = out.all_gone;
    return out;
  }
  for (const auto& r : aj.replicas) {
    // Replicas Trainyard stopped itself (after another failed or the master finished) are
    // not failures of their own.
    if (r.key.trial_id == trial_id && r.exited && !r.exit.killed_by_request &&
        !ExitedCleanly(r.exit)) {
      if (!out.failures.empty()) out.failures += " ";
      out.failures += FailureMessage(r.key, r.exit);
    }
  }
  if (!out.failures.empty()) stop_all();
  return out;
}

// Applies the outcome rules once enough is known: a job ends with its run (compat §12), a
// cancelled job when all its replicas are gone. Tuning jobs end with their trials.
void Scheduler::MaybeFinishLocked(ActiveJob& aj) {
  if (model::IsTerminal(aj.job.state)) return;
  if (aj.tuning) {
    MaybeFinishTuningLocked(aj);
    return;
  }
  const RunOutcome run = EvaluateRunLocked(aj, "");
  if (!aj.cancel_reason.empty()) {
    if (run.all_gone) FinishLocked(aj, JobState::kCancelled, aj.cancel_reason);
    return;
  }
  if (run.succeeded) {
    if (aj.job.state == JobState::kPreparing) (void)TransitionLocked(aj, JobState::kRunning, "");
    FinishLocked(aj, JobState::kSucceeded, "");
    return;
  }
  if (!run.failures.empty()) {
    if (run.all_gone) {
      FinishLocked(aj, JobState::kFailed, run.failures);
    } else if (aj.job.error_message.empty()) {
      aj.job.error_message = run.failures;  // final once the others are gone
    }
  }
}

void Scheduler::OnReplicaRunning(const executor::ReplicaKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find({key.project, key.job_id});
  if (it == active_.end()) return;
  ActiveJob& aj = it->second;
  // RUNNING once every replica of the job (of a tuning job: of one trial) runs.
  bool all = true;
  for (auto& r : aj.replicas) {
    if (r.key == key) r.running = true;
    if (r.key.trial_id == key.trial_id && !r.running) all = false;
  }
  if (all && aj.job.state == JobState::kPreparing) {
    (void)TransitionLocked(aj, JobState::kRunning, "all replicas running");
  }
}

Status Scheduler::OnReplicaLogs(std::span<model::LogEntry> entries) {
  if (entries.empty()) return Status::Ok();
  Status st = store_.AppendLogs(entries);
  if (!st.ok()) TY_LOG_ERROR(kLog, "cannot store {} log lines: {}", entries.size(), st.ToString());
  return st;
}

void Scheduler::OnReplicaExit(const executor::ReplicaKey& key, const executor::ReplicaExit& exit) {
  std::lock_guard<std::mutex> lock(mu_);
  // While the daemon stops, nothing is decided (or restarted): recovery looks at the replica
  // again on the next start.
  if (stopping_) return;
  auto it = active_.find({key.project, key.job_id});
  if (it == active_.end()) return;
  ActiveJob& aj = it->second;
  TY_LOG_INFO(kLog, "job {}: {} exited (status {}, phase {})", key.job_id, key.TaskName(),
              ExitStatusOf(exit), exit.phase);
  for (auto& r : aj.replicas) {
    if (r.key == key) {
      r.exited = true;
      r.exit = exit;
      if (MaybeRestartLocked(aj, r)) return;
    }
  }
  MaybeFinishLocked(aj);
  if (model::IsTerminal(aj.job.state)) active_.erase(it);
  cv_.notify_all();
}

// Compat §12: a replica lost to a signal Trainyard did not send (the OOM killer, someone's
// kill -9, a lost launcher) is restarted with the same identity and port, up to
// replica_restarts times. An exit status of its own (a trainer error) is never retried, and
// nothing is restarted once the job is ending (cancelled, failed, or its master finished).
bool Scheduler::MaybeRestartLocked(ActiveJob& aj, Replica& r) {
  const executor::ReplicaExit& e = r.exit;
  const bool lost = (e.phase == "run" && e.signal != 0) || e.phase == "lost";
  if (!lost || e.killed_by_request || !aj.cancel_reason.empty() || !aj.job.error_message.empty() ||
      model::IsTerminal(aj.job.state) || r.spec.work_dir.empty() || TrialEndingLocked(aj, r)) {
    return false;
  }
  for (const auto& other : aj.replicas) {
    if (&other == &r || other.key.trial_id != r.key.trial_id || !other.exited ||
        other.exit.killed_by_request) {
      continue;
    }
    // Another replica's own failure, or the master's success, is ending the job.
    if (!ExitedCleanly(other.exit) || other.key.task_type == "master") return false;
  }
  const std::string who = "The replica " + ReplicaMessageName(r.key);
  const std::string how = e.oom_killed        ? " ran out of memory and was killed"
                          : e.phase == "lost" ? " was lost (" + e.message + ")"
                                              : " was killed by signal " + std::to_string(e.signal);
  if (r.restarts >= options_.replica_restarts) {
    ServiceLogLocked(aj.job, model::Severity::kError,
                     who + how + " after " + std::to_string(r.restarts) +
                         " restarts; no more restarts are allowed.");
    return false;
  }
  ++r.restarts;
  ++restarts_total_;
  // Kept beside the replica's spec so a restarted daemon continues the count.
  if (Status st = WriteFileAtomic(r.spec.work_dir + "/" + kRestartsFile,
                                  std::to_string(r.restarts) + "\n", /*durable=*/false);
      !st.ok()) {
    TY_LOG_WARN(kLog, "{}", st.ToString());
  }
  ServiceLogLocked(aj.job, model::Severity::kWarning,
                   who + how + "; restarting it with the same identity (restart " +
                       std::to_string(r.restarts) + " of " +
                       std::to_string(options_.replica_restarts) + ").");
  FlushServiceLogsLocked();
  Status st = executor_.Launch(r.spec);
  if (!st.ok()) {
    r.exit.phase = "launch";
    r.exit.message = "restart failed: " + st.message();
    return false;
  }
  r.exited = false;
  r.stop_sent = false;
  r.exit = executor::ReplicaExit();
  return true;
}

void Scheduler::StopReplicaLocked(Replica& r, Duration grace) {
  if (!r.launched || r.exited || r.stop_sent) return;  // one stop request per replica run
  r.stop_sent = true;
  executor_.Kill(r.key, grace);
}

void Scheduler::AccrueUnitsLocked(ActiveJob& aj, Timestamp now) {
  if (aj.units_accrued_at == 0 || now <= aj.units_accrued_at) return;
  double per_hour = 0;
  for (const auto& r : aj.replicas) per_hour += r.ml_units_per_hour;
  aj.job.consumed_ml_units +=
      per_hour * static_cast<double>(now - aj.units_accrued_at) / (3600.0 * kMicrosPerSecond);
  aj.job.consumed_ml_units_set = true;
  aj.units_accrued_at = now;
}

void Scheduler::AccrueAllLocked(Timestamp now) {
  for (auto& [key, aj] : active_) {
    if (aj.units_accrued_at == 0) continue;
    AccrueUnitsLocked(aj, now);
    if (now - aj.units_persisted_at >= options_.ml_units_persist_interval) {
      aj.units_persisted_at = now;
      Status st = store_.UpdateJob(aj.job, std::nullopt);
      if (!st.ok())
        TY_LOG_WARN(kLog, "job {}: cannot store consumedMLUnits: {}", key.second, st.ToString());
    }
  }
}

void Scheduler::ServiceLogLocked(const Job& job, model::Severity severity, std::string message) {
  model::LogEntry e;
  e.project = job.project;
  e.job_id = job.job_id;
  e.timestamp = NowMicros();
  e.severity = severity;
  e.task_name = "service";
  e.message = std::move(message);
  pending_logs_.push_back(std::move(e));
}

// Service lines are written under the lock, like state changes, so a job's lines are stored
// in the order they happened and before its terminal state.
void Scheduler::FlushServiceLogsLocked() {
  if (pending_logs_.empty()) return;
  Status st = store_.AppendLogs(pending_logs_);
  if (!st.ok()) TY_LOG_ERROR(kLog, "cannot store service log lines: {}", st.ToString());
  pending_logs_.clear();
}

}  // namespace trainyard::scheduler
