// The Slurm executor (slurm.h). Layout on the shared filesystem, per run (a job, or one trial):
//
//   <jobs_dir>/<project>/<job>[/trial-<id>]/
//     <task>-replica-<i>/     the replica's work dir, as locally (spec.json, log, exit.json, ...)
//                             plus slurm.json (job, step, node), written by its launcher
//     slurm-<suffix>/         one gang attempt: gang.json (name, then Slurm job id), plan.json
//                             (read by the driver), job.sh, driver.out (the batch job's output),
//                             rendezvous.json (every replica's host:port, by the driver)
//
// Crash safety: gang.json names the Slurm job before sbatch runs and gets its id after; a
// daemon that died in between finds the job by its unique name (squeue lists every job of
// ours), so a gang is never submitted twice. sbatch runs holding a lock on the gang's
// sbatch.lock (flock, passed to it as fd 3), which outlives a daemon killed while sbatch
// runs: a gang whose id is unknown is judged only once no sbatch of it is in flight, from a
// squeue that began after that. Listed by name: adopted. Not listed, and no trace of a run
// (driver.out, a launcher's files): it never reached Slurm, and is submitted (again).
//
// Threads: callers touch the tables under mu_; the monitor thread runs squeue, tails the work
// dirs and is the only caller of the listener.
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "hypertune_metrics.h"
#include "proc_util.h"
#include "protocol_private.h"
#include "trainyard/core/failpoint.h"
#include "trainyard/core/log.h"
#include "trainyard/core/util.h"
#include "trainyard/executor/launcher_protocol.h"
#include "trainyard/executor/slurm.h"
#include "trainyard/executor/slurm_control.h"
#include "trainyard/executor/subprocess.h"
#include "work_dir_tail.h"

namespace trainyard::executor {

using nlohmann::json;

namespace {

constexpr const char* kLog = "slurm";
constexpr const char* kGangFile = "gang.json";
constexpr const char* kPlanFile = "plan.json";
constexpr const char* kDriverOut = "driver.out";
constexpr const char* kSlurmReplicaFile = "slurm.json";
constexpr const char* kScriptFile = "job.sh";
constexpr const char* kSbatchLock = "sbatch.lock";
// Written into the gang dir by the driver before it stops the replicas itself ahead of Slurm's
// time limit (--signal=B:USR1): their SIGTERM was Trainyard's after all.
constexpr const char* kTimeLimitFile = "time-limit";
// Restart in place: the daemon's decisions on the gang's ended steps, one line each, appended
// ("restart <task> <attempt>" or "release <task> <attempt>"), read by the driver
// (slurm_driver.cc; the protocol in slurm_control.h).
constexpr const char* kControlFile = "control.log";
constexpr Duration kCommandTimeout = 30 * kMicrosPerSecond;
// After an exit was seen, polls spent re-delivering lines the store refused.
constexpr int kMaxDrainRetries = 200;

std::string Join(const std::string& dir, const char* file) { return dir + "/" + file; }

std::string RandomSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rng()));
  return buf;
}

std::string RunDirOf(const std::string& jobs_dir, const ReplicaKey& key) {
  std::string dir = jobs_dir + "/" + key.project + "/" + key.job_id;
  if (!key.trial_id.empty()) dir += "/trial-" + key.trial_id;
  return dir;
}

// The newest gang dir (slurm-*) of a run whose plan.json mentions `work_dir` ("" = none).
std::string NewestGangDir(const std::string& run_dir, const std::string& work_dir) {
  std::error_code ec;
  std::string best;
  std::filesystem::file_time_type best_time{};
  for (const auto& entry : std::filesystem::directory_iterator(run_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!StartsWith(name, "slurm-")) continue;
    const std::string plan_path = entry.path().string() + "/" + kPlanFile;
    auto plan = ReadFile(plan_path);
    if (!plan.ok() || plan->find(json(work_dir).dump()) == std::string::npos) continue;
    std::error_code tec;
    auto t = std::filesystem::last_write_time(plan_path, tec);
    if (tec) continue;
    if (best.empty() || t > best_time) {
      best = entry.path().string();
      best_time = t;
    }
  }
  return best;
}

// Slurm's pending reason in words (squeue(1) "JOB REASON CODES").
std::string DescribePendingReason(const std::string& reason) {
  static const std::map<std::string, std::string> kWords = {
      {"Resources", "the resources it needs are in use (Resources)"},
      {"Priority", "jobs of higher priority are ahead of it (Priority)"},
      {"None", "not yet considered by the scheduler"},
      {"BeginTime", "its start time has not come (BeginTime)"},
      {"Dependency", "it waits for another job (Dependency)"},
      {"JobHeldAdmin", "an administrator holds it (JobHeldAdmin)"},
      {"JobHeldUser", "it is held (JobHeldUser)"},
      {"PartitionDown", "its partition is down (PartitionDown)"},
      {"PartitionInactive", "its partition is inactive (PartitionInactive)"},
      {"ReqNodeNotAvail", "nodes it needs are not available (ReqNodeNotAvail)"},
      {"ReqNodeNotAvail, Reserved for maintenance",
       "nodes it needs are reserved for maintenance (ReqNodeNotAvail)"},
      {"QOSMaxJobsPerUserLimit", "its QOS allows no more jobs for this user (QOS limit)"},
      {"AssocGrpCpuLimit", "its account has used its CPU limit (account limit)"},
      {"AssocGrpGRES", "its account has used its GPU limit (account limit)"},
      {"PartitionTimeLimit", "its time limit is above the partition's (PartitionTimeLimit)"},
  };
  auto it = kWords.find(reason);
  return it != kWords.end() ? it->second : "Slurm says " + reason;
}

std::string CurrentUser() {
  if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr) return pw->pw_name;
  return std::to_string(::geteuid());
}

// The environment sbatch runs with: nothing of the daemon's secrets reaches the job.
std::vector<std::string> SlurmClientEnv() {
  std::vector<std::string> env;
  for (const char* name : {"PATH", "HOME", "USER", "LANG", "SLURM_CONF", "TZ"}) {
    if (const char* v = std::getenv(name); v != nullptr) env.push_back(std::string(name) + "=" + v);
  }
  return env;
}

std::string ToMinutesCeil(Duration d) {
  return std::to_string((d + 60 * kMicrosPerSecond - 1) / (60 * kMicrosPerSecond));
}

// Whether an sbatch of the gang in `gang_dir` may still be running (one started by a daemon
// that died holds the lock until it exits).
bool SbatchInFlight(const std::string& gang_dir) {
  const std::string path = Join(gang_dir, kSbatchLock);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // never started
  const bool busy = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // also drops the lock this probe took
  return busy;
}

}  // namespace

