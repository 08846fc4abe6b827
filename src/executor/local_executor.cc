// The local-process executor: one trainyard-launcher per replica, started in its own session,
// watched by one monitor thread that tails the replicas' log files and notices their exits.
//
// Threads: callers (Launch, Kill, Recover, RunningCount) touch the replica table under mu_ and
// return at once: Launch only queues the start. The starter thread does the slow part (the work
// dir, the spec written durably, posix_spawn of the launcher) off every caller's lock, so the
// scheduler's mutex is never held across file system work or a process start. The monitor
// thread owns each replica's tailing state and is the only caller of the listener, which is
// what keeps one replica's events in order (a start that failed, or was stopped before it
// happened, reaches the listener through the monitor too).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cgroup_v1.h"
#include "hypertune_metrics.h"
#include "proc_util.h"
#include "protocol_private.h"
#include "trainyard/core/failpoint.h"
#include "trainyard/core/log.h"
#include "trainyard/core/util.h"
#include "trainyard/executor/executor.h"
#include "trainyard/executor/launcher_protocol.h"
#include "work_dir_tail.h"

extern char** environ;

namespace trainyard::executor {
namespace {

constexpr const char* kLog = "exec";
// Beside the work dirs of a gang's members (LocalExecutor::GangRecord).
constexpr const char* kGangSpecsFile = "gang-specs.json";

std::string ParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// The spec of `key` in a gang's record (NOT_FOUND when there is no record or no such member).
Result<std::string> GangMemberSpec(const std::string& record_path, const ReplicaKey& key) {
  auto text = ReadFile(record_path);
  if (!text.ok()) return text.status();
  const nlohmann::json all = nlohmann::json::parse(*text, nullptr, false);
  if (!all.is_array()) return Internal(record_path + " is not a list of replica specs");
  for (const nlohmann::json& member : all) {
    std::string one = member.dump();
    auto spec = SpecFromJson(one);
    if (spec.ok() && spec->key == key) return one;
  }
  return NotFound("no " + key.TaskName() + " in " + record_path);
}
// After the grace period the executor SIGKILLs the trainer's processes itself and gives the
// launcher this long to write exit.json before the launcher is SIGKILLed too.
constexpr Duration kLauncherReportGrace = 5 * kMicrosPerSecond;
// After a launcher exits, polls spent retrying lines the store refused before the exit is
// reported anyway (about 10 s at the default interval).
constexpr int kMaxDrainRetries = 500;
// Poll interval while some replica is printing (see MonitorLoop).
constexpr Duration kBusyPollInterval = 5 * 1000;

std::string Join(const std::string& dir, const char* file) { return dir + "/" + file; }

// `<engine> rm -f` of a container whose launcher died without removing it; waits for it.
void RemoveContainer(const ContainerSpec& c) {
  const bool docker = c.engine.size() >= 6 && c.engine.substr(c.engine.size() - 6) == "docker";
  std::vector<std::string> args = {c.engine, "rm", "-f"};
  if (!docker) {
    args.push_back("-t");
    args.push_back("0");
  }
  args.push_back(c.name);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const auto& [k, v] : c.engine_env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    TY_LOG_WARN(kLog, "cannot run {} rm for container {}: {}", c.engine, c.name, std::strerror(rc));
    return;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  TY_LOG_INFO(kLog, "removed container {} of a lost launcher", c.name);
}

// What became of a launcher that ended without writing exit.json. `wait_status`: from waitpid
// when this process reaped it, else -1 (a launcher re-attached after a restart).
std::string LostLauncherMessage(pid_t pid, int wait_status) {
  std::string who = "its launcher (pid " + std::to_string(pid) + ")";
  const std::string tail = " before it reported how the trainer ended";
  if (wait_status >= 0 && WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* abbrev = ::sigabbrev_np(sig);
    return who + " was killed by signal " + std::to_string(sig) +
           (abbrev != nullptr ? std::string(" (SIG") + abbrev + ")" : std::string()) + tail;
  }
  if (wait_status >= 0 && WIFEXITED(wait_status)) {
    return who + " exited with status " + std::to_string(WEXITSTATUS(wait_status)) + tail;
  }
  return who + " exited" + tail;
}

struct Replica {
  // Immutable after creation.
  ReplicaKey key;
  std::string work_dir;
  pid_t pid = 0;            // 0: no launcher is known (recovered dir without launcher.pid)
  uint64_t start_time = 0;  // 0: unknown
  bool is_child = false;    // started by this process (waitpid works)
  // Never started: why ("" for a replica that was started). Its exit is phase "launch".
  std::string not_started;