std::vector<SlurmJobState> ParseSqueue(const std::string& text) {
  std::vector<SlurmJobState> out;
  for (const std::string& raw : Split(text, '\n')) {
    std::string line = Trim(raw);
    if (line.empty()) continue;
    auto parts = Split(line, '|');
    if (parts.size() < 5) continue;
    SlurmJobState s;
    s.id = Trim(parts[0]);
    s.state = Trim(parts[1]);
    s.reason = Trim(parts[2]);
    s.nodes = Trim(parts[3]);
    // A name cannot hold '|' (SlurmJobName), but keep whatever follows intact.
    s.name = parts[4];
    for (size_t i = 5; i < parts.size(); ++i) s.name += "|" + parts[i];
    s.name = Trim(s.name);
    if (s.id.empty() || s.state.empty()) continue;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<SlurmJobState> ParseSacct(const std::string& text) {
  std::vector<SlurmJobState> out;
  for (const std::string& raw : Split(text, '\n')) {
    auto parts = Split(Trim(raw), '|');
    if (parts.size() < 4) continue;
    SlurmJobState s;
    s.id = Trim(parts[0]);
    s.name = Trim(parts[1]);
    s.state = Trim(parts[2]);
    s.nodes = Trim(parts[3]);
    if (s.nodes == "(null)" || s.nodes == "None assigned") s.nodes.clear();
    // sacct (with slurmdbd) says who cancelled: "CANCELLED by 1000".
    if (size_t sp = s.state.find(' '); sp != std::string::npos) {
      std::string rest = Trim(s.state.substr(sp + 1));
      s.state = s.state.substr(0, sp);
      if (StartsWith(rest, "by ")) rest = "by uid " + rest.substr(3);
      s.reason = rest;
    }
    if (s.id.empty() || s.state.empty()) continue;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<SlurmPendingJob> ParsePendingJobs(const std::string& text) {
  std::vector<SlurmPendingJob> out;
  std::set<std::pair<std::string, std::string>> seen;  // (id, partition)
  for (const std::string& raw : Split(text, '\n')) {
    auto parts = Split(Trim(raw), '|');
    if (parts.size() < 3) continue;
    SlurmPendingJob j;
    j.id = Trim(parts[0]);
    if (size_t plus = j.id.find('+'); plus != std::string::npos) j.id = j.id.substr(0, plus);
    j.priority = std::atoll(Trim(parts[1]).c_str());
    j.partition = Trim(parts[2]);
    if (j.id.empty() || !seen.emplace(j.id, j.partition).second) continue;
    out.push_back(std::move(j));
  }
  return out;
}

int64_t SlurmQueuePosition(const std::vector<SlurmPendingJob>& pending,
                           const std::string& partition, const std::string& id) {
  auto in_partition = [&](const SlurmPendingJob& j) {
    if (j.partition == partition) return true;
    for (const std::string& p : Split(j.partition, ',')) {  // a job eligible for several
      if (p == partition) return true;
    }
    return false;
  };
  const int64_t num = std::atoll(id.c_str());
  const SlurmPendingJob* self = nullptr;
  for (const auto& j : pending) {
    if (j.id == id && in_partition(j)) self = &j;
  }
  int64_t ahead = 0;
  for (const auto& j : pending) {
    if (&j == self || !in_partition(j)) continue;
    const int64_t other = std::atoll(j.id.c_str());
    if (self == nullptr) {
      if (other < num) ++ahead;
    } else if (j.priority > self->priority || (j.priority == self->priority && other < num)) {
      ++ahead;
    }
  }
  return 1 + ahead;
}

bool SlurmStateEnded(const std::string& state) {
  static const std::set<std::string> kLive = {
      "PENDING",   "RUNNING",      "CONFIGURING",  "COMPLETING", "SUSPENDED",
      "REQUEUED",  "REQUEUE_HOLD", "REQUEUE_FED",  "RESIZING",   "SIGNALING",
      "STAGE_OUT", "STOPPED",      "RESV_DEL_HOLD"};
  return kLive.count(state) == 0;
}

std::string SlurmJobName(const std::string& prefix, const ReplicaKey& key,
                         const std::string& suffix) {
  std::string name =
      prefix + key.job_id + (key.trial_id.empty() ? "" : "-t" + key.trial_id) + "-" + suffix;
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return name;
}

std::string SlurmRefusal(const std::string& sbatch_error, const std::string& account,
                         const std::string& account_setting, const std::string& qos) {
  std::string msg = "Slurm refused the job: " + sbatch_error;
  // Slurm's words for an account without an association for this user (slurmdbd with
  // AccountingStorageEnforce=associations), and for a QOS the association may not use.
  if (sbatch_error.find("Invalid account") != std::string::npos) {
    msg += account.empty()
               ? " (no account was given, and Slurm wants one: set slurm.account or "
                 "slurm.project_accounts)"
               : " (the account " + account + ", from " + account_setting +
                     ", is not one Slurm lets this daemon's user submit to; `sacctmgr show "
                     "associations account=" +
                     account + "` lists who may)";
  } else if (sbatch_error.find("Invalid qos") != std::string::npos && !qos.empty()) {
    msg += " (the QOS " + qos + ", from slurm.qos, is not one the job's account " +
           (account.empty() ? std::string("(the user's default)") : account) + " may use)";
  }
  return msg;
}

std::string SlurmBatchScript(const SlurmOptions& options, const SlurmGangPlan& plan) {
  std::string s = "#!/bin/bash\n";
  auto line = [&](const std::string& arg) { s += "#SBATCH " + arg + "\n"; };
  line("--job-name=" + plan.name);
  line("--output=" + Join(plan.gang_dir, kDriverOut));
  line("--open-mode=append");
  line("--no-requeue");
  // A backstop only: the daemon's own timer enforces maxRunningTime with AI Platform's
  // message. USR1 reaches the driver (never the trainers) before the limit, so replicas stop
  // gracefully even while the daemon is down.
  if (plan.time_minutes > 0) line("--time=" + std::to_string(plan.time_minutes));
  if (plan.signal_seconds > 0) line("--signal=B:USR1@" + std::to_string(plan.signal_seconds));
  const std::string& partition = plan.partition.empty() ? options.partition : plan.partition;
  const std::string& account = plan.account.empty() ? options.account : plan.account;
  if (!partition.empty()) line("--partition=" + partition);
  if (!account.empty()) line("--account=" + account);
  if (!options.qos.empty()) line("--qos=" + options.qos);
  for (size_t c = 0; c < plan.components.size(); ++c) {
    const SlurmGangPlan::Component& comp = plan.components[c];
    if (c > 0) {
      // A heterogeneous job's next component: the partition is not among the options Slurm
      // carries over from the first one, so every component names it again.
      s += "#SBATCH hetjob\n";
      if (!partition.empty()) line("--partition=" + partition);
      if (!account.empty()) line("--account=" + account);
      if (!options.qos.empty()) line("--qos=" + options.qos);
    }
    line("--ntasks=" + std::to_string(comp.tasks));
    line("--cpus-per-task=" + std::to_string(comp.cpus_per_task));
    line("--mem-per-cpu=" + std::to_string(comp.mem_per_cpu_mb) + "M");
    if (!comp.gpus_per_task.empty()) line("--gpus-per-task=" + comp.gpus_per_task);
    for (const std::string& extra : options.extra_sbatch_args) line(extra);
  }
  s +=
      "exec " + ShellJoin({options.launcher_path, "slurm-driver", "--plan", plan.plan_path}) + "\n";
  return s;
}

std::string SlurmEnvelopeWaste(const std::vector<SlurmTaskShape>& asked,
                               const SlurmTaskShape& envelope) {
  int64_t cpus = 0;
  int64_t mem_mb = 0;
  int64_t gpus = 0;
  for (const SlurmTaskShape& a : asked) {
    cpus += std::max(0, envelope.cpus - a.cpus);
    mem_mb += std::max<int64_t>(0, envelope.mem_mb - a.mem_mb);
    gpus += std::max(0, envelope.gpus - a.gpus);
  }
  std::vector<std::string> parts;
  if (cpus > 0) parts.push_back(std::to_string(cpus) + (cpus == 1 ? " CPU" : " CPUs"));
  if (mem_mb > 0) parts.push_back(std::to_string(mem_mb) + " MiB");
  if (gpus > 0) parts.push_back(std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs"));
  if (parts.empty()) return "the allocation holds nothing beyond what the replicas asked for";
  std::string list = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    list += (i + 1 == parts.size() ? " and " : ", ") + parts[i];
  }
  return "the allocation holds " + list + " more than the replicas asked for, in total";
}

namespace {

struct Gang {
  std::string name;
  std::string dir;
  std::string slurm_id;  // "" until known
  std::string state;     // last seen in squeue ("" not yet)
  std::string reason;
  bool seen = false;
  bool recovered = false;   // found by Recover with its Slurm job id: squeue -t all decides
  bool submitting = false;  // sbatch not yet answered
  // sbatch may or may not have run (the daemon stopped before it answered, or it timed out):
  // the next squeue that starts with no sbatch of it in flight decides (adopt or submit).
  bool unconfirmed = false;
  bool probe_free = false;  // no sbatch of it in flight when the current squeue began
  bool ended = false;
  int64_t ended_at = 0;      // monotonic
  int64_t submitted_at = 0;  // monotonic
  int tasks = 0;
  std::vector<ReplicaKey> members;
  std::string note;       // a warning for the job's log once it is submitted ("" = none)
  std::string told;       // the waiting reason last written to the job's log
  std::string partition;  // where it waits (its label's, slurm.partition or the default)
  std::string account;    // --account ("" = none) and the setting that chose it
  std::string account_setting;
  bool allocated = false;      // Slurm started it (OnReplicaAllocated was sent)
  bool cancel_sent = false;    // scancel -s TERM (or a plain scancel while not running)
  int64_t hard_cancel_at = 0;  // monotonic; a plain scancel, 0 = none due
  bool in_place = false;       // its driver restarts a replica's step in place (plan.json)
  int64_t listed_at = 0;       // monotonic: when the last squeue that listed it began
  // sbatch could not reach Slurm's controller (SbatchFailureIsTransient): why ("" = it did),
  // how often in a row, and when it is tried again (monotonic).
  std::string submit_problem;
  // Ended NODE_FAIL: the nodes Slurm said failed (FindFailedNodes). Guarded by mu_.
  std::set<std::string> failed_nodes;
  int submit_failures = 0;
  int64_t retry_at = 0;
};

struct SReplica {
  ReplicaKey key;
  std::string work_dir;
  std::shared_ptr<Gang> gang;
  // Guarded by mu_.
  bool kill_requested = false;
  std::string stop_reason;
  int64_t hard_kill_at = 0;  // monotonic; plain scancel of its step
  bool term_sent = false;
  // Monitor thread only.
  bool gone = false;
  int64_t exit_seen_at = 0;  // monotonic; when exit.json showed up (guarded by mu_)
  int drain_retries = 0;
  WorkDirTail tail;
  // Restarted in place, its driver not yet seen to act on it: the work dir still holds the
  // ended step's files (the driver removes them, exit.json last, before the new step), so
  // nothing is read until exit.json is gone or another (inode) than the ended step's.
  bool relaunch_pending = false;
  ino_t ended_exit_inode = 0;
  // An exit report of an older attempt was found in the work dir and ignored (logged once).
  bool stale_exit_logged = false;
};

// The metric file a trial's replica reads (SlurmMetricFileToRead), from its spec.
std::string MetricFileOf(const ReplicaSpec& spec) {
  auto it = spec.env.find("CLOUD_ML_HP_METRIC_FILE");
  return SlurmMetricFileToRead(spec.work_dir, spec.attempt,
                               it == spec.env.end() ? std::string() : it->second);
}

// Gives a trial's replica the metric file of its attempt (SlurmMetricFile), its directory made
// and bind-mounted into a container at the same path.
Status GiveMetricFile(ReplicaSpec& spec) {
  if (spec.metric_tag.empty()) return Status::Ok();
  const std::string file = SlurmMetricFile(spec.work_dir, spec.attempt);
  const std::string metric_dir = file.substr(0, file.rfind('/'));
  TRAINYARD_RETURN_IF_ERROR(MakeDirs(metric_dir));
  spec.env["CLOUD_ML_HP_METRIC_FILE"] = file;
  if (!spec.container.image.empty()) {
    spec.container.mounts.insert(spec.container.mounts.begin(), metric_dir + ":" + metric_dir);
  }
  return Status::Ok();
}

// A replica of `spec` (its work dir set) in `gang` (null: not known yet), its tail at the start.
std::shared_ptr<SReplica> NewReplica(const ReplicaSpec& spec, std::shared_ptr<Gang> gang) {
  auto r = std::make_shared<SReplica>();
  r->key = spec.key;
  r->work_dir = spec.work_dir;
  r->gang = std::move(gang);
  r->tail.key = spec.key;
  r->tail.work_dir = spec.work_dir;
  r->tail.metric_tag = spec.metric_tag;
  r->tail.metric_file = MetricFileOf(spec);
  r->tail.attempt = spec.attempt;
  return r;
}

// Whether the replica's work dir holds the exit report of an attempt older than its spec's
// (`attempt`) and not older than its gang's plan gives it (`planned`, -1 unknown): the ended
// step of a restart in place not yet carried out. Then `r` waits for its driver to replace
// that report (as after RestartInPlace). A report older than the plan's attempt is a step of
// an earlier allocation (CurrentExitReport), not a decision to carry out.
bool StaleExitIn(const std::string& work_dir, int attempt, int planned, SReplica* r) {
  const std::string path = Join(work_dir, kExitFile);
  struct stat st;
  struct stat again;
  if (::stat(path.c_str(), &st) != 0) return false;
  auto text = ReadFile(path);
  if (!text.ok()) return false;
  const int reported = ExitReportAttempt(*text);
  if (!SlurmExitIsStale(reported, attempt) || SlurmExitIsStale(reported, planned)) return false;
  // Replaced meanwhile (the driver acted): then it is not the one read.
  if (::stat(path.c_str(), &again) != 0 || again.st_ino != st.st_ino) return false;
  r->relaunch_pending = true;
  r->ended_exit_inode = st.st_ino;
  return true;
}

// The replica's exit report if it is one of `attempt` (or names none): a report of an older
// attempt is not this attempt's end. After a node failure the whole gang runs again in a new
// allocation while the old step may live on, its slurmd dead (nothing kills it until the node
// comes back): its launcher still writes exit.json into the same work dir. NotFound when
// there is none, or only an older attempt's.
// Its ended_at is the report's mtime, as ReadExitReport gives it locally: exits read together
// (after a daemon restart) are judged in the order they ended, and the job ends with the last.
Result<ReplicaExit> CurrentExitReport(const std::string& work_dir, int attempt,
                                      bool* stale = nullptr) {
  if (stale != nullptr) *stale = false;
  const std::string path = Join(work_dir, kExitFile);
  struct stat st;
  const bool dated = ::stat(path.c_str(), &st) == 0;
  auto text = ReadFile(path);
  if (!text.ok()) return NotFound("no " + std::string(kExitFile));
  if (const int reported = ExitReportAttempt(*text); SlurmExitIsStale(reported, attempt)) {
    if (stale != nullptr) *stale = true;
    return NotFound(std::string(kExitFile) + " is of attempt " + std::to_string(reported) +
                    ", not " + std::to_string(attempt));
  }
  auto exit = ExitFromJson(*text);
  if (exit.ok() && dated) {
    exit->ended_at =
        static_cast<Timestamp>(st.st_mtim.tv_sec) * kMicrosPerSecond + st.st_mtim.tv_nsec / 1000;
  }
  return exit;
}

// The attempt plan.json in `gang_dir` gives the replica of `work_dir` (-1: unknown).
int PlannedAttempt(const std::string& gang_dir, const std::string& work_dir) {
  auto text = ReadFile(Join(gang_dir, kPlanFile));
  if (!text.ok()) return -1;
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("replicas") || !j["replicas"].is_array()) return -1;
  for (const json& r : j["replicas"]) {
    if (r.is_object() && r.value("workDir", "") == work_dir) return r.value("attempt", -1);
  }
  return -1;
}

class SlurmExecutor final : public Executor {
 public:
  SlurmExecutor(SlurmOptions options, ExecutorListener* listener)
      : options_(std::move(options)), listener_(listener), user_(CurrentUser()) {
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    monitor_ = std::thread([this] { MonitorLoop(); });
    submitter_ = std::thread([this] { SubmitLoop(); });
    canceller_ = std::thread([this] { CancelLoop(); });
  }
  ~SlurmExecutor() override {
    Shutdown();
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  Status Launch(const ReplicaSpec& spec) override;
  Status LaunchGang(std::span<const ReplicaSpec> specs, const GangSpec& gang,
                    size_t* launched) override;
  void Kill(const ReplicaKey& key, Duration grace, const std::string& reason) override;
  std::vector<RecoveredReplica> Recover(const std::vector<ReplicaKey>& keys) override;
  std::vector<MetricRecord> ReplicaMetrics(const ReplicaKey& key, const std::string& tag) override;
  std::vector<std::string> ReplicaMetricTags(const ReplicaKey& key) override;
  // A gang is one allocation: a lost replica's run restarts whole (a new allocation, new
  // addresses for every replica, the same identities), unless the replica was killed inside
  // an allocation that is still healthy: then its step restarts in place (RestartInPlace).
  bool RestartsWholeRun(const ReplicaKey& key, const ReplicaExit&) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return in_place_.count(key) == 0;
  }
  int RunningCount() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(replicas_.size());
  }
  void Shutdown() override;
  std::string Problem() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return problem_;
  }
  std::string PendingReason(const ReplicaKey& key) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = replicas_.find(key);
    if (it == replicas_.end() || !it->second->gang) return "";
    const Gang& g = *it->second->gang;
    if (g.ended) return "";
    if (!g.submit_problem.empty() && g.slurm_id.empty()) {
      return "Slurm's controller does not take jobs now (" + g.submit_problem +
             "); Trainyard submits it again when the controller answers.";
    }
    if (g.submitting || g.slurm_id.empty()) return "Being submitted to Slurm.";
    if (g.state != "PENDING") return "";
    const int64_t ahead = SlurmQueuePosition(pending_, g.partition, g.slurm_id) - 1;
    return "Waiting in Slurm (job " + g.slurm_id +
           (g.partition.empty() ? "" : ", partition " + g.partition) +
           (ahead <= 0   ? ""
            : ahead == 1 ? "; 1 job ahead of it"
                         : "; " + std::to_string(ahead) + " jobs ahead of it") +
           "): " + DescribePendingReason(g.reason) + ".";
  }
  // Admission is Slurm's: a submitted gang waits in Slurm's queue (PENDING) until it starts.
  bool QueuesGangs() const override { return true; }
  int64_t QueuePosition(const ReplicaKey& key) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = replicas_.find(key);
    if (it == replicas_.end() || !it->second->gang) return 0;
    const Gang& g = *it->second->gang;
    if (g.ended || g.slurm_id.empty() || g.state != "PENDING") return 0;
    return SlurmQueuePosition(pending_, g.partition, g.slurm_id);
  }

 private:
  // Writes the gang's files and submits it; the replicas' specs are in their work dirs.
  Status Submit(const std::shared_ptr<Gang>& gang, const json& plan, const SlurmGangPlan& shape);
  void MonitorLoop();
  void SubmitLoop();
  // Runs the queued scancels (Scancel), one after the other: a controller that does not
  // answer holds each for scancel's own timeout (about 10 s), and nobody waits for them.
  void CancelLoop();
  // A squeue of every job of ours, in two halves on the monitor thread: StartSqueue notes what
  // is known before it starts and runs the command on a thread of its own; FinishSqueue reads
  // its answer once it is there. Meanwhile the monitor goes on tailing the work dirs: a
  // controller that does not answer (squeue waits about 10 s for it) never holds log lines,
  // exits or deadlines back.
  void StartSqueue();
  void FinishSqueue();
  // Slurm's verdict, from sacct (one call), on gangs that left squeue before it showed how
  // they ended (the daemon was down longer than MinJobAge).
  void AskSacct(const std::vector<std::shared_ptr<Gang>>& left);
  // The pending jobs of the partitions our pending gangs wait in (one squeue -t PD), at most
  // every position_interval, sooner (at most every poll) when a gang is not in the last list.
  void RefreshPositions();
  // The partition and account of a gang: its job's label slurm-partition (when allowed), its
  // project's account (slurm.project_accounts).
  Status RouteGang(const std::string& project, const std::map<std::string, std::string>& labels,
                   std::string* partition, std::string* account) const;
  bool Poll(SReplica& r);
  // Whether `r`, whose report is in, waits for a peer of its gang without one: the allocation
  // was lost (a node failure) and the replica on the failed node reports last (after
  // file_grace, it writes nothing), though it is the one that was lost. Reported first, it is
  // the one the job's log names (`The replica worker 1 was lost ...`). Bounded by file_grace.
  bool WaitsForLostPeer(const SReplica& r);
  // Which of `nodes` (squeue's node list of a gang that ended NODE_FAIL) Slurm says failed
  // (one sinfo), into gang.failed_nodes: the replicas there are the ones lost. Best effort: a
  // node already back (ReturnToService) is not found.
  void FindFailedNodes(Gang& gang, const std::string& nodes);
  void ReportExit(SReplica& r);
  // Queues `scancel <args>` for CancelLoop (unless the same is queued already); never blocks.
  void Scancel(const std::vector<std::string>& args);
  // The live Slurm jobs of `by_name` (this daemon's name prefix) that no gang owns; marks the
  // check done.
  std::vector<SlurmJobState> OrphansLocked(const std::map<std::string, SlurmJobState>& by_name);
  void EnforceDeadlines();
  // Whether a gang Slurm does not list left any trace of running (its driver's output, a
  // launcher's files): a job that ran and left squeue (MinJobAge) is never submitted again.
  bool GangRan(const Gang& gang, const std::vector<ReplicaKey>& members) const;
  // Where a gang waits: `chosen` (its label's partition), else slurm.partition, else the
  // cluster's default partition.
  std::string PartitionOf(const std::string& chosen) const {
    if (!chosen.empty()) return chosen;
    return options_.partition.empty() ? options_.default_partition : options_.partition;
  }
  // Queues the gang's sbatch (mu_ held).
  void QueueSubmitLocked(const std::shared_ptr<Gang>& gang);
  // sbatch of `gang` failed because the controller could not be reached (`why`): the job
  // stays queued, and a squeue decides once the controller answers and the backoff passed
  // (sbatch may have reached it after all: adopted by name, else submitted again). mu_ held;
  // returns the job's log line to write ("" = none).
  std::string SubmitLaterLocked(Gang& gang, const std::string& why);
  // A service line in the job's log of `key` (its trial's, for a trial); mu_ not held.
  void ServiceLine(const ReplicaKey& key, model::Severity severity, const std::string& message);
  // A WARNING line in the job's log of the gang ("" = none); mu_ not held.
  void ServiceWarning(const Gang& gang, const std::string& message);
  // A new step for the replica in its gang's running allocation: same node, port, work dir and
  // cluster environment (the driver keeps them); the spec's attempt is the new one.
  Status RestartInPlace(const ReplicaSpec& spec, const std::shared_ptr<Gang>& gang);
  // Appends one decision line to the gang's control.log (the driver reads it within a second).
  void TellDriver(const Gang& gang, const std::string& line);
  // The metric file of the attempt the replica's spec.json is at (SlurmMetricFileToRead).
  std::string CurrentMetricFile(const ReplicaKey& key) const;
  std::string WorkDirFor(const ReplicaKey& key) const {
    return RunDirOf(options_.jobs_dir, key) + "/" + key.TaskName();
  }
  void Wake() {
    if (wake_fd_ >= 0) {
      uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
    }
  }

  SlurmOptions options_;
  ExecutorListener* const listener_;
  const std::string user_;

  mutable std::mutex mu_;
  std::map<ReplicaKey, std::shared_ptr<SReplica>> replicas_;  // guarded by mu_
  std::set<std::shared_ptr<Gang>> gangs_;                     // guarded by mu_
  bool stop_ = false;                                         // guarded by mu_
  bool recovered_ = false;        // guarded by mu_: Recover returned (the store's gangs are known)
  bool orphans_checked_ = false;  // guarded by mu_: the one orphan check after Recover is done
  int64_t next_squeue_ = 0;       // guarded by mu_
  int fast_polls_ = 0;            // guarded by mu_: quick squeue polls left after an event
  std::string problem_;           // guarded by mu_: why the last squeue failed ("" = it answered)
  // Guarded by mu_: why the last sbatch could not reach the controller, until a squeue answers
  // ("" = no such failure since): gangs queued meanwhile wait without an sbatch of their own.
  std::string sbatch_away_;
  std::deque<std::shared_ptr<Gang>> submit_queue_;  // guarded by mu_
  std::vector<SlurmPendingJob> pending_;            // guarded by mu_: the last squeue -t PD
  int64_t positions_at_ = 0;                        // guarded by mu_: monotonic, when taken
  bool positions_taken_ = false;                    // guarded by mu_
  // Replicas being reported (ReportExit) that may restart in place: their gangs, until the
  // scheduler's answer (Launch) takes them. Guarded by mu_.
  std::map<ReplicaKey, std::shared_ptr<Gang>> in_place_;
  std::condition_variable submit_cv_;
  std::deque<std::vector<std::string>> cancel_queue_;  // guarded by mu_: CancelLoop's
  std::condition_variable cancel_cv_;
  // The squeue under way (StartSqueue); monitor thread only.
  struct SqueueRun {
    std::future<Result<CommandResult>> result;
    int64_t began = 0;  // monotonic
    bool check_orphans = false;
    // Gangs whose sbatch may or may not have run: whether one was in flight when it began,
    // and whether they left a trace of running (the shared_ptrs keep the keys alive).
    std::vector<std::shared_ptr<Gang>> unconfirmed;
    std::map<Gang*, bool> free_before;
    std::map<Gang*, bool> ran;
  };
  std::optional<SqueueRun> squeue_run_;
  std::thread monitor_;
  std::thread submitter_;
  std::thread canceller_;
  int wake_fd_ = -1;
};

Status SlurmExecutor::LaunchGang(std::span<const ReplicaSpec> specs, const GangSpec& gang_spec,
                                 size_t* launched) {
  if (launched != nullptr) *launched = 0;
  if (specs.empty()) return Status::Ok();
  if (gang_spec.shapes.size() != specs.size()) {
    return InvalidArgument("the gang has " + std::to_string(specs.size()) + " specs and " +
                           std::to_string(gang_spec.shapes.size()) + " shapes");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return FailedPrecondition("executor is shut down");
    for (const ReplicaSpec& spec : specs) {
      if (replicas_.count(spec.key) != 0) {
        return AlreadyExists("replica " + spec.key.TaskName() + " of job " + spec.key.job_id +
                             " is already running");
      }
    }
  }
  std::string partition;
  std::string account;
  TRAINYARD_RETURN_IF_ERROR(
      RouteGang(specs[0].key.project, gang_spec.labels, &partition, &account));
  const std::string run_dir = RunDirOf(options_.jobs_dir, specs[0].key);
  const std::string suffix = RandomSuffix();
  auto gang = std::make_shared<Gang>();
  gang->name = SlurmJobName(options_.name_prefix, specs[0].key, suffix);
  gang->dir = run_dir + "/slurm-" + suffix;
  gang->partition = PartitionOf(partition);
  gang->account = account.empty() ? options_.account : account;
  gang->account_setting = account.empty()
                              ? std::string("slurm.account")
                              : "slurm.project_accounts (project " + specs[0].key.project + ")";
  TRAINYARD_RETURN_IF_ERROR(MakeDirs(gang->dir));

  // One component per distinct shape. Several shapes run as a heterogeneous job when the
  // cluster can place one, else as an envelope: one plain job in which every task gets the
  // largest shape, each replica's step still asking only for its own (--gres=none for none).
  SlurmGangPlan shape;
  shape.name = gang->name;
  shape.gang_dir = gang->dir;
  shape.plan_path = Join(gang->dir, kPlanFile);
  shape.partition = partition;
  shape.account = account;
  json replicas = json::array();
  int max_cpus = 1;
  int64_t max_mem_mb = 1;
  int max_gpus = 0;
  std::string gpu_type;
  std::map<std::string, int> component_of;  // shape key -> component index
  std::vector<SlurmGangPlan::Component> components;
  std::vector<SlurmTaskShape> asked;  // each replica's shape, in Slurm's units
  for (size_t i = 0; i < specs.size(); ++i) {
    const GangSpec::Shape& sh = gang_spec.shapes[i];
    const int cpus = std::max<int>(
        1, static_cast<int>(std::lround(sh.cpu_millis / 1000.0 * options_.cpu_scale)));
    const int64_t mem_mb = std::max<int64_t>(
        16, static_cast<int64_t>(std::ceil(sh.memory_bytes * options_.memory_scale / 1048576.0)));
    std::string gres;
    if (sh.gpus > 0) {
      auto mapped = options_.gpu_types.find(sh.gpu_type);
      gres = (mapped != options_.gpu_types.end() ? mapped->second + ":" : "") +
             std::to_string(sh.gpus);
      if (gpu_type.empty() && mapped != options_.gpu_types.end()) gpu_type = mapped->second;
    }
    max_cpus = std::max(max_cpus, cpus);
    max_mem_mb = std::max(max_mem_mb, mem_mb);
    max_gpus = std::max(max_gpus, sh.gpus);
    asked.push_back({cpus, mem_mb, sh.gpus});
    const int64_t mem_per_cpu = (mem_mb + cpus - 1) / cpus;
    const std::string key = std::to_string(cpus) + "/" + std::to_string(mem_per_cpu) + "/" + gres;
    auto [it, added] = component_of.emplace(key, static_cast<int>(components.size()));
    if (added) components.push_back({0, cpus, mem_per_cpu, gres});
    ++components[it->second].tasks;
    std::string work_dir = specs[i].work_dir.empty() ? WorkDirFor(specs[i].key) : specs[i].work_dir;
    replicas.push_back({{"workDir", work_dir},
                        {"task", i},
                        {"taskName", specs[i].key.TaskName()},
                        {"cpus", cpus},
                        {"memPerCpuMb", mem_per_cpu},
                        {"gpus", gres},
                        {"hetGroup", it->second},
                        {"container", !specs[i].container.image.empty()},
                        // The driver ignores a repeated restart decision for it (slurm_control.h).
                        {"attempt", specs[i].attempt}});
  }
  const bool het = components.size() > 1 &&
                   (options_.heterogeneous == "always" ||
                    (options_.heterogeneous == "auto" && options_.backfill &&
                     static_cast<int>(components.size()) <= options_.het_components_max));
  if (het || components.size() == 1) {
    shape.components = components;
  } else {
    SlurmGangPlan::Component envelope;
    envelope.tasks = static_cast<int>(specs.size());
    envelope.cpus_per_task = max_cpus;
    envelope.mem_per_cpu_mb = (max_mem_mb + max_cpus - 1) / max_cpus;
    if (max_gpus > 0) {
      envelope.gpus_per_task = (gpu_type.empty() ? "" : gpu_type + ":") + std::to_string(max_gpus);
    }
    shape.components = {envelope};
    for (auto& r : replicas) r["hetGroup"] = -1;
  }
  const Duration limit = gang_spec.max_running_time > 0 ? gang_spec.max_running_time
                                                        : 7LL * 24 * 3600 * kMicrosPerSecond;
  shape.time_minutes =
      std::stoi(ToMinutesCeil(limit + options_.cancel_grace + options_.time_limit_margin));
  shape.signal_seconds = static_cast<int>(options_.cancel_grace / kMicrosPerSecond) + 90;

  json plan = {{"name", gang->name},
               {"launcher", options_.launcher_path},
               {"portRange", options_.port_range},
               {"heterogeneous", het},
               {"restartInPlace", true},
               // How long the driver keeps an ended step's slot for the daemon's decision.
               {"restartWaitSeconds",
                std::max<int64_t>(300, 30 * options_.poll_interval / kMicrosPerSecond)},
               {"replicas", replicas},
               {"run", json::parse(gang_spec.run_plan_json, nullptr, false)},
               {"slurmPartition", gang->partition},
               {"labels", gang_spec.labels}};
  if (components.size() > 1 && !het) {
    gang->note =
        "the replicas have " + std::to_string(components.size()) +
        " shapes and this cluster cannot run them as a heterogeneous job (" +
        (options_.heterogeneous == "never" ? std::string("slurm.heterogeneous is never")
         : !options_.backfill              ? std::string("its scheduler is not sched/backfill")
                                           : "it needs a node per shape and the partition has " +
                                    std::to_string(options_.het_components_max)) +
        "): they run as one plain Slurm job in which every task gets the largest (" +
        std::to_string(max_cpus) + " CPUs, " + std::to_string(max_mem_mb) + " MiB" +
        (max_gpus > 0 ? ", " + std::to_string(max_gpus) + " GPUs" : std::string()) + "); " +
        SlurmEnvelopeWaste(asked,
                           {max_cpus, (max_mem_mb + max_cpus - 1) / max_cpus * max_cpus, max_gpus});
    plan["envelopeNote"] = gang->note;
  }

  // Every replica's spec in its work dir, as locally, before anything is submitted.
  for (const ReplicaSpec& given : specs) {
    ReplicaSpec spec = given;
    if (spec.work_dir.empty()) spec.work_dir = WorkDirFor(spec.key);
    TRAINYARD_RETURN_IF_ERROR(MakeDirs(spec.work_dir));
    for (const char* f : {kPidFile, kRunningFile, kLogFile, kLogOffsetFile, kExitFile, kKillFile,
                          kStopReasonFile, kLauncherErrFile, kSlurmReplicaFile}) {
      TRAINYARD_RETURN_IF_ERROR(RemoveTree(Join(spec.work_dir, f)));
    }
    TRAINYARD_RETURN_IF_ERROR(GiveMetricFile(spec));
    // Slurm's task/cgroup enforces limits; the launcher makes no cgroups of its own there.
    spec.cgroup_root.clear();
    TRAINYARD_RETURN_IF_ERROR(WriteFileAtomic(Join(spec.work_dir, kSpecFile), SpecToJson(spec)));
    auto r = NewReplica(spec, gang);
    gang->members.push_back(spec.key);
    std::lock_guard<std::mutex> lock(mu_);
    replicas_[spec.key] = std::move(r);
  }
  gang->in_place = true;
  Status st = Submit(gang, plan, shape);
  if (!st.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const ReplicaKey& k : gang->members) replicas_.erase(k);
    return st;
  }
  if (launched != nullptr) *launched = specs.size();
  return Status::Ok();
}