  // Guarded by LocalExecutor::mu_.
  bool kill_requested = false;
  std::string stop_reason;             // given to Kill()
  int64_t kill_deadline = 0;           // monotonic; SIGKILL the trainer's processes
  int64_t launcher_kill_deadline = 0;  // monotonic; SIGKILL the launcher as well
  bool trainer_swept = false;

  // Monitor thread only.
  bool exited = false;
  int wait_status = -1;  // the launcher's status from waitpid (-1: not reaped here)
  int pid_fd = -1;  // pidfd of the launcher: readable once it exits (wakes the monitor at once)
  int drain_retries = 0;  // polls spent re-delivering the last lines after the launcher exited
  WorkDirTail tail;
};

class LocalExecutor final : public Executor {
 public:
  LocalExecutor(LocalExecutorOptions options, ExecutorListener* listener)
      : options_(std::move(options)), listener_(listener) {
    if (options_.log_poll_interval <= 0) options_.log_poll_interval = 20 * 1000;
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    monitor_ = std::thread([this] { MonitorLoop(); });
    starter_ = std::thread([this] { StarterLoop(); });
  }

  ~LocalExecutor() override {
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
  int RunningCount() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(replicas_.size() + starting_.size());
  }
  std::vector<ReplicaUsage> Usage() override;
  void Shutdown() override;

 private:
  // A replica Launch accepted that the starter has not started yet (guarded by mu_). A Kill
  // meanwhile is recorded here and applied once the launcher exists (or the start is skipped).
  // Every spec of a gang, written (durably, by the starter, before the gang's first launcher
  // starts) beside the members' work dirs. A daemon that dies while it starts the gang finds
  // the members it had not started in it, so a partly started gang is recovered whole (the
  // missing members are lost replicas, restarted with the same identity) rather than failing.
  struct GangRecord {
    std::string path;
    std::string text;
    bool written = false;  // starter thread only
  };
  struct PendingStart {
    ReplicaSpec spec;
    std::shared_ptr<GangRecord> gang;  // null for a lone replica
    bool kill_requested = false;
    int64_t kill_deadline = 0;  // monotonic
    std::string stop_reason;
  };
  Status Enqueue(ReplicaSpec spec, std::shared_ptr<GangRecord> gang);
  void StarterLoop();
  // The text of a replica's hypertune metric file (nullopt when there is none).
  std::optional<std::string> MetricFileOf(const ReplicaKey& key);
  // The slow part of a launch: work dir, spec file, the launcher process. Returns the replica
  // to monitor, or the error that kept it from starting.
  Result<std::shared_ptr<Replica>> Start(ReplicaSpec spec);
  void MonitorLoop();
  // One monitoring step for one replica; returns true when its exit was reported.
  bool Poll(Replica& r);
  bool LauncherGone(Replica& r);
  void EnforceKillDeadlines(Replica& r);
  // <jobs_dir>/<project>/<job>[/trial-<id>]/<task>-replica-<i>
  std::string WorkDirFor(const ReplicaKey& key) const;
  void ReportExit(Replica& r);
  // SIGKILLs every process of the replica's session and every descendant of its launcher;
  // the launcher itself only when include_launcher.
  void Sweep(const Replica& r, bool include_launcher);

  LocalExecutorOptions options_;
  ExecutorListener* const listener_;

  mutable std::mutex mu_;
  std::map<ReplicaKey, std::shared_ptr<Replica>> replicas_;  // guarded by mu_
  // Usage(): per replica, the CPU ticks of each process last seen in its group and of those
  // gone since (so the sampled total never decreases). Guarded by usage_mu_.
  struct CpuSamples {
    std::map<pid_t, uint64_t> live;
    uint64_t gone = 0;
  };
  std::mutex usage_mu_;
  std::map<ReplicaKey, CpuSamples> cpu_samples_;
  bool stop_ = false;                            // guarded by mu_
  std::map<ReplicaKey, PendingStart> starting_;  // guarded by mu_
  std::vector<ReplicaKey> start_queue_;          // guarded by mu_, in Launch order
  std::condition_variable start_cv_;
  std::thread starter_;
  std::thread monitor_;
  int wake_fd_ = -1;  // eventfd: Launch, Kill and Shutdown wake the monitor through it

  void Wake() {
    if (wake_fd_ >= 0) {
      uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
    }
  }
};

std::string LocalExecutor::WorkDirFor(const ReplicaKey& key) const {
  std::string dir = options_.jobs_dir + "/" + key.project + "/" + key.job_id;
  if (!key.trial_id.empty()) dir += "/trial-" + key.trial_id;
  return dir + "/" + key.TaskName();
}

Status LocalExecutor::Launch(const ReplicaSpec& given) {
  ReplicaSpec spec = given;
  if (spec.work_dir.empty()) {
    if (options_.jobs_dir.empty()) return InvalidArgument("replica work_dir is empty");
    spec.work_dir = WorkDirFor(spec.key);
  }
  return Enqueue(std::move(spec), nullptr);
}

Status LocalExecutor::LaunchGang(std::span<const ReplicaSpec> specs, const GangSpec& gang,
                                 size_t* launched) {
  if (specs.size() < 2 || options_.jobs_dir.empty()) {
    return Executor::LaunchGang(specs, gang, launched);
  }
  // Serialised here (no I/O under the caller's lock); the starter writes it.
  auto record = std::make_shared<GangRecord>();
  nlohmann::json all = nlohmann::json::array();
  for (const ReplicaSpec& spec : specs) {
    ReplicaSpec s = spec;
    if (s.work_dir.empty()) s.work_dir = WorkDirFor(s.key);
    all.push_back(nlohmann::json::parse(SpecToJson(s)));
  }
  record->text = all.dump();
  record->path = Join(ParentDir(specs.front().work_dir.empty() ? WorkDirFor(specs.front().key)
                                                               : specs.front().work_dir),
                      kGangSpecsFile);
  size_t n = 0;
  for (const ReplicaSpec& spec : specs) {
    ReplicaSpec s = spec;
    if (s.work_dir.empty()) s.work_dir = WorkDirFor(s.key);
    Status st = Enqueue(std::move(s), record);
    if (!st.ok()) {
      if (launched != nullptr) *launched = n;
      return st;
    }
    ++n;
  }
  if (launched != nullptr) *launched = n;
  return Status::Ok();
}

Status LocalExecutor::Enqueue(ReplicaSpec spec, std::shared_ptr<GangRecord> gang) {
  if (options_.launcher_path.empty()) return FailedPrecondition("launcher_path is not set");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return FailedPrecondition("executor is shut down");
    if (replicas_.count(spec.key) != 0 || starting_.count(spec.key) != 0) {
      return AlreadyExists("replica " + spec.key.TaskName() + " of job " + spec.key.job_id +
                           " is already running");
    }
    ReplicaKey key = spec.key;
    start_queue_.push_back(key);
    PendingStart pending;
    pending.spec = std::move(spec);
    pending.gang = std::move(gang);
    starting_.emplace(std::move(key), std::move(pending));
  }
  start_cv_.notify_one();
  return Status::Ok();
}

void LocalExecutor::StarterLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // Drains the queue before it stops: what Launch accepted is started (a daemon that stops
    // leaves running replicas for the next one to recover).
    start_cv_.wait(lock, [this] { return stop_ || !start_queue_.empty(); });
    if (start_queue_.empty()) return;
    const ReplicaKey key = start_queue_.front();
    start_queue_.erase(start_queue_.begin());
    PendingStart& pending = starting_.at(key);
    std::shared_ptr<Replica> r;
    if (pending.kill_requested) {
      r = std::make_shared<Replica>();
      r->key = key;
      r->work_dir = pending.spec.work_dir;
      r->not_started = "it was stopped before it started";
    } else {
      ReplicaSpec spec = pending.spec;
      std::shared_ptr<GangRecord> gang = pending.gang;
      lock.unlock();
      Status recorded = Status::Ok();
      if (gang && !gang->written) {
        recorded = MakeDirs(ParentDir(gang->path));
        if (recorded.ok()) recorded = WriteFileAtomic(gang->path, gang->text);
        gang->written = recorded.ok();
      }
      auto started =
          recorded.ok() ? Start(std::move(spec)) : Result<std::shared_ptr<Replica>>(recorded);
      lock.lock();
      if (started.ok()) {
        r = std::move(started).value();
      } else {
        TY_LOG_WARN(kLog, "cannot start {} of job {}: {}", key.TaskName(), key.job_id,
                    started.status().message());
        r = std::make_shared<Replica>();
        r->key = key;
        r->work_dir = pending.spec.work_dir;
        r->not_started = started.status().message();
      }
    }
    // A Kill that came while it started applies now: the launcher keeps SIGTERM blocked until
    // it reads it, so the signal is not lost.
    PendingStart done = std::move(starting_.at(key));
    starting_.erase(key);
    if (!r->not_started.empty()) {
      r->exited = true;
      r->kill_requested = done.kill_requested;
      r->stop_reason = done.stop_reason;
    }
    replicas_[key] = r;
    if (done.kill_requested && r->not_started.empty()) {
      const int64_t now = MonotonicMicros();
      lock.unlock();
      Kill(key, std::max<int64_t>(0, done.kill_deadline - now), done.stop_reason);
      lock.lock();
    }
    Wake();
  }
}