Status SlurmExecutor::Submit(const std::shared_ptr<Gang>& gang, const json& plan,
                             const SlurmGangPlan& shape) {
  TRAINYARD_RETURN_IF_ERROR(
      WriteFileAtomic(shape.plan_path, plan.dump(-1, ' ', false, json::error_handler_t::replace)));
  const std::string script_path = Join(gang->dir, kScriptFile);
  TRAINYARD_RETURN_IF_ERROR(WriteFileAtomic(script_path, SlurmBatchScript(options_, shape)));
  // The name first: a daemon that dies before it learns the id adopts the job by its name.
  TRAINYARD_RETURN_IF_ERROR(
      WriteFileAtomic(Join(gang->dir, kGangFile), json({{"name", gang->name}}).dump()));
  // sbatch runs on the submitter thread: the caller (the scheduler, under its lock) never
  // waits for the controller. A refusal comes back as the replicas' exits.
  {
    std::lock_guard<std::mutex> lock(mu_);
    gang->tasks = 0;
    for (const auto& c : shape.components) gang->tasks += c.tasks;
    gangs_.insert(gang);
    QueueSubmitLocked(gang);
  }
  return Status::Ok();
}

void SlurmExecutor::QueueSubmitLocked(const std::shared_ptr<Gang>& gang) {
  gang->submitting = true;
  gang->unconfirmed = false;
  gang->submitted_at = MonotonicMicros();
  submit_queue_.push_back(gang);
  submit_cv_.notify_one();
}

bool SlurmExecutor::GangRan(const Gang& gang, const std::vector<ReplicaKey>& members) const {
  if (FileExists(Join(gang.dir, kDriverOut))) return true;
  for (const ReplicaKey& key : members) {
    const std::string dir = WorkDirFor(key);
    for (const char* f : {kPidFile, kRunningFile, kLogFile, kExitFile, kSlurmReplicaFile}) {
      if (FileExists(Join(dir, f))) return true;
    }
  }
  return false;
}

void SlurmExecutor::SubmitLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    submit_cv_.wait(lock, [&] { return stop_ || !submit_queue_.empty(); });
    if (stop_) return;
    std::shared_ptr<Gang> gang = std::move(submit_queue_.front());
    submit_queue_.pop_front();
    if (!sbatch_away_.empty()) {
      // The last sbatch could not reach the controller and no squeue has answered since:
      // this gang waits with it, without an sbatch of its own (each would take sbatch's whole
      // connection timeout, one after the other).
      gang->submitting = false;
      const std::string told = SubmitLaterLocked(*gang, sbatch_away_);
      lock.unlock();
      ServiceWarning(*gang, told);
      lock.lock();
      continue;
    }
    lock.unlock();
    // Held by sbatch until it exits, even when this daemon dies meanwhile (SbatchInFlight).
    const std::string lock_path = Join(gang->dir, kSbatchLock);
    const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX) != 0) {
      TY_LOG_WARN(kLog, "{}: cannot lock {}: {}", gang->name, lock_path, std::strerror(errno));
    }
    TY_FAILPOINT("executor.slurm.before_sbatch");  // the gang's files written, no sbatch yet
    auto res = RunCommand({"sbatch", "--parsable", Join(gang->dir, kScriptFile)}, SlurmClientEnv(),
                          kCommandTimeout, lock_fd);
    if (lock_fd >= 0) ::close(lock_fd);
    std::string id;
    std::string refused;
    std::string unreachable;  // the controller, not the job: submitted again later
    bool unsure = false;
    if (!res.ok() && res.status().code() == StatusCode::kDeadlineExceeded) {
      // Slurm may have taken the job before sbatch was stopped: squeue decides.
      unsure = true;
      TY_LOG_WARN(kLog, "{}: {}; looking for it by name", gang->name, res.status().message());
    } else if (!res.ok()) {
      refused = "cannot submit to Slurm: " + res.status().message();
    } else if (res->exit_code != 0 && SbatchFailureIsTransient(res->err)) {
      unreachable = CommandError(*res);
    } else if (res->exit_code != 0) {
      // Slurm's own words: "Requested node configuration is not available" and the like.
      refused =
          SlurmRefusal(CommandError(*res), gang->account, gang->account_setting, options_.qos);
    } else {
      id = Trim(res->out);
      if (size_t semi = id.find(';'); semi != std::string::npos) id = id.substr(0, semi);
      TY_FAILPOINT("executor.slurm.after_sbatch");  // Slurm has the job, gang.json no id
      Status w = WriteFileAtomic(Join(gang->dir, kGangFile),
                                 json({{"name", gang->name}, {"jobId", id}}).dump());
      if (!w.ok()) TY_LOG_WARN(kLog, "{} (the job is adopted by its name)", w.ToString());
      TY_LOG_INFO(kLog, "submitted {} as Slurm job {} ({} tasks)", gang->name, id, gang->tasks);
    }
    lock.lock();
    gang->submitting = false;
    std::string told;
    if (!unreachable.empty()) {
      told = SubmitLaterLocked(*gang, unreachable);
    } else if (unsure) {
      gang->unconfirmed = true;
      fast_polls_ = 4;
      next_squeue_ = 0;
    } else if (!refused.empty()) {
      TY_LOG_WARN(kLog, "{}: {}", gang->name, refused);
      gang->ended = true;
      gang->ended_at = MonotonicMicros() - options_.file_grace;  // nothing to wait for
      gang->state = "REFUSED";
      gang->reason = refused;
    } else {
      gang->slurm_id = id;
      gang->submit_problem.clear();
      fast_polls_ = 4;
      next_squeue_ = 0;
    }
    lock.unlock();
    ServiceWarning(*gang, told);
    Wake();
    lock.lock();
  }
}

void SlurmExecutor::ServiceWarning(const Gang& gang, const std::string& message) {
  if (message.empty() || gang.members.empty()) return;
  ServiceLine(gang.members.front(), model::Severity::kWarning, message);
}

void SlurmExecutor::ServiceLine(const ReplicaKey& key, model::Severity severity,
                                const std::string& message) {
  model::LogEntry e;
  e.project = key.project;
  e.job_id = key.job_id;
  e.trial_id = key.trial_id;
  e.timestamp = NowMicros();
  e.severity = severity;
  e.task_name = "service";
  e.message = message;
  Status st = listener_->OnReplicaLogs(std::span<model::LogEntry>(&e, 1));
  if (!st.ok()) TY_LOG_WARN(kLog, "cannot store a service line: {}", st.ToString());
}

std::string SlurmExecutor::SubmitLaterLocked(Gang& gang, const std::string& why) {
  // 2, 4, 8, ... 30 s between tries; a squeue that fails (the controller is away) waits too.
  const int64_t backoff =
      std::min<int64_t>(30, int64_t{2} << std::min(gang.submit_failures, 4)) * kMicrosPerSecond;
  ++gang.submit_failures;
  gang.retry_at = MonotonicMicros() + backoff;
  gang.unconfirmed = true;
  const bool first = gang.submit_problem.empty();
  // sbatch's own words begin "sbatch: error: ...": not "sbatch: " twice.
  const std::string said = StartsWith(why, "sbatch:") ? why : "sbatch: " + why;
  gang.submit_problem = said;
  sbatch_away_ = why;
  TY_LOG_WARN(kLog,
              "{}: Slurm's controller does not take jobs now ({}); the job stays queued, "
              "trying again in {}",
              gang.name, why, FormatDuration(backoff));
  if (problem_.empty()) {
    problem_ = "the Slurm controller does not take jobs since " + FormatRfc3339(NowMicros()) +
               " (" + said + "); jobs are kept as they were";
  }
  if (!first) return "";
  return "Slurm's controller does not take jobs now (" + said +
         "); the job stays queued and is submitted again when the controller answers.";
}