Result<std::shared_ptr<Replica>> LocalExecutor::Start(ReplicaSpec spec) {
  TRAINYARD_RETURN_IF_ERROR(MakeDirs(spec.work_dir));
  // A work dir may be reused for a new attempt: clear the previous launcher's files.
  for (const char* f : {kPidFile, kRunningFile, kLogFile, kLogOffsetFile, kExitFile, kKillFile,
                        kStopReasonFile, kLauncherErrFile}) {
    TRAINYARD_RETURN_IF_ERROR(RemoveTree(Join(spec.work_dir, f)));
  }
  if (!spec.metric_tag.empty()) {
    // The trial's own metric file (compat §6.3); a container sees it at the same path.
    const std::string metric_dir = Join(spec.work_dir, kMetricDir);
    TRAINYARD_RETURN_IF_ERROR(MakeDirs(metric_dir));
    spec.env["CLOUD_ML_HP_METRIC_FILE"] = Join(spec.work_dir, kMetricFile);
    if (!spec.container.image.empty()) {
      spec.container.mounts.insert(spec.container.mounts.begin(), metric_dir + ":" + metric_dir);
    }
  }
  TRAINYARD_RETURN_IF_ERROR(WriteFileAtomic(Join(spec.work_dir, kSpecFile), SpecToJson(spec)));

  const std::string err_path = Join(spec.work_dir, kLauncherErrFile);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own session: the launcher survives the daemon and its session id names every process of
  // the replica. SIGTERM/SIGINT stay blocked until the launcher reads them from its signalfd,
  // so a Kill right after Launch is not lost.
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  posix_spawnattr_setsigmask(&attr, &mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGTERM, SIGINT, SIGCHLD, SIGPIPE, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM}) {
    sigaddset(&defaults, s);
  }
  posix_spawnattr_setsigdefault(&attr, &defaults);
  std::string arg_work_dir = spec.work_dir;
  std::string flag = "--work-dir";
  std::string path = options_.launcher_path;
  char* argv[] = {path.data(), flag.data(), arg_work_dir.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, path.c_str(), &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return Internal("cannot start " + options_.launcher_path + ": " + std::strerror(rc));
  }
  TY_FAILPOINT("executor.launch.after_spawn");  // launcher started, its pid not yet recorded

  auto r = std::make_shared<Replica>();
  r->key = spec.key;
  r->work_dir = spec.work_dir;
  r->tail.key = spec.key;
  r->tail.work_dir = spec.work_dir;
  r->tail.metric_tag = spec.metric_tag;
  r->tail.attempt = spec.attempt;
  r->pid = pid;
  r->is_child = true;
  if (auto st = ReadProcStat(pid)) r->start_time = st->start_time;
  // The launcher writes the same file first thing; writing it here too closes the window in
  // which a daemon crash would leave a running launcher that Recover cannot find.
  if (r->start_time != 0) {
    Status s = WriteFileAtomic(Join(spec.work_dir, kPidFile), FormatPidFile(pid, r->start_time),
                               /*durable=*/false);
    if (!s.ok()) TY_LOG_WARN(kLog, "{}", s.ToString());
  }
  TY_LOG_INFO(kLog, "launched {} of job {} (launcher pid {})", spec.key.TaskName(), spec.key.job_id,
              pid);
  return r;
}