Status SlurmExecutor::Launch(const ReplicaSpec& given) {
  std::shared_ptr<Gang> running_gang;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = in_place_.find(given.key); it != in_place_.end()) {
      running_gang = it->second;
      in_place_.erase(it);
    }
  }
  if (running_gang) return RestartInPlace(given, running_gang);
  // A restart of one replica: a new allocation of its own, with the shape and the run plan of
  // the gang it was part of, and its peers' addresses from that gang's rendezvous.
  ReplicaSpec spec = given;
  if (spec.work_dir.empty()) spec.work_dir = WorkDirFor(spec.key);
  const std::string run_dir = RunDirOf(options_.jobs_dir, spec.key);
  const std::string old_dir = NewestGangDir(run_dir, spec.work_dir);
  if (old_dir.empty()) {
    return FailedPrecondition("no earlier Slurm plan for " + spec.key.TaskName() + " of job " +
                              spec.key.job_id);
  }
  const std::string best_plan = old_dir + "/" + kPlanFile;
  TRAINYARD_ASSIGN_OR_RETURN(auto text, ReadFile(best_plan));
  json old = json::parse(text, nullptr, false);
  if (!old.is_object()) return Internal(best_plan + " is not a JSON object");
  json rv = json::object();
  if (auto t = ReadFile(old_dir + "/rendezvous.json"); t.ok()) {
    rv = json::parse(*t, nullptr, false);
  }
  json mine;
  for (const json& r : old.value("replicas", json::array())) {
    if (r.value("workDir", "") == spec.work_dir) mine = r;
  }
  if (mine.is_null()) return FailedPrecondition(best_plan + " does not plan " + spec.work_dir);
  json run = old["run"];
  // Peers keep the addresses they rendezvoused with.
  if (rv.is_object() && run.contains("tasks")) {
    for (auto& t : run["tasks"]) {
      const std::string name =
          t.value("type", "") + "-replica-" + std::to_string(t.value("index", 0));
      if (rv.contains(name)) t["address"] = rv[name];
    }
  }
  const int task = mine.value("task", 0);
  if (run.contains("tasks") && task < static_cast<int>(run["tasks"].size())) {
    run["tasks"][task]["address"] = "";  // this one rendezvouses again
  }
  GangSpec gs;
  GangSpec::Shape sh;
  // The stored shape is already in Slurm's units: undo the scales so LaunchGang reapplies them.
  const int cpus = mine.value("cpus", 1);
  sh.cpu_millis = static_cast<int64_t>(cpus * 1000 / std::max(options_.cpu_scale, 1e-9));
  sh.memory_bytes = static_cast<int64_t>(mine.value("memPerCpuMb", 1) * cpus * 1048576.0 /
                                         std::max(options_.memory_scale, 1e-9));
  const std::string gres = mine.value("gpus", "");
  if (!gres.empty()) {
    const size_t colon = gres.rfind(':');
    sh.gpus = std::atoi(gres.c_str() + (colon == std::string::npos ? 0 : colon + 1));
    if (colon != std::string::npos) {
      const std::string type = gres.substr(0, colon);
      for (const auto& [aip, slurm] : options_.gpu_types) {
        if (slurm == type) sh.gpu_type = aip;
      }
    }
  }
  gs.shapes.push_back(sh);
  gs.run_plan_json = run.dump();
  if (old.contains("labels") && old["labels"].is_object()) {
    for (const auto& [k, v] : old["labels"].items()) {
      if (v.is_string()) gs.labels[k] = v.get<std::string>();
    }
  }
  ReplicaSpec one = spec;
  return LaunchGang(std::span<const ReplicaSpec>(&one, 1), gs, nullptr);
}

Status SlurmExecutor::RestartInPlace(const ReplicaSpec& given, const std::shared_ptr<Gang>& gang) {
  ReplicaSpec spec = given;
  if (spec.work_dir.empty()) spec.work_dir = WorkDirFor(spec.key);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return FailedPrecondition("executor is shut down");
    if (replicas_.count(spec.key) != 0) {
      return AlreadyExists("replica " + spec.key.TaskName() + " of job " + spec.key.job_id +
                           " is already running");
    }
  }
  // The ended step's files stay until the driver acts on the request (it removes them, and
  // the driver is the one who knows when its old step is done with them).
  struct stat ended_exit;
  if (::stat(Join(spec.work_dir, kExitFile).c_str(), &ended_exit) != 0) {
    return FailedPrecondition("the ended step of " + spec.key.TaskName() + " left no " + kExitFile);
  }
  TRAINYARD_RETURN_IF_ERROR(GiveMetricFile(spec));
  spec.cgroup_root.clear();
  TRAINYARD_RETURN_IF_ERROR(WriteFileAtomic(Join(spec.work_dir, kSpecFile), SpecToJson(spec)));
  auto r = NewReplica(spec, gang);
  r->relaunch_pending = true;
  r->ended_exit_inode = ended_exit.st_ino;
  {
    std::lock_guard<std::mutex> lock(mu_);
    replicas_[spec.key] = std::move(r);
  }
  // Between the two: the restart is recorded (and counted: the spec holds the attempt) and
  // its driver not told. A daemon that dies here tells it on its next start (Recover).
  TY_FAILPOINT("executor.slurm.restart.before_tell");
  TellDriver(*gang, SlurmControlLine({"restart", spec.key.TaskName(), spec.attempt}));
  TY_FAILPOINT("executor.slurm.restart.after_tell");
  TY_LOG_INFO(kLog, "restarting {} of job {} in place in Slurm job {} (attempt {})",
              spec.key.TaskName(), spec.key.job_id, gang->slurm_id, spec.attempt);
  Wake();
  return Status::Ok();
}

void SlurmExecutor::TellDriver(const Gang& gang, const std::string& line) {
  const std::string path = Join(gang.dir, kControlFile);
  const std::string text = line + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    TY_LOG_WARN(kLog, "cannot tell the driver of {} \"{}\": {}", gang.name, line,
                std::strerror(errno));
  }
  if (fd >= 0) ::close(fd);
}

void SlurmExecutor::Scancel(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::lock_guard<std::mutex> lock(mu_);
  if (std::find(cancel_queue_.begin(), cancel_queue_.end(), argv) != cancel_queue_.end()) return;
  cancel_queue_.push_back(std::move(argv));
  cancel_cv_.notify_one();
}

void SlurmExecutor::CancelLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cancel_cv_.wait(lock, [&] { return stop_ || !cancel_queue_.empty(); });
    // At shutdown the ones queued still run: a cancel asked for is carried out.
    if (cancel_queue_.empty()) return;
    std::vector<std::string> argv = std::move(cancel_queue_.front());
    cancel_queue_.pop_front();
    lock.unlock();
    auto res = RunCommand(argv, SlurmClientEnv(), kCommandTimeout);
    if (!res.ok()) {
      TY_LOG_WARN(kLog, "{}: {}", ShellJoin(argv), res.status().message());
    } else if (res->exit_code != 0) {
      TY_LOG_WARN(kLog, "{}: {}", ShellJoin(argv), CommandError(*res));
    }
    lock.lock();
  }
}

void SlurmExecutor::Kill(const ReplicaKey& key, Duration grace, const std::string& reason) {
  std::shared_ptr<SReplica> r;
  std::shared_ptr<Gang> gang;
  bool whole_gang = false;
  bool running = false;  // squeue last said RUNNING (its steps may be up)
  bool ended = false;    // Slurm's job ended already (its exits are on their way)
  std::string slurm_id;  // "" while sbatch has not answered
  const int64_t now = MonotonicMicros();
  if (grace < 0) grace = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = replicas_.find(key);
    if (it == replicas_.end()) return;
    r = it->second;
    gang = r->gang;
    if (r->kill_requested && r->hard_kill_at != 0 && r->hard_kill_at <= now + grace) return;
    r->kill_requested = true;
    if (!reason.empty()) r->stop_reason = reason;
    r->hard_kill_at = now + grace;
    whole_gang = std::all_of(gang->members.begin(), gang->members.end(), [&](const ReplicaKey& k) {
      auto m = replicas_.find(k);
      return m == replicas_.end() || m->second->kill_requested;
    });
    running = gang->seen && gang->state == "RUNNING";
    ended = gang->ended;
    slurm_id = gang->slurm_id;
    if (whole_gang) {
      if (gang->hard_cancel_at == 0 || gang->hard_cancel_at > now + grace) {
        gang->hard_cancel_at = now + grace;
      }
    }
    fast_polls_ = 4;
    next_squeue_ = 0;
  }
  if (!reason.empty()) {
    Status s = WriteFileAtomic(Join(r->work_dir, kStopReasonFile), reason, /*durable=*/false);
    if (!s.ok()) TY_LOG_WARN(kLog, "{}", s.ToString());
  }
  Status s = WriteFileAtomic(Join(r->work_dir, kKillFile), std::to_string(grace) + "\n",
                             /*durable=*/false);
  if (!s.ok()) TY_LOG_WARN(kLog, "{}", s.ToString());
  // Not submitted yet: the poll that learns its id cancels it (hard_cancel_at is set).
  if (slurm_id.empty() || ended) return;
  TY_LOG_INFO(kLog, "stopping {} of job {} (Slurm job {}, grace {})", key.TaskName(), key.job_id,
              slurm_id, FormatDuration(grace));
  if (whole_gang) {
    // Only a job squeue saw running gets its signal here. Any other may have started since
    // the last poll (a plain scancel would then give its trainers KillWait, not the grace),
    // and `scancel -s TERM` of a pending job retries until scancel's own timeout: the poll
    // this Kill brings forward picks the signal from the job's state then.
    if (running) {
      // Never --full: that kills the driver, and Slurm then SIGKILLs every step at once.
      Scancel({"-s", "TERM", slurm_id});
      std::lock_guard<std::mutex> lock(mu_);
      gang->cancel_sent = true;
    }
  } else if (auto info = ReadFile(Join(r->work_dir, kSlurmReplicaFile)); info.ok()) {
    json j = json::parse(*info, nullptr, false);
    if (j.is_object() && j.contains("stepId")) {
      Scancel({"-s", "TERM", slurm_id + "." + j.value("stepId", "")});
      std::lock_guard<std::mutex> lock(mu_);
      r->term_sent = true;
    }
  }
  Wake();
}

std::vector<RecoveredReplica> SlurmExecutor::Recover(const std::vector<ReplicaKey>& keys) {
  std::vector<RecoveredReplica> found;
  std::map<std::string, std::shared_ptr<Gang>> by_dir;
  for (const ReplicaKey& key : keys) {
    const std::string dir = WorkDirFor(key);
    auto text = ReadFile(Join(dir, kSpecFile));
    if (!text.ok()) continue;  // never launched
    auto spec = SpecFromJson(*text);
    if (spec.ok()) {
      spec->work_dir = dir;
    } else {
      TY_LOG_WARN(kLog, "cannot recover {}: {}", dir, spec.status().ToString());
      spec = ReplicaSpec();
    }
    spec->key = key;
    // The newest gang that planned this replica.
    const std::string run_dir = RunDirOf(options_.jobs_dir, key);
    const std::string gang_dir = NewestGangDir(run_dir, dir);
    RecoveredReplica rec;
    auto r = std::make_shared<SReplica>();
    r->key = key;
    r->work_dir = dir;
    r->tail.key = key;
    r->tail.work_dir = dir;
    r->tail.metric_tag = spec->metric_tag;
    r->tail.metric_file = MetricFileOf(*spec);
    r->tail.attempt = spec->attempt;
    r->tail.LoadOffset();
    std::shared_ptr<Gang>& gang = by_dir[gang_dir];
    if (!gang) {
      gang = std::make_shared<Gang>();
      gang->dir = gang_dir;
      gang->submitted_at = MonotonicMicros();
      if (auto g = ReadFile(Join(gang_dir, kGangFile)); g.ok()) {
        json j = json::parse(*g, nullptr, false);
        if (j.is_object()) {
          gang->name = j.value("name", "");
          gang->slurm_id = j.value("jobId", "");
        }
      } else if (!gang_dir.empty() && FileExists(Join(gang_dir, kScriptFile))) {
        // The daemon stopped between the batch script and gang.json: sbatch never ran.
        if (auto p = ReadFile(Join(gang_dir, kPlanFile)); p.ok()) {
          json j = json::parse(*p, nullptr, false);
          if (j.is_object()) gang->name = j.value("name", "");
        }
      }
      // Its start was told before the daemon stopped: not again on re-attaching.
      if (!gang_dir.empty() && FileExists(Join(gang_dir, kDriverOut))) gang->told = "RUNNING";
      if (gang_dir.empty() || gang->name.empty()) {
        gang->ended = true;  // nothing was submitted: the replica never started
        gang->state = "NOT_SUBMITTED";
      } else if (gang->slurm_id.empty()) {
        gang->unconfirmed = true;  // the next squeue (with no sbatch in flight) decides
      } else {
        gang->recovered = true;
      }
      if (auto p = ReadFile(Join(gang_dir, kPlanFile)); p.ok() && !gang_dir.empty()) {
        json j = json::parse(*p, nullptr, false);
        if (j.is_object() && j.contains("replicas")) {
          gang->tasks = static_cast<int>(j["replicas"].size());
          gang->in_place = j.value("restartInPlace", false);
        }
        if (j.is_object()) {
          gang->partition = PartitionOf(j.value("slurmPartition", ""));
        }
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      gang->members.push_back(key);
    }
    r->gang = gang;
    if (auto kill_text = ReadFile(Join(dir, kKillFile)); kill_text.ok()) {
      r->kill_requested = true;
      r->hard_kill_at = MonotonicMicros() + std::max<Duration>(0, std::atoll(kill_text->c_str()));
      if (auto reason = ReadFile(Join(dir, kStopReasonFile)); reason.ok()) {
        r->stop_reason = *reason;
      }
    }
    rec.kill_requested = r->kill_requested;
    rec.stop_reason = r->stop_reason;
    // A restart in place recorded (the spec is at its new attempt, and counted) that the
    // driver had not carried out when the daemon stopped: the ended step's report, of an
    // older attempt, is still there. The decision stands and the driver is told again (it
    // ignores a repeat); the old report is not this attempt's end (slurm_control.h).
    const int planned = PlannedAttempt(gang_dir, dir);
    const bool retell =
        !gang->ended && gang->in_place && StaleExitIn(dir, spec->attempt, planned, r.get());
    rec.spec = std::move(spec).value();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (replicas_.count(key) != 0) {
        rec.running = true;
        found.push_back(std::move(rec));
        continue;
      }
      replicas_[key] = r;
      if (!gang->ended) gangs_.insert(gang);
    }
    // An exit report of an earlier allocation's step (CurrentExitReport) does not end it.
    auto exit_text = ReadFile(Join(dir, kExitFile));
    const bool exit_current =
        exit_text.ok() && !SlurmExitIsStale(ExitReportAttempt(*exit_text), rec.spec.attempt);
    rec.running = retell || (!gang->ended && !exit_current);
    TY_LOG_INFO(kLog, "{} of job {}: {}", key.TaskName(), key.job_id,
                rec.running ? "re-attached to Slurm job " + gang->slurm_id
                            : std::string("ended while the daemon was down"));
    if (retell) {
      TY_LOG_INFO(kLog,
                  "{} of job {}: its restart in place (attempt {}) was not carried out yet; "
                  "asking its driver again",
                  key.TaskName(), key.job_id, rec.spec.attempt);
      TellDriver(*gang, SlurmControlLine({"restart", key.TaskName(), rec.spec.attempt}));
    }
    found.push_back(std::move(rec));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    next_squeue_ = 0;
    recovered_ = true;
  }
  Wake();
  return found;
}

std::string SlurmExecutor::CurrentMetricFile(const ReplicaKey& key) const {
  ReplicaSpec spec;
  spec.work_dir = WorkDirFor(key);
  if (auto text = ReadFile(Join(spec.work_dir, kSpecFile)); text.ok()) {
    if (auto parsed = SpecFromJson(*text); parsed.ok()) {
      spec.env = std::move(parsed->env);
      spec.attempt = parsed->attempt;
    }
  }
  return MetricFileOf(spec);
}

std::vector<MetricRecord> SlurmExecutor::ReplicaMetrics(const ReplicaKey& key,
                                                        const std::string& tag) {
  auto text = ReadMetricFile(CurrentMetricFile(key));
  if (!text) return {};
  return ParseMetricFile(*text, tag);
}

std::vector<std::string> SlurmExecutor::ReplicaMetricTags(const ReplicaKey& key) {
  auto text = ReadMetricFile(CurrentMetricFile(key));
  if (!text) return {};
  return MetricTagsInFile(*text);
}

void SlurmExecutor::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  Wake();
  submit_cv_.notify_all();
  cancel_cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
  if (submitter_.joinable()) submitter_.join();
  if (canceller_.joinable()) canceller_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, r] : replicas_) r->tail.CloseLog();
  replicas_.clear();
  gangs_.clear();
}

void SlurmExecutor::StartSqueue() {
  // Gangs whose sbatch may or may not have run: whether one is in flight is asked before
  // squeue starts, so a job it submitted is in this squeue's answer.
  SqueueRun run;
  std::vector<std::vector<ReplicaKey>> members;
  {
    std::lock_guard<std::mutex> lock(mu_);
    run.check_orphans = recovered_ && !orphans_checked_;  // the first squeue after Recover
    for (const auto& g : gangs_) {
      if (g->unconfirmed && !g->ended) {
        run.unconfirmed.push_back(g);
        members.push_back(g->members);
      }
    }
  }
  for (size_t i = 0; i < run.unconfirmed.size(); ++i) {
    Gang* g = run.unconfirmed[i].get();
    run.free_before[g] = !SbatchInFlight(g->dir);
    if (run.free_before[g]) run.ran[g] = GangRan(*g, members[i]);  // may need submitting
  }
  run.began = MonotonicMicros();
  std::vector<std::string> argv = {"squeue", "-h",  "-u", user_,
                                   "-t",     "all", "-o", "%i|%T|%r|%N|%j"};
  run.result = std::async(std::launch::async, [this, argv] {
    auto res = RunCommand(argv, SlurmClientEnv(), kCommandTimeout);
    Wake();  // FinishSqueue reads it at once
    return res;
  });
  squeue_run_ = std::move(run);
}

void SlurmExecutor::FinishSqueue() {
  SqueueRun run = std::move(*squeue_run_);
  squeue_run_.reset();
  auto res = run.result.get();
  const bool check_orphans = run.check_orphans;
  const int64_t began = run.began;
  std::map<Gang*, bool>& free_before = run.free_before;
  std::map<Gang*, bool>& ran = run.ran;
  if (!res.ok() || res->exit_code != 0) {
    // The controller is away: keep every job as it was and try again next poll.
    const std::string why = res.ok() ? CommandError(*res) : res.status().message();
    TY_LOG_WARN(kLog, "squeue failed (jobs are kept as they were): {}", why);
    std::lock_guard<std::mutex> lock(mu_);
    if (problem_.empty()) {
      problem_ = "the Slurm controller does not answer since " + FormatRfc3339(NowMicros()) +
                 " (squeue: " + why + "); jobs are kept as they were";
    }
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    sbatch_away_.clear();  // the next sbatch tries again
    if (!problem_.empty()) {
      TY_LOG_INFO(kLog, "the Slurm controller answers again");
      problem_.clear();
    }
  }
  std::map<std::string, SlurmJobState> by_name;
  for (SlurmJobState& s : ParseSqueue(res->out)) {
    if (!StartsWith(s.name, options_.name_prefix)) continue;
    // A heterogeneous job is one row per component ("123+0", "123+1"): one job for us, live
    // while any component is, pending while any is, and ended as its worst component.
    bool component = false;
    if (size_t plus = s.id.find('+'); plus != std::string::npos) {
      s.id = s.id.substr(0, plus);
      component = true;
    }
    auto it = by_name.find(s.name);
    if (it == by_name.end() || std::atoll(s.id.c_str()) > std::atoll(it->second.id.c_str())) {
      // Ids are reused after a controller reset: the newest job of a name wins.
      by_name[s.name] = std::move(s);
      continue;
    }
    if (!component || it->second.id != s.id) continue;
    SlurmJobState& job = it->second;
    auto rank = [](const SlurmJobState& x) {
      if (x.state == "PENDING") return 0;
      if (!SlurmStateEnded(x.state)) return 1;
      if (x.state == "COMPLETED") return 3;
      return 2;  // failed, cancelled, node failure, ...: the component that decides the end
    };
    if (!s.nodes.empty()) job.nodes += (job.nodes.empty() ? "" : ",") + s.nodes;
    if (rank(s) < rank(job)) {
      job.state = s.state;
      job.reason = s.reason;
    }
  }
  std::vector<std::pair<std::shared_ptr<Gang>, std::string>> to_cancel;
  struct Line {
    ReplicaKey key;
    model::Severity severity;
    std::string message;
  };
  std::vector<Line> lines;
  std::vector<ReplicaKey> allocated;        // members of gangs Slurm started since
  std::vector<std::shared_ptr<Gang>> left;  // gone from squeue before it showed their end
  std::vector<std::pair<std::shared_ptr<Gang>, std::string>> node_failed;  // and their nodes
  const int64_t now = MonotonicMicros();
  std::unique_lock<std::mutex> lock(mu_);
  const std::vector<SlurmJobState> orphans =
      check_orphans ? OrphansLocked(by_name) : std::vector<SlurmJobState>{};
  for (const auto& gang : gangs_) {
    if (gang->ended) continue;
    auto it = by_name.find(gang->name);
    if (it != by_name.end()) {
      const SlurmJobState& s = it->second;
      if (gang->submitting) continue;  // a resubmission's own answer comes first
      gang->unconfirmed = false;
      if (gang->slurm_id.empty()) {
        gang->slurm_id = s.id;  // adopted by name (the daemon died right after sbatch)
        Status w = WriteFileAtomic(Join(gang->dir, kGangFile),
                                   json({{"name", gang->name}, {"jobId", s.id}}).dump());
        if (!w.ok()) TY_LOG_WARN(kLog, "{}", w.ToString());
        TY_LOG_INFO(kLog, "adopted Slurm job {} ({}) by its name", s.id, gang->name);
      } else if (s.id != gang->slurm_id) {
        continue;  // not ours: the name matches but the id does not
      }
      gang->seen = true;
      gang->state = s.state;
      gang->reason = s.reason;
      gang->listed_at = began;
      // What the job's log says of the allocation: the envelope's waste once, why Slurm keeps
      // it waiting (on every change of reason), and where it started.
      const ReplicaKey& first = gang->members.front();
      if (!gang->note.empty()) {
        lines.push_back({first, model::Severity::kWarning, gang->note});
        gang->note.clear();
      }
      // Allocated: Slurm runs it (CONFIGURING = nodes still booting: it waits), or it started
      // and ended between two polls.
      if (!gang->allocated && s.state != "PENDING" && s.state != "CONFIGURING" &&
          (!SlurmStateEnded(s.state) || !s.nodes.empty())) {
        gang->allocated = true;
        allocated.insert(allocated.end(), gang->members.begin(), gang->members.end());
      }
      if (s.state == "PENDING" && s.reason != gang->told) {
        gang->told = s.reason;
        lines.push_back({first, model::Severity::kInfo,
                         "Waiting in Slurm (job " + s.id +
                             (gang->partition.empty() ? "" : ", partition " + gang->partition) +
                             "): " + DescribePendingReason(s.reason) + "."});
      } else if (s.state == "RUNNING" && gang->told != "RUNNING") {
        gang->told = "RUNNING";
        lines.push_back({first, model::Severity::kInfo,
                         "Slurm job " + s.id + " is running on " + s.nodes + "."});
      } else if (SlurmStateEnded(s.state) && gang->told != "RUNNING" && !s.nodes.empty()) {
        // It started and ended between two polls.
        gang->told = "RUNNING";
        lines.push_back({first, model::Severity::kInfo,
                         "Slurm job " + s.id + " ran on " + s.nodes + " (" + s.state + ")."});
      }
      if (SlurmStateEnded(s.state)) {
        gang->ended = true;
        // Never started (cancelled while pending): no launcher's files to wait for.
        gang->ended_at = gang->allocated ? now : now - options_.file_grace;
        if (s.state == "NODE_FAIL") node_failed.emplace_back(gang, s.nodes);
      }
      // Kill requested for all of a gang not known to run when it came (sbatch had not
      // answered, or squeue had not seen it start): a pending or configuring job has no
      // steps to stop gracefully, a running one gets its grace.
      if (!gang->cancel_sent && gang->hard_cancel_at != 0 && !gang->ended) {
        to_cancel.emplace_back(gang, s.state == "RUNNING" ? "TERM" : "");
        gang->cancel_sent = true;
      }
    } else if (gang->unconfirmed) {
      auto f = free_before.find(gang.get());
      if (f == free_before.end() || !f->second) continue;  // an sbatch may still be running
      const bool all_killed =
          std::all_of(gang->members.begin(), gang->members.end(), [&](const ReplicaKey& k) {
            auto m = replicas_.find(k);
            return m == replicas_.end() || m->second->kill_requested;
          });
      if (ran[gang.get()]) {
        // It ran and left the queue (MinJobAge) while nobody watched: its files tell how.
        gang->unconfirmed = false;
        gang->ended = true;
        gang->ended_at = now;
        gang->state = "UNKNOWN";
        gang->reason = "the job left the Slurm queue";
      } else if (all_killed) {
        gang->unconfirmed = false;
        gang->ended = true;
        gang->ended_at = now - options_.file_grace;  // nothing ran: nothing to wait for
        gang->state = "NOT_SUBMITTED";
      } else if (now >= gang->retry_at) {
        // Slurm never got it (the daemon stopped before sbatch ran, or sbatch failed).
        TY_LOG_INFO(kLog, "{}: Slurm has no job of this name and it left no trace: submitting it",
                    gang->name);
        QueueSubmitLocked(gang);
      }
    } else if (!gang->submitting && (gang->seen || gang->recovered ||
                                     now - gang->submitted_at > 60 * kMicrosPerSecond)) {
      // Gone from squeue (MinJobAge passed, or the controller lost it).
      gang->ended = true;
      gang->ended_at = now;
      if (gang->state.empty() || !SlurmStateEnded(gang->state)) {
        gang->state = "UNKNOWN";
        gang->reason = "the job left the Slurm queue";
        if (!gang->slurm_id.empty()) left.push_back(gang);  // sacct may know how it ended
      }
    }
  }
  lock.unlock();
  if (!left.empty() && !options_.sacct.empty()) AskSacct(left);
  for (const auto& [gang, nodes] : node_failed) FindFailedNodes(*gang, nodes);
  for (const ReplicaKey& key : allocated) listener_->OnReplicaAllocated(key);
  for (const Line& l : lines) ServiceLine(l.key, l.severity, l.message);
  for (auto& [gang, sig] : to_cancel) {
    if (sig.empty()) {
      Scancel({gang->slurm_id});
    } else {
      Scancel({"-s", sig, gang->slurm_id});
    }
  }
  for (const SlurmJobState& o : orphans) {
    TY_LOG_WARN(kLog,
                "Slurm job {} ({}, {}{}) has this daemon's name but none of its jobs owns it "
                "(a job store restored from an older backup, or another daemon with the same "
                "jobs_dir): {}",
                o.id, o.name, o.state, o.nodes.empty() ? "" : " on " + o.nodes,
                options_.cancel_orphans ? "cancelling it (slurm.cancel_orphans)"
                                        : "left alone (slurm.cancel_orphans: true cancels it)");
    if (options_.cancel_orphans) Scancel({o.id});
  }
  RefreshPositions();
}