void LocalExecutor::Kill(const ReplicaKey& key, Duration grace, const std::string& reason) {
  std::shared_ptr<Replica> r;
  const int64_t now = MonotonicMicros();
  if (grace < 0) grace = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto p = starting_.find(key); p != starting_.end()) {
      // Not started yet: the starter applies it (or skips the start).
      PendingStart& pending = p->second;
      if (pending.kill_requested && pending.kill_deadline <= now + grace) return;
      pending.kill_requested = true;
      if (!reason.empty()) pending.stop_reason = reason;
      pending.kill_deadline = now + grace;
      return;
    }
    auto it = replicas_.find(key);
    if (it == replicas_.end()) return;
    r = it->second;
    if (r->kill_requested && r->kill_deadline <= now + grace) return;  // an earlier kill stands
    r->kill_requested = true;
    if (!reason.empty()) r->stop_reason = reason;
    r->kill_deadline = now + grace;
    r->launcher_kill_deadline = now + grace + kLauncherReportGrace;
  }
  if (!r->not_started.empty()) {  // nothing runs: its exit is reported as it is
    Wake();
    return;
  }
  if (!reason.empty()) {
    Status s = WriteFileAtomic(Join(r->work_dir, kStopReasonFile), reason, /*durable=*/false);
    if (!s.ok()) TY_LOG_WARN(kLog, "{}", s.ToString());
  }
  Status s = WriteFileAtomic(Join(r->work_dir, kKillFile), std::to_string(grace) + "\n",
                             /*durable=*/false);
  if (!s.ok()) TY_LOG_WARN(kLog, "{}", s.ToString());
  if (r->pid > 0 && ProcessAlive(r->pid, r->start_time)) ::kill(r->pid, SIGTERM);
  TY_LOG_INFO(kLog, "killing {} of job {} (grace {})", key.TaskName(), key.job_id,
              FormatDuration(grace));
  Wake();
}

std::vector<RecoveredReplica> LocalExecutor::Recover(const std::vector<ReplicaKey>& keys) {
  std::vector<RecoveredReplica> found;
  for (const ReplicaKey& key : keys) {
    const std::string dir = WorkDirFor(key);
    auto text = ReadFile(Join(dir, kSpecFile));
    if (!text.ok() && text.status().code() == StatusCode::kNotFound) {
      // A member of a gang the daemon stopped while starting it: launched, never started.
      text = GangMemberSpec(Join(ParentDir(dir), kGangSpecsFile), key);
    }
    if (!text.ok()) {
      if (text.status().code() != StatusCode::kNotFound) {
        TY_LOG_WARN(kLog, "cannot recover {}: {}", dir, text.status().ToString());
      }
      continue;  // never launched
    }
    auto spec = SpecFromJson(*text);
    if (spec.ok()) {
      spec->work_dir = dir;
    } else {
      // Launched (the spec is written first) but unreadable: found, without a spec to restart.
      TY_LOG_WARN(kLog, "cannot recover {}: {}", dir, spec.status().ToString());
      spec = ReplicaSpec();
    }
    spec->key = key;
    if (spec->attempt == 0) {
      if (auto n = ReadFile(Join(dir, kLegacyRestartsFile)); n.ok()) {
        spec->attempt = std::atoi(n->c_str());
      }
    }
    auto r = std::make_shared<Replica>();
    r->key = key;
    r->work_dir = dir;
    r->tail.key = key;
    r->tail.work_dir = dir;
    r->tail.metric_tag = spec->metric_tag;
    r->tail.attempt = spec->attempt;
    if (auto pid_text = ReadFile(Join(dir, kPidFile)); pid_text.ok()) {
      pid_t pid = 0;
      uint64_t start = 0;
      if (ParsePidFile(*pid_text, &pid, &start)) {
        r->pid = pid;
        r->start_time = start;
      }
    }
    r->tail.LoadOffset();
    const bool alive = r->pid > 0 && ProcessAlive(r->pid, r->start_time);
    if (!alive) r->exited = true;
    const int64_t now = MonotonicMicros();
    if (auto kill_text = ReadFile(Join(dir, kKillFile)); kill_text.ok()) {
      // A kill was requested before the restart: it still counts, and its deadlines restart.
      Duration grace = 0;
      std::string_view v = *kill_text;
      while (!v.empty() && v.back() == '\n') v.remove_suffix(1);
      std::from_chars(v.data(), v.data() + v.size(), grace);
      r->kill_requested = true;
      r->kill_deadline = now + std::max<Duration>(grace, 0);
      r->launcher_kill_deadline = r->kill_deadline + kLauncherReportGrace;
      if (auto reason = ReadFile(Join(dir, kStopReasonFile)); reason.ok()) r->stop_reason = *reason;
    }
    RecoveredReplica rec;
    rec.spec = std::move(spec).value();
    rec.kill_requested = r->kill_requested;
    rec.stop_reason = r->stop_reason;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (replicas_.count(key) != 0) {
        rec.running = true;  // launched by this process
        found.push_back(std::move(rec));
        continue;
      }
      replicas_[key] = r;
    }
    rec.running = alive;
    if (alive) {
      TY_LOG_INFO(kLog, "re-attached to {} of job {} (launcher pid {})", key.TaskName(), key.job_id,
                  r->pid);
    } else {
      TY_LOG_INFO(kLog, "{} of job {} ended while the daemon was down", key.TaskName(), key.job_id);
    }
    found.push_back(std::move(rec));
  }
  Wake();
  return found;
}

std::optional<std::string> LocalExecutor::MetricFileOf(const ReplicaKey& key) {
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = replicas_.find(key); it != replicas_.end()) {
      dir = it->second->work_dir;
    } else if (auto p = starting_.find(key); p != starting_.end()) {
      dir = p->second.spec.work_dir;
    }
  }
  if (dir.empty()) dir = WorkDirFor(key);
  return ReadMetricFile(Join(dir, kMetricFile));
}

std::vector<MetricRecord> LocalExecutor::ReplicaMetrics(const ReplicaKey& key,
                                                        const std::string& tag) {
  auto text = MetricFileOf(key);
  if (!text) return {};
  return ParseMetricFile(*text, tag);
}

std::vector<std::string> LocalExecutor::ReplicaMetricTags(const ReplicaKey& key) {
  auto text = MetricFileOf(key);
  if (!text) return {};
  return MetricTagsInFile(*text);
}

void LocalExecutor::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  if (starter_.joinable()) starter_.join();
  Wake();
  if (monitor_.joinable()) monitor_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, r] : replicas_) {
    r->tail.CloseLog();
    if (r->pid_fd >= 0) {
      ::close(r->pid_fd);
      r->pid_fd = -1;
    }
  }
  replicas_.clear();
}

void LocalExecutor::MonitorLoop() {
  // Tailing and storing log lines is background work (the lines are already durable in each
  // replica's log file): on a busy machine the trainers get the CPU first. Nice 5 keeps about a
  // quarter of a contended core for this thread, so exits and states still move promptly.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 5);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    bool printing = false;
    std::vector<std::shared_ptr<Replica>> snapshot;
    snapshot.reserve(replicas_.size());
    for (auto& [key, r] : replicas_) snapshot.push_back(r);
    lock.unlock();
    for (auto& r : snapshot) {
      r->tail.delivered_lines = false;
      bool exited = Poll(*r);
      printing = printing || r->tail.delivered_lines;
      if (exited) {
        std::lock_guard<std::mutex> l(mu_);
        auto it = replicas_.find(r->key);
        if (it != replicas_.end() && it->second == r) replicas_.erase(it);
      }
    }
    lock.lock();
    if (stop_) break;
    // Sleep until a launcher exits (its pidfd turns readable), a call wakes us, or the next
    // log poll is due: exits are seen at once, not a poll interval later.
    std::vector<pollfd> fds;
    fds.push_back({wake_fd_, POLLIN, 0});
    for (auto& [key, r] : replicas_) {
      if (r->pid_fd >= 0) fds.push_back({r->pid_fd, POLLIN, 0});
    }
    lock.unlock();
    // While a replica prints, its lines are tailed every 5 ms: the backlog left when it exits
    // (stored before the exit is reported) stays a few milliseconds of output.
    const Duration interval =
        printing ? std::min<Duration>(options_.log_poll_interval, kBusyPollInterval)
                 : options_.log_poll_interval;
    if (wake_fd_ >= 0) {
      ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(1, interval / 1000)));
      uint64_t drained;
      [[maybe_unused]] ssize_t n = ::read(wake_fd_, &drained, sizeof drained);
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(interval));
    }
    lock.lock();
  }
}

bool LocalExecutor::Poll(Replica& r) {
  // No launcher ever ran: nothing to tail (its work dir may hold an earlier attempt's files,
  // already delivered).
  if (!r.not_started.empty()) {
    ReportExit(r);
    return true;
  }
  // Whether the launcher is gone is decided first: everything it wrote is then on disk.
  const bool gone = LauncherGone(r);
  if (!gone) EnforceKillDeadlines(r);
  r.tail.PollRunning(listener_);
  bool drained = r.tail.TailLog(listener_, gone);
  r.tail.PollMetrics(listener_, gone, options_.metrics_interval);
  if (!gone) return false;
  if (r.pid_fd >= 0) {
    // Stays readable once the process is gone: close it so retries wait a poll interval.
    ::close(r.pid_fd);
    r.pid_fd = -1;
  }
  if (!drained && ++r.drain_retries < kMaxDrainRetries) {
    return false;  // the store refused the last lines: try again before reporting the exit
  }
  ReportExit(r);
  return true;
}