std::vector<SlurmJobState> SlurmExecutor::OrphansLocked(
    const std::map<std::string, SlurmJobState>& by_name) {
  orphans_checked_ = true;
  std::set<std::string> owned;
  for (const auto& g : gangs_) owned.insert(g->name);
  std::vector<SlurmJobState> out;
  for (const auto& [name, s] : by_name) {
    // COMPLETING: it ended, its steps are being cleaned up.
    if (SlurmStateEnded(s.state) || s.state == "COMPLETING" || owned.count(name) != 0) continue;
    out.push_back(s);
  }
  return out;
}

void SlurmExecutor::AskSacct(const std::vector<std::shared_ptr<Gang>>& left) {
  std::string ids;
  for (const auto& g : left) ids += (ids.empty() ? "" : ",") + g->slurm_id;
  std::vector<std::string> argv = {"sacct"};
  if (options_.sacct == "jobcomp") argv.push_back("-c");
  // -D: every job of a reused id, told apart by the name (D17); -X: the allocation only.
  for (const char* a : {"-X", "-D", "-P", "-n", "-o", "JobID,JobName,State,NodeList", "-j"}) {
    argv.push_back(a);
  }
  argv.push_back(ids);
  auto res = RunCommand(argv, SlurmClientEnv(), kCommandTimeout);
  if (!res.ok() || res->exit_code != 0) {
    TY_LOG_WARN(kLog, "{}: {} (the replicas' files decide)", ShellJoin(argv),
                res.ok() ? CommandError(*res) : res.status().message());
    return;
  }
  // A heterogeneous job's components ("12+0", "12+1"): ended as its worst one.
  std::map<std::pair<std::string, std::string>, SlurmJobState> verdict;  // (id, name)
  for (SlurmJobState& row : ParseSacct(res->out)) {
    if (size_t plus = row.id.find('+'); plus != std::string::npos) row.id.resize(plus);
    auto key = std::make_pair(row.id, row.name);
    auto it = verdict.find(key);
    if (it == verdict.end()) {
      verdict.emplace(key, std::move(row));
    } else {
      if (!row.nodes.empty()) it->second.nodes += (it->second.nodes.empty() ? "" : ",") + row.nodes;
      if (it->second.state == "COMPLETED" && row.state != "COMPLETED") {
        it->second.state = row.state;
        it->second.reason = row.reason;
      }
    }
  }
  struct Line {
    ReplicaKey key;
    std::string message;
  };
  std::vector<Line> lines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& g : left) {
      auto it = verdict.find({g->slurm_id, g->name});
      if (it == verdict.end() || !SlurmStateEnded(it->second.state)) continue;
      const SlurmJobState& v = it->second;
      g->state = v.state;
      g->reason = v.reason.empty() ? "from sacct" : v.reason + ", from sacct";
      TY_LOG_INFO(kLog, "{} (Slurm job {}) ended {} (sacct)", g->name, g->slurm_id, v.state);
      if (!g->members.empty()) {
        lines.push_back(
            {g->members.front(), "Slurm job " + g->slurm_id + " ended " + v.state +
                                     (v.reason.empty() ? "" : " (" + v.reason + ")") +
                                     (v.nodes.empty() ? "" : " on " + v.nodes) +
                                     " while nobody watched; Slurm's accounting (sacct) says so."});
      }
    }
  }
  for (const Line& l : lines) ServiceLine(l.key, model::Severity::kInfo, l.message);
}

void SlurmExecutor::RefreshPositions() {
  std::set<std::string> partitions;
  const int64_t now = MonotonicMicros();
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool unlisted = false;
    for (const auto& g : gangs_) {
      if (g->ended || g->slurm_id.empty() || g->state != "PENDING" || g->partition.empty()) {
        continue;
      }
      partitions.insert(g->partition);
      unlisted =
          unlisted || std::none_of(pending_.begin(), pending_.end(),
                                   [&](const SlurmPendingJob& j) { return j.id == g->slurm_id; });
    }
    if (partitions.empty()) {
      pending_.clear();
      return;
    }
    const Duration wait = unlisted ? options_.poll_interval : options_.position_interval;
    if (positions_taken_ && now - positions_at_ < wait) return;
    positions_taken_ = true;
    positions_at_ = now;
  }
  std::string list;
  for (const std::string& p : partitions) list += (list.empty() ? "" : ",") + p;
  // Everyone's pending jobs in those partitions (only ours where PrivateData hides others').
  auto res = RunCommand({"squeue", "-h", "-t", "PD", "-p", list, "-o", "%i|%Q|%P"},
                        SlurmClientEnv(), kCommandTimeout);
  if (!res.ok() || res->exit_code != 0) {
    TY_LOG_WARN(kLog, "squeue -t PD -p {}: {}", list,
                res.ok() ? CommandError(*res) : res.status().message());
    return;
  }
  std::vector<SlurmPendingJob> pending = ParsePendingJobs(res->out);
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = std::move(pending);
}

Status SlurmExecutor::RouteGang(const std::string& project,
                                const std::map<std::string, std::string>& labels,
                                std::string* partition, std::string* account) const {
  partition->clear();
  if (auto l = labels.find("slurm-partition"); l != labels.end() && !l->second.empty()) {
    const auto& allowed = options_.label_partitions;
    if (std::find(allowed.begin(), allowed.end(), l->second) == allowed.end()) {
      std::string have;
      for (const auto& p : allowed) have += (have.empty() ? "" : ", ") + p;
      return InvalidArgument("the label slurm-partition asks for partition \"" + l->second +
                             "\", which is not one a job may choose (slurm.label_partitions: " +
                             (have.empty() ? std::string("none") : have) + ")");
    }
    *partition = l->second;
  }
  auto a = options_.project_accounts.find(project);
  *account = a != options_.project_accounts.end() ? a->second : "";
  return Status::Ok();
}

void SlurmExecutor::EnforceDeadlines() {
  const int64_t now = MonotonicMicros();
  std::vector<std::string> hard;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& gang : gangs_) {
      if (gang->ended || gang->slurm_id.empty()) continue;
      if (gang->hard_cancel_at != 0 && now >= gang->hard_cancel_at) {
        hard.push_back(gang->slurm_id);
        gang->hard_cancel_at = now + 30 * kMicrosPerSecond;  // again later if still there
      }
    }
    for (const auto& [key, r] : replicas_) {
      if (!r->kill_requested || r->hard_kill_at == 0 || now < r->hard_kill_at) continue;
      if (r->gang->ended || r->gang->slurm_id.empty() || r->gang->hard_cancel_at != 0) continue;
      r->hard_kill_at = now + 30 * kMicrosPerSecond;
      if (auto info = ReadFile(Join(r->work_dir, kSlurmReplicaFile)); info.ok()) {
        json j = json::parse(*info, nullptr, false);
        if (j.is_object() && j.contains("stepId")) {
          hard.push_back(r->gang->slurm_id + "." + j.value("stepId", ""));
        }
      }
    }
  }
  for (const std::string& id : hard) Scancel({id});
}

void SlurmExecutor::MonitorLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    const int64_t now = MonotonicMicros();
    // With no gang, only the one orphan check after Recover needs an answer; one squeue at a
    // time (a quick poll asked for meanwhile starts when it is answered).
    bool poll_slurm = (!gangs_.empty() || (recovered_ && !orphans_checked_)) &&
                      now >= next_squeue_ && !squeue_run_;
    if (poll_slurm) {
      Duration next = options_.poll_interval;
      if (fast_polls_ > 0) {
        next = std::min<Duration>(next, kMicrosPerSecond);
        --fast_polls_;
      }
      next_squeue_ = now + next;
    }
    lock.unlock();
    if (poll_slurm) StartSqueue();
    if (squeue_run_ &&
        squeue_run_->result.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      FinishSqueue();
    }
    EnforceDeadlines();
    std::vector<std::shared_ptr<SReplica>> snapshot;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto& [key, r] : replicas_) snapshot.push_back(r);
    }
    bool printing = false;
    for (auto& r : snapshot) {
      r->tail.delivered_lines = false;
      Poll(*r);
      printing = printing || r->tail.delivered_lines;
    }
    lock.lock();
    // Gangs whose members all reported their exits are done.
    for (auto it = gangs_.begin(); it != gangs_.end();) {
      const auto& g = *it;
      const bool members_left =
          std::any_of(g->members.begin(), g->members.end(), [&](const ReplicaKey& k) {
            auto m = replicas_.find(k);
            return m != replicas_.end() && m->second->gang == g;
          });
      it = (!members_left && g->ended) ? gangs_.erase(it) : std::next(it);
    }
    if (stop_) break;
    lock.unlock();
    const Duration interval = printing ? std::min<Duration>(options_.log_poll_interval, 20 * 1000)
                                       : options_.log_poll_interval;
    pollfd pfd{wake_fd_, POLLIN, 0};
    ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(1, interval / 1000)));
    uint64_t drained;
    [[maybe_unused]] ssize_t n = ::read(wake_fd_, &drained, sizeof drained);
    lock.lock();
  }
  lock.unlock();
  squeue_run_.reset();  // waits for a squeue still under way (its answer is not read)
}

// The node a replica's launcher said it runs on (slurm.json; "" unknown).
std::string ReplicaNode(const std::string& work_dir) {
  auto text = ReadFile(Join(work_dir, kSlurmReplicaFile));
  if (!text.ok()) return "";
  json j = json::parse(*text, nullptr, false);
  return j.is_object() ? j.value("node", "") : "";
}

void SlurmExecutor::FindFailedNodes(Gang& gang, const std::string& nodes) {
  // squeue may list no nodes for an ended job: then every node's state.
  std::vector<std::string> argv = {"sinfo", "-h", "-N", "-o", "%N|%T"};
  if (!nodes.empty()) argv.insert(argv.end(), {"-n", nodes});
  auto res = RunCommand(argv, SlurmClientEnv(), kCommandTimeout);
  if (!res.ok() || res->exit_code != 0) return;
  std::set<std::string> failed;
  for (const std::string& line : Split(res->out, '\n')) {
    auto f = Split(Trim(line), '|');
    if (f.size() < 2) continue;
    // DOWN, DOWN*, FAIL, or any state of a node that does not respond (a trailing '*').
    if (f[1].find("DOWN") != std::string::npos || f[1].find("FAIL") != std::string::npos ||
        EndsWith(f[1], "*")) {
      failed.insert(f[0]);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  gang.failed_nodes = std::move(failed);
}

bool SlurmExecutor::WaitsForLostPeer(const SReplica& r) {
  std::set<std::string> failed;
  std::vector<std::shared_ptr<SReplica>> peers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Gang& g = *r.gang;
    const bool infrastructure =
        g.state == "NODE_FAIL" || g.state == "PREEMPTED" || g.state == "BOOT_FAIL";
    if (!g.ended || !infrastructure || r.kill_requested ||
        MonotonicMicros() - g.ended_at >= 2 * options_.file_grace) {
      return false;
    }
    failed = g.failed_nodes;
    for (const ReplicaKey& k : g.members) {
      auto m = replicas_.find(k);
      if (k != r.key && m != replicas_.end() && m->second->gang == r.gang && !m->second->gone) {
        peers.push_back(m->second);
      }
    }
  }
  // Lost with its node: on a node Slurm says failed, or (none known) without a report of its
  // launcher's, as a step whose slurmd died leaves none. `r` itself on a failed node waits for
  // none.
  if (!failed.empty() && failed.count(ReplicaNode(r.work_dir)) != 0) return false;
  return std::any_of(peers.begin(), peers.end(), [&](const std::shared_ptr<SReplica>& m) {
    if (!failed.empty()) return failed.count(ReplicaNode(m->work_dir)) != 0;
    auto e = CurrentExitReport(m->work_dir, m->tail.attempt);
    return !e.ok() || e->phase == "lost";  // none, or its driver's: the launcher never wrote
  });
}

bool SlurmExecutor::Poll(SReplica& r) {
  if (r.relaunch_pending) {
    // The ended step's report is still there while exit.json names an older attempt than the
    // spec's; only a report naming none (an older launcher's) is told apart by its inode,
    // which a filesystem may give the new step's report once the driver removed the old one.
    struct stat st;
    bool old_exit = false;
    if (::stat(Join(r.work_dir, kExitFile).c_str(), &st) == 0) {
      auto text = ReadFile(Join(r.work_dir, kExitFile));
      const int reported = text.ok() ? ExitReportAttempt(*text) : -1;
      old_exit = reported >= 0 ? SlurmExitIsStale(reported, r.tail.attempt)
                               : st.st_ino == r.ended_exit_inode;
    }
    if (old_exit) {
      std::lock_guard<std::mutex> lock(mu_);
      // The driver never got to it (its job ended): the replica did not start again.
      if (!r.gang->ended || MonotonicMicros() - r.gang->ended_at < options_.file_grace) {
        return false;
      }
      r.gone = true;
    } else {
      r.relaunch_pending = false;
    }
  }
  if (!r.gone) {
    // The launcher writes exit.json last; the gang's end (plus a grace for the files to show
    // on a network filesystem) covers launchers that never could. One of an older attempt
    // (a step of an allocation given up, still running on a node whose slurmd died) is not
    // this attempt's: ignored.
    // Read once per poll: whether it is there, whose it is and what it says.
    auto exit_text = ReadFile(Join(r.work_dir, kExitFile));
    const bool stale =
        exit_text.ok() && SlurmExitIsStale(ExitReportAttempt(*exit_text), r.tail.attempt);
    const bool exit_here = exit_text.ok() && !stale;
    if (stale && !r.stale_exit_logged) {
      r.stale_exit_logged = true;
      TY_LOG_WARN(kLog,
                  "{} of job {}: ignoring an exit report of an older attempt in {} (a step of "
                  "an allocation given up still ran); waiting for attempt {}",
                  r.key.TaskName(), r.key.job_id, r.work_dir, r.tail.attempt);
    }
    if (exit_here) {
      // A trainer stopped by a SIGTERM that Trainyard did not send (the node failed, the job
      // was preempted) reports a clean exit of its own: wait for Slurm's verdict on the
      // allocation before believing it (ReportExit).
      std::lock_guard<std::mutex> lock(mu_);
      if (r.kill_requested || r.gang->ended) {
        r.gone = true;
      } else if (auto e = ExitFromJson(*exit_text);
                 e.ok() && e->phase == "lost" && !e->stop_requested) {
        // Its driver saw the launcher killed in a step Slurm did not end: believed once a
        // squeue that began after the report was seen still lists the job (then a restart in
        // place is decided from its state), or says how it ended (its node failed meanwhile).
        if (r.exit_seen_at == 0) {
          r.exit_seen_at = MonotonicMicros();
          next_squeue_ = 0;
        }
        r.gone = r.gang->listed_at > r.exit_seen_at;
      } else if (e.ok() && !e->stop_requested && r.gang->in_place && MayBeRestarted(*e) &&
                 (r.gang->state.empty() || r.gang->state == "PENDING" ||
                  r.gang->state == "CONFIGURING")) {
        // Killed by a signal nobody at Trainyard sent, while the last squeue said the job
        // waits: that squeue is older than the step's start. Whether the job runs decides a
        // restart in place (RestartsWholeRun): believed once a squeue that began after the
        // exit was seen says how the job is (at most 6 polls, if the controller is away).
        const int64_t now = MonotonicMicros();
        if (r.exit_seen_at == 0) {
          r.exit_seen_at = now;
          next_squeue_ = 0;
        }
        r.gone = r.gang->listed_at > r.exit_seen_at ||
                 now - r.exit_seen_at >= 6 * options_.poll_interval + options_.file_grace;
      } else if (!e.ok() || !e->stop_requested) {
        r.gone = true;
      } else {
        if (r.exit_seen_at == 0) r.exit_seen_at = MonotonicMicros();
        r.gone =
            MonotonicMicros() - r.exit_seen_at >= 6 * options_.poll_interval + options_.file_grace;
        fast_polls_ = std::max(fast_polls_, 2);
      }
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      r.gone = r.gang->ended && MonotonicMicros() - r.gang->ended_at >= options_.file_grace;
    }
  }
  if (r.gone && WaitsForLostPeer(r)) r.gone = false;
  r.tail.PollRunning(listener_);
  const bool drained = r.tail.TailLog(listener_, r.gone);
  r.tail.PollMetrics(listener_, r.gone, options_.metrics_interval);
  if (!r.gone) return false;
  if (!drained && ++r.drain_retries < kMaxDrainRetries) return false;
  ReportExit(r);
  return true;
}

// Slurm ended the job OUT_OF_MEMORY (its task/cgroup killed the batch step for memory) and
// the replica has no report of its own, or only the driver's "lost": an OOM kill, as the
// launcher reports one from the step's memory group (compat §12: not restarted).
bool SlurmOutOfMemory(const std::string& state, const ReplicaExit* reported) {
  return state == "OUT_OF_MEMORY" && (reported == nullptr || reported->phase == "lost");
}

ReplicaExit SlurmOomExit(const std::string& slurm_id) {
  ReplicaExit exit;
  exit.phase = "run";
  exit.exit_code = 137;  // 128 + SIGKILL, what the kernel's OOM killer sends
  exit.signal = 9;
  exit.oom_killed = true;
  exit.message = "Slurm ended the job " + slurm_id + " OUT_OF_MEMORY";
  return exit;
}

void SlurmExecutor::ReportExit(SReplica& r) {
  r.tail.CloseLog();
  ReplicaExit exit;
  auto parsed = r.relaunch_pending ? Result<ReplicaExit>(NotFound("not restarted"))
                                   : CurrentExitReport(r.work_dir, r.tail.attempt);
  const bool reported = parsed.ok();
  std::string state;
  std::string reason;
  std::string slurm_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    state = r.gang->state;
    reason = r.gang->reason;
    slurm_id = r.gang->slurm_id;
  }
  // The allocation was lost under the replica: whatever the trainer did when it was told to
  // stop, it did not finish (AI Platform restarts such a replica with the same identity).
  const bool infrastructure =
      state == "NODE_FAIL" || state == "PREEMPTED" || state == "BOOT_FAIL" || state == "DEADLINE";
  // A trainer stopped by a SIGTERM nobody at Trainyard sent (no kill request for it, and not
  // the driver's own stop before the time limit) did not finish either, whatever it exited
  // with: Slurm took the allocation while nobody could tell (the job left squeue and sacct
  // while the daemon was down), or someone cancelled it outside Trainyard.
  const bool unrequested = reported && parsed->phase == "run" && parsed->stop_requested &&
                           parsed->stop_unrequested && !r.kill_requested &&
                           !FileExists(Join(r.gang->dir, kTimeLimitFile));
  // A replica that Slurm stopped because its job ended OUT_OF_MEMORY (the batch step was
  // killed for memory) has no verdict of its own: the job's is its.
  if (SlurmOutOfMemory(state, reported && !unrequested ? &*parsed : nullptr)) {
    exit = SlurmOomExit(slurm_id);
  } else if (reported && !(infrastructure && !r.kill_requested && parsed->stop_requested) &&
             !unrequested) {
    exit = std::move(parsed).value();
  } else if (!reported && state == "REFUSED") {
    exit.exit_code = 1;
    exit.phase = "launch";
    exit.message = reason;
  } else if (reported && !infrastructure) {
    exit.exit_code = -1;
    exit.phase = "lost";
    exit.message = "its trainer was stopped by a SIGTERM that Trainyard did not send (Slurm job " +
                   slurm_id + " " + state +
                   (reason.empty() || reason == "None" ? "" : ", " + reason) + ")";
  } else if (reported) {
    exit.exit_code = -1;
    exit.phase = "lost";
    exit.message = "Slurm ended its allocation (job " + slurm_id + " " + state +
                   (reason.empty() || reason == "None" ? "" : ", " + reason) + ")";
  } else {
    const bool started = FileExists(Join(r.work_dir, kPidFile));
    exit.exit_code = -1;
    exit.phase = started ? "lost" : "launch";
    exit.message = "the Slurm job " + (slurm_id.empty() ? r.gang->name : slurm_id) + " ended (" +
                   (state.empty() ? "UNKNOWN" : state) +
                   (reason.empty() || reason == "None" ? "" : ", " + reason) + ") before " +
                   (started ? "the replica reported how it ended" : "the replica started");
    if (std::string err = LauncherErrorTail(r.work_dir); !err.empty()) {
      exit.message += ": " + err;
    } else if (auto out = ReadFile(Join(r.gang->dir, kDriverOut)); out.ok() && !out->empty()) {
      std::string_view tail = *out;
      if (tail.size() > 1500) tail = tail.substr(tail.size() - 1500);
      exit.message += "; the batch job's output ends: " + SanitizeUtf8(Trim(tail));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    exit.killed_by_request = KilledByRequest(r.kill_requested, reported, exit);
    if (r.kill_requested) exit.stop_reason = r.stop_reason;
    auto it = replicas_.find(r.key);
    if (it != replicas_.end() && it->second.get() == &r) replicas_.erase(it);
  }
  TY_LOG_INFO(kLog, "{} of job {} exited (phase {}, code {}, Slurm job {} {})", r.key.TaskName(),
              r.key.job_id, exit.phase, exit.exit_code, slurm_id, state);
  // Its driver keeps the step's slot while the scheduler decides: a replica killed inside an
  // allocation that still runs may restart in place (Launch from within OnReplicaExit).
  bool tell = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Gang& g = *r.gang;
    tell = g.in_place && !g.ended && !g.slurm_id.empty();
    if (tell && g.state == "RUNNING" && !g.cancel_sent && g.hard_cancel_at == 0 &&
        !r.kill_requested && MayBeRestarted(exit)) {
      in_place_[r.key] = r.gang;
    }
  }
  listener_->OnReplicaExit(r.key, exit);
  bool restarting = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = replicas_.find(r.key);
    restarting = it != replicas_.end() && it->second->gang == r.gang;
    in_place_.erase(r.key);
  }
  if (tell && !restarting) {
    TellDriver(*r.gang, SlurmControlLine({"release", r.key.TaskName(), r.tail.attempt}));
  }
}

}  // namespace

std::unique_ptr<Executor> NewSlurmExecutor(const SlurmOptions& options,
                                           ExecutorListener* listener) {
  return std::make_unique<SlurmExecutor>(options, listener);
}

}  // namespace trainyard::executor