bool LocalExecutor::LauncherGone(Replica& r) {
  if (r.exited) return true;
  if (r.pid_fd < 0 && r.pid > 0) {
    r.pid_fd = static_cast<int>(::syscall(SYS_pidfd_open, r.pid, 0));  // -1: poll by interval
  }
  auto st = r.pid > 0 ? ReadProcStat(r.pid) : std::nullopt;
  if (!st || (r.start_time != 0 && st->start_time != r.start_time)) {
    r.exited = true;  // reaped by someone else, or the pid now names another process
    return true;
  }
  // Reap it when it is our child (also after a re-attach within the same process).
  int status = 0;
  pid_t w = ::waitpid(r.pid, &status, WNOHANG);
  if (w == r.pid) {
    r.exited = true;
    r.wait_status = status;
  } else if (w < 0 && (st->state == 'Z' || st->state == 'X')) {
    r.exited = true;  // not our child and already dead
  }
  return r.exited;
}

void LocalExecutor::EnforceKillDeadlines(Replica& r) {
  bool sweep_trainer = false;
  bool sweep_launcher = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!r.kill_requested) return;
    const int64_t now = MonotonicMicros();
    if (now >= r.launcher_kill_deadline) {
      sweep_launcher = true;
    } else if (now >= r.kill_deadline && !r.trainer_swept) {
      sweep_trainer = true;
      r.trainer_swept = true;
    }
  }
  if (sweep_launcher) {
    TY_LOG_WARN(kLog, "launcher of {} of job {} outlived its grace period; killing it",
                r.key.TaskName(), r.key.job_id);
    Sweep(r, /*include_launcher=*/true);
  } else if (sweep_trainer) {
    Sweep(r, /*include_launcher=*/false);
  }
}

void LocalExecutor::Sweep(const Replica& r, bool include_launcher) {
  if (r.pid <= 0) return;
  const bool launcher_alive = ProcessAlive(r.pid, r.start_time);
  std::vector<ProcStat> procs = ListProcesses();
  std::vector<pid_t> targets;
  for (const ProcStat& p : procs) {
    if (p.session == r.pid && p.pid != r.pid && p.state != 'Z') targets.push_back(p.pid);
  }
  if (launcher_alive) {
    for (const ProcStat& p : Descendants(r.pid, procs)) {
      if (p.state != 'Z') targets.push_back(p.pid);
    }
  }
  for (pid_t p : targets) ::kill(p, SIGKILL);
  if (include_launcher && launcher_alive) ::kill(r.pid, SIGKILL);
}

void LocalExecutor::ReportExit(Replica& r) {
  r.tail.CloseLog();
  if (r.pid_fd >= 0) {
    ::close(r.pid_fd);
    r.pid_fd = -1;
  }
  ReplicaExit exit;
  auto parsed = r.not_started.empty() ? ReadExitReport(r.work_dir)
                                      : Result<ReplicaExit>(Internal(r.not_started));
  const bool reported = parsed.ok();
  if (!r.not_started.empty()) {
    exit.phase = "launch";
    exit.exit_code = 1;
    exit.message = r.not_started;
  } else if (reported) {
    exit = std::move(parsed).value();
  } else {
    // The launcher died abnormally (SIGKILL, OOM) and could not clean up: its orphans still
    // carry its session id.
    // Only when the pid does not name another live process: Linux does not reuse a pid that
    // is still some process's session id, so then every member of session `pid` is ours. A
    // pid that names another process (e.g. after a reboot) leaves that session alone.
    auto current = r.pid > 0 ? ReadProcStat(r.pid) : std::nullopt;
    bool pid_reused = current && current->state != 'Z' &&
                      (r.start_time == 0 || current->start_time != r.start_time);
    const bool swept = r.pid > 0 && !pid_reused;
    if (swept) {
      for (const ProcStat& p : ListProcesses()) {
        if (p.session == r.pid && p.state != 'Z') ::kill(p.pid, SIGKILL);
      }
    }
    // Its cgroups and its container, when it had them, outlive it too: remove them (a
    // container runs under the engine's own processes, outside the launcher's session).
    if (auto spec_text = ReadFile(Join(r.work_dir, kSpecFile)); spec_text.ok()) {
      if (auto spec = SpecFromJson(*spec_text); spec.ok()) {
        if (!spec->cgroup_root.empty()) {
          for (const char* controller : {"memory", "cpu"}) {
            Status st = cgroup_v1::DestroyGroup(
                cgroup_v1::GroupDir(spec->cgroup_root, controller, spec->cgroup_name),
                kMicrosPerSecond);
            if (!st.ok()) TY_LOG_WARN(kLog, "{}", st.ToString());
          }
        }
        if (!spec->container.image.empty()) RemoveContainer(spec->container);
      }
    }
    exit.phase = "lost";
    exit.exit_code = -1;
    exit.message = r.pid > 0 ? LostLauncherMessage(r.pid, r.wait_status)
                             : "its launcher never started: the Trainyard daemon stopped while "
                               "starting it";
    if (swept) exit.message += "; the trainer's processes left were killed";
    if (std::string err = LauncherErrorTail(r.work_dir); !err.empty()) exit.message += ": " + err;
    if (FilesystemFull(r.work_dir) || MentionsDiskFull(exit.message)) {
      // It could not even write its report: no restart would do better on a full disk.
      exit.disk_full = true;
      exit.message += " (no space left on device in " + r.work_dir + ")";
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    exit.killed_by_request = KilledByRequest(r.kill_requested, reported, exit);
    if (r.kill_requested) exit.stop_reason = r.stop_reason;
    // Out of the table before the listener hears of the exit, so it may launch the same
    // replica again (a restart) from inside the callback.
    auto it = replicas_.find(r.key);
    if (it != replicas_.end() && it->second.get() == &r) replicas_.erase(it);
  }
  TY_LOG_INFO(kLog, "{} of job {} exited (phase {}, code {}, signal {})", r.key.TaskName(),
              r.key.job_id, exit.phase, exit.exit_code, exit.signal);
  listener_->OnReplicaExit(r.key, exit);
}

std::vector<ReplicaUsage> LocalExecutor::Usage() {
  std::vector<std::pair<ReplicaKey, std::string>> dirs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, r] : replicas_) dirs.emplace_back(key, r->work_dir);
  }
  static const double kTicks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::vector<ReplicaUsage> out;
  std::lock_guard<std::mutex> lock(usage_mu_);
  std::map<ReplicaKey, CpuSamples> samples;
  for (const auto& [key, work_dir] : dirs) {
    auto text = ReadFile(Join(work_dir, kSpecFile));
    if (!text.ok()) continue;
    auto spec = SpecFromJson(*text);
    if (!spec.ok() || spec->cgroup_root.empty() || !spec->container.image.empty()) continue;
    ReplicaUsage u;
    u.key = key;
    const std::string memory =
        cgroup_v1::GroupDir(spec->cgroup_root, cgroup_v1::kMemory, spec->cgroup_name);
    if (auto usage = ReadFile(memory + "/memory.usage_in_bytes"); usage.ok()) {
      u.memory_bytes = std::strtoll(usage->c_str(), nullptr, 10);
    }
    const std::string cpu =
        cgroup_v1::GroupDir(spec->cgroup_root, cgroup_v1::kCpu, spec->cgroup_name);
    if (auto ns = ReadFile(cpu + "/cpuacct.usage"); ns.ok()) {
      u.cpu_seconds = static_cast<double>(std::strtoull(ns->c_str(), nullptr, 10)) / 1e9;
    } else {
      CpuSamples& mine = samples[key];
      CpuSamples before = std::move(cpu_samples_[key]);
      mine.gone = before.gone;
      for (pid_t pid : cgroup_v1::ListPids(memory)) {
        if (auto st = ReadProcStat(pid)) mine.live[pid] = st->cpu_ticks;
      }
      for (const auto& [pid, ticks] : before.live) {
        if (!mine.live.contains(pid)) mine.gone += ticks;
      }
      uint64_t total = mine.gone;
      for (const auto& [pid, ticks] : mine.live) total += ticks;
      u.cpu_seconds = static_cast<double>(total) / kTicks;
    }
    if (u.memory_bytes >= 0 || u.cpu_seconds >= 0) out.push_back(std::move(u));
  }
  cpu_samples_ = std::move(samples);  // replicas that ended are forgotten
  return out;
}

}  // namespace

std::unique_ptr<Executor> NewLocalExecutor(const LocalExecutorOptions& options,
                                           ExecutorListener* listener) {
  return std::make_unique<LocalExecutor>(options, listener);
}

}  // namespace trainyard::executor
