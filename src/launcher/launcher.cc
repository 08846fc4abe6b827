// The launcher is single-threaded: one poll loop over a signalfd (SIGTERM, SIGINT, SIGCHLD,
// SIGHUP) and the two output pipes of the child it is running (python -c, venv, pip, or the
// trainer). Each child runs in its own process group; the launcher is a child subreaper, so
// every descendant that outlives its parent becomes the launcher's child and is killed and
// reaped before exit.json is written.
//
// With spec.cgroup_root set, every child also runs in the replica's cgroup v1 groups (memory and
// cpu, see src/executor/cgroup_v1.h), created before the first child with the spec's limits. The
// memory group's OOM-kill counter tells whether the kernel killed a process of the replica for
// memory, and the final cleanup kills whatever is still in the groups and removes them. Limits
// are best effort: a replica whose groups cannot be set up runs without them (with one WARNING).
//
// A custom-container replica (spec.container.image set) runs `<engine> run` as its trainer
// instead: no Python environment and no cgroups of the launcher's own (the engine makes the
// container's from --cpus/--memory). The launcher is no subreaper then: the engine's long-lived
// helpers (conmon, the rootless pause process) daemonize and must not be adopted, and killed,
// as leftovers of the replica. The container itself is stopped through `podman run` (SIGTERM
// reaches it with the default --sig-proxy) and always removed with `rm -f` once that ends.
//
// Children never see the launcher's (the daemon's) environment as a whole: an allowlist of
// harmless host variables, Trainyard's defaults and the replica spec's env (trainer_env.h).
// Buckets reach the trainer three ways (docs/writing-a-trainer.md): gcloud/gsutil configured
// per replica (CLOUDSDK_*, BOTO_CONFIG under <work_dir>/cloudsdk), STORAGE_EMULATOR_HOST for
// the client libraries, and Vertex-style /gcs/<bucket>/<path> paths: a bind mount of the
// bucket store in a private mount namespace of the trainer (process replicas, when the
// launcher may create one) or a volume (containers).

#include "launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cgroup_v1.h"
#include "output.h"
#include "proc_util.h"
#include "protocol_private.h"
#include "trainer_env.h"
#include "trainyard/core/failpoint.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"
#include "trainyard/executor/executor.h"
#include "trainyard/executor/launcher_protocol.h"
#include "trainyard/executor/slurm_control.h"

extern char** environ;

namespace trainyard::launcher {
namespace {

using executor::ReplicaExit;
using executor::ReplicaSpec;
using model::Severity;

constexpr size_t kReadBuffer = 1 << 20;
constexpr int kPipeSize = 1 << 20;
// Reads smaller than this are followed by a short pause (see RunChild).
constexpr size_t kTrickleBytes = 64 * 1024;
constexpr useconds_t kTrickleDelayMicros = 1000;
// How long the final cleanup may take to kill and reap leftover descendants.
constexpr Duration kCleanupTimeout = 5 * kMicrosPerSecond;
// After the cleanup, how long to wait for the output pipes to reach EOF.
constexpr Duration kDrainTimeout = 1 * kMicrosPerSecond;
// Lines of pip output kept for the install failure message.
constexpr size_t kInstallTailLines = 20;
// Where Vertex AI mounts Cloud Storage (gcsfuse): /gcs/<bucket>/<object>.
constexpr char kGcsMountPoint[] = "/gcs";
// Files named in the warning about a relative gs: directory.
constexpr size_t kGsWarningFiles = 5;

// <work_dir>/trainyard-site/sitecustomize.py, first on a Python trainer's PYTHONPATH: flushes
// the trainer's stdout and stderr every 0.5 s, so that print() output reaches the logs while
// the trainer runs although Python block-buffers a pipe. PYTHONUNBUFFERED would do it with a
// write() per print, 10x the CPU of a chatty trainer (docs/writing-a-trainer.md); this costs a
// thread waking twice a second. A lock keeps flushes out of fork() (a child inheriting a held
// stdout lock would hang) and out of interpreter shutdown (a daemon thread holding it there is
// a fatal error). With authentication on, google-auth's AnonymousCredentials send the job's
// credential to the storage endpoint (google-cloud-storage's emulator mode). Then it runs the
// sitecustomize it shadows (Debian has one), if any.
constexpr char kSiteDir[] = "trainyard-site";
constexpr char kSiteCustomize[] = R"PY(# Written by trainyard-launcher (docs/writing-a-trainer.md).
import atexit as _atexit
import os as _os
import sys as _sys
import threading as _threading

_trainyard_lock = _threading.Lock()


def _trainyard_flush_loop():
    import time
    while True:
        time.sleep(0.5)
        with _trainyard_lock:
            for stream in (_sys.stdout, _sys.stderr):
                try:
                    if stream is not None:
                        stream.flush()
                except Exception:
                    pass


def _trainyard_start():
    _threading.Thread(target=_trainyard_flush_loop, name="trainyard-flush", daemon=True).start()


def _trainyard_after_fork_in_child():
    _trainyard_lock.release()
    _trainyard_start()


_trainyard_start()
_os.register_at_fork(before=lambda: _trainyard_lock.acquire(),
                     after_in_parent=lambda: _trainyard_lock.release(),
                     after_in_child=_trainyard_after_fork_in_child)
_atexit.register(_trainyard_lock.acquire)


def _trainyard_chain():
    here = _os.path.dirname(_os.path.abspath(__file__))
    for entry in _sys.path:
        if _os.path.abspath(entry or ".") == here:
            continue
        path = _os.path.join(entry or ".", "sitecustomize.py")
        if _os.path.isfile(path):
            with open(path) as f:
                code = compile(f.read(), path, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": path})
            return


# google-cloud-storage talks to STORAGE_EMULATOR_HOST with google-auth's AnonymousCredentials
# (its own default there, and what emulator code passes explicitly), which send nothing. With
# authentication on, requests to that endpoint carry the job's credential instead
# (docs/security.md): the class gets it when google.auth.credentials is first imported.
def _trainyard_job_credential():
    import importlib.abc
    import importlib.machinery
    token = _os.environ.get("TRAINYARD_JOB_TOKEN", "")
    endpoint = _os.environ.get("STORAGE_EMULATOR_HOST", "").rstrip("/")
    if not token or not endpoint:
        return
    if "://" not in endpoint:
        endpoint = "http://" + endpoint

    def patch(module):
        cls = getattr(module, "AnonymousCredentials", None)
        if cls is None:
            return
        plain = cls.before_request

        def before_request(self, request, method, url, headers):
            if isinstance(url, str) and (url == endpoint or url.startswith(endpoint + "/")):
                headers["authorization"] = "Bearer " + token
                return None
            return plain(self, request, method, url, headers)

        cls.before_request = before_request

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "google.auth.credentials":
                return None
            _sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                patch(module)

            spec.loader.exec_module = exec_module
            return spec

    if "google.auth.credentials" in _sys.modules:
        patch(_sys.modules["google.auth.credentials"])
    else:
        _sys.meta_path.insert(0, Finder())


try:
    _trainyard_job_credential()
except Exception:
    pass

_trainyard_chain()
)PY";

std::string Join(const std::string& dir, const char* file) { return dir + "/" + file; }

// "64.0 MiB", "15.0 GiB" (memory limits in messages).
std::string FormatBytes(int64_t bytes) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  constexpr int64_t kGiB = int64_t{1} << 30;
  char buf[32];
  if (bytes >= kGiB) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / kGiB);
  } else if (bytes >= kMiB) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  } else {
    std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
  }
  return buf;
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// What a child's wait status means in ReplicaExit terms.
struct ChildStatus {
  int exit_code = 0;  // 128 + signal when signalled (shell convention)
  int signal = 0;
};

ChildStatus DecodeWaitStatus(int status) {
  ChildStatus s;
  if (WIFEXITED(status)) {
    s.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
    s.exit_code = 128 + s.signal;
  }
  return s;
}

// kEngine: an engine command run for the launcher (image check, inspect, rm): stdout goes to
// capture_, stderr to engine_err_, neither to the log. kPull: an image pull, whose progress
// (stderr) is also logged.
enum class Sink { kTrainer, kInstall, kCapture, kEngine, kPull };

// "3.5" for 3500 millis: --cpus takes a decimal number of CPUs.
std::string FormatCpus(int64_t millis) {
  std::string out = std::to_string(millis / 1000);
  if (const int64_t frac = millis % 1000; frac != 0) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03lld", static_cast<long long>(frac));
    std::string f = buf;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out;
}

// A JSON array of strings (podman's --entrypoint form).
std::string JsonStringArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.push_back('"');
    for (unsigned char c : items[i]) {
      if (c == '"' || c == '\\') {
        out.push_back('\\');
        out.push_back(static_cast<char>(c));
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
    out.push_back('"');
  }
  out.push_back(']');
  return out;
}

// Whether KEY can be written as a KEY=VALUE line of an --env-file: podman and docker trim
// leading blanks, treat "#" lines as comments and split at the first "=".
bool ValidEnvFileKey(const std::string& key) {
  if (key.empty() || key[0] == '#') return false;
  for (char c : key) {
    if (c == '=' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0') return false;
  }
  return true;
}

class Launcher {
 public:
  Launcher(std::string work_dir, bool slurm) : work_dir_(std::move(work_dir)), slurm_(slurm) {}
  int Run();

 private:
  // Setup and outcome.
  bool Init(std::string* error);
  void ReserveExitSpace();
  int StoppedBeforeStart();
  // The trainer could not be started: the reason in the log and in exit.json (phase launch).
  int LaunchFailure(const std::string& message);
  // Reports a memory kill and removes the cgroups, then writes exit.json.
  int Finish(ReplicaExit exit);
  void Service(Severity severity, std::string_view message) {
    log_.Add(NowMicros(), severity, /*service=*/true, message);
  }

  // Environment preparation; returns the interpreter to run the trainer with, or nullopt
  // with failure_ filled.
  std::optional<std::string> PrepareEnvironment();
  std::optional<std::string> PythonVersion();
  std::optional<std::string> BuildEnvironment(const std::string& hash, const std::string& dir,
                                              const std::string& hash_input);
  ReplicaExit InstallFailure(const std::optional<ChildStatus>& st, const std::string& what);

  // Custom containers (spec.container.image set).
  bool IsContainer() const { return !spec_.container.image.empty(); }
  // Gets the image into the engine's local storage as spec.container.pull says (pulling under a
  // lock shared by the replicas on this machine) and returns the reference to run: the image,
  // or the mirror's reference pulled for it. nullopt with failure_ set, or when stopped.
  std::optional<std::string> PrepareImage();
  // Whether `ref` is in the engine's local storage (`image inspect`).
  bool ImagePresent(const std::string& ref);
  // `<engine> pull` of spec.container.pull.reference; false with failure_ set.
  bool PullImage();
  // "gcr.io/p/t:1 (as localhost:5000/p/t:1 through registry_mirrors gcr.io=localhost:5000)".
  std::string PullDescription() const;
  int RunContainer(const std::string& image);
  void MarkRunning();
  // Runs `<engine> args...` to its end with the engine's environment (Sink::kEngine).
  std::optional<ChildStatus> RunEngine(const std::vector<std::string>& args);
  // Writes <work_dir>/container.env (the container's whole environment).
  Status WriteContainerEnv(const EnvMap& env);
  // The volumes Trainyard adds to the spec's: the storage client files, /gcs, a local job dir.
  std::vector<std::string> ContainerMounts(const StorageClientFiles& files);
  // OOMKilled of the ended container, then `rm -f` of it (also after a SIGKILL escalation).
  void InspectAndRemoveContainer(ReplicaExit* exit);
  // The last engine stderr lines as one message ("" when there were none).
  std::string EngineErrors(size_t max_lines) const;
  // `limit_bytes` < 0: the spec's memory limit.
  void ReportOom(ReplicaExit* exit, int64_t limit_bytes = -1);

  // Running children. RunChild returns once the child has exited (and what it wrote so far
  // is logged); FinishChild then kills leftover descendants and drains the pipes to EOF.
  std::optional<ChildStatus> RunChild(const std::vector<std::string>& argv,
                                      const std::vector<std::string>& env, Sink sink,
                                      const std::function<void()>& on_started,
                                      Duration started_after = 0);
  void FinishChild();

  // Resource limits (cgroup v1); each is a no-op when the replica has no cgroups.
  void SetUpCgroups();
  void CgroupWarning(const std::string& reason);
  void CheckJoinErrors();
  void CheckOom(ReplicaExit* exit);
  // Under Slurm (--slurm): the memory group Slurm's task/cgroup put this task in, and its
  // OOM-kill count now (CheckOom reports kills beyond it). Best effort: without one (no
  // task/cgroup on the cluster) an OOM kill reads as a plain SIGKILL, as without cgroups locally.
  void WatchSlurmMemoryGroup();
  void ReleaseCgroups();
  // Reaps children and waits a few milliseconds (while cgroups are being emptied).
  void ReapAndWait();

  enum class ReadResult { kData, kAgain, kEof };
  ReadResult ReadPipe(int stream);
  void OnLine(int stream, Timestamp ts, std::string_view line);
  void HandleSignals();
  void ReapChildren();
  void StartTermination(int signo);
  // On Slurm: a stop the daemon asked for (its `kill` file) that no signal brought, as for a
  // step restarted in place while the job was being stopped (the scancel went to the old step).
  void CheckKillFile(int64_t now);
  void Escalate();
  void KillDescendants(int sig);
  // Waits up to `timeout` for a signal and handles it.
  void WaitForSignal(Duration timeout);
  int PollTimeoutMs(int64_t now_mono) const;

  // On a Slurm node (slurm_executor.cc): records the step in slurm.json, binds the trainer's
  // port, tells the driver this replica's address on stdout and reads the run's cluster
  // environment from stdin (docs/slurm.md). False with `error` set when it could not, or when
  // the replica was stopped meanwhile (term_requested_).
  bool SlurmRendezvous(std::string* error);

  const std::string work_dir_;
  const bool slurm_ = false;
  ReplicaSpec spec_;
  LogWriter log_;
  int sfd_ = -1;
  std::vector<char> read_buf_;
  std::vector<std::string> base_env_;  // the launcher's environment
  EnvMap launcher_env_;                // the same as a map
  // What every child but the engine gets of the host: the allowlist (trainer_env.h).
  std::vector<std::string> host_env_;
  std::string process_error_;  // why the last RunChild could not start
  ReplicaExit failure_;        // why PrepareEnvironment failed
  // Warnings for exit.json's "warnings" (e.g. outputs in a relative gs: directory).
  std::vector<std::string> exit_warnings_;
  // The attempt exit.json names (the spec's; -1 until the spec is read): on Slurm a report of
  // an older attempt than the spec's is a step whose restart was not carried out yet.
  int report_attempt_ = -1;

  // Storage clients and /gcs (see the header comment).
  // Trainyard's defaults for the trainer's environment (before the host's and the spec's).
  EnvMap PrepareTrainerDefaults(StorageClientFiles* files);
  // Decides whether the trainer gets /gcs through a mount namespace of its own.
  void PrepareGcsMount();
  void CheckRelativeGs();
  // Creates a local job dir (a host path the daemon accepted under its job-dir roots) before
  // the trainer starts: the create-time check made nothing.
  void PrepareLocalJobDir();
  std::string buckets_dir_;  // TRAINYARD_BUCKETS_DIR of the spec ("" = none)
  // RunChild puts the child (the trainer) into a private mount namespace with buckets_dir_
  // bind-mounted at /gcs.
  bool gcs_namespace_ = false;

  // The replica's cgroups (memory first, then cpu); empty without cgroups.
  std::vector<std::string> cgroup_dirs_;
  std::vector<std::string> cgroup_procs_;  // <dir>/cgroup.procs, which each child joins
  // One slot per group in a page shared with the children (MAP_SHARED): the errno of a child's
  // failed join, as the child can only report it through async-signal-safe means.
  int* join_errno_ = nullptr;
  bool cgroup_warned_ = false;
  bool oom_checked_ = false;
  std::optional<executor::cgroup_v1::MemoryGroup> slurm_memory_;  // see WatchSlurmMemoryGroup
  int64_t slurm_oom_kills_ = 0;

  // The running child.
  pid_t child_ = 0;
  bool child_reaped_ = false;
  int child_wait_status_ = 0;
  Sink sink_ = Sink::kTrainer;
  int pipe_fd_[2] = {-1, -1};  // 0: stdout, 1: stderr
  LineAssembler assembler_[2];
  size_t bytes_read_ = 0;

  // RunChild's on_started while it waits for the child to show life (see RunChild).
  std::function<void()> started_pending_;
  int64_t started_deadline_ = 0;  // monotonic
  size_t started_bytes_ = 0;      // stdout_bytes_ when the child started (its stderr may be
                                  // the engine's own error, which is no sign of life)
  size_t stdout_bytes_ = 0;

  // Termination requested by a signal.
  bool term_requested_ = false;
  bool child_ended_after_term_ = false;  // the last child was reaped after the request
  bool stop_unrequested_ = false;        // no `kill` request was written when SIGTERM came
  int term_signal_ = 0;
  int64_t kill_deadline_ = 0;    // monotonic
  int64_t next_kill_check_ = 0;  // monotonic: CheckKillFile's next look
  bool escalated_ = false;

  // Collected output.
  StderrTail stderr_tail_;
  int env_lock_fd_ = -1;  // shared flock of the environment in use (see PrepareEnvironment)
  std::deque<std::string> install_tail_;
  std::vector<std::string> install_errors_;
  std::string capture_;
  std::vector<std::string> engine_err_;

  // Container mode.
  bool docker_ = false;                  // the engine is docker (else podman's CLI)
  std::vector<std::string> engine_env_;  // the launcher's environment plus engine_env
  // The running child is a cleanup command: termination requests do not signal it.
  bool shielded_ = false;
};

// The `running` file: the executor reports the replica running once it exists.
void Launcher::MarkRunning() {
  int fd =
      ::open(Join(work_dir_, executor::kRunningFile).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
}

int Launcher::Run() {
  read_buf_.resize(kReadBuffer);
  for (char** e = environ; *e != nullptr; ++e) base_env_.emplace_back(*e);
  launcher_env_ = ToEnvMap(base_env_);
  host_env_ = ToEnvLines(HostEnvironment(launcher_env_));
  std::string error;
  if (!Init(&error)) return LaunchFailure(error);

  PrepareLocalJobDir();
  auto rendezvous_failure = [&](const std::string& message) {
    return term_requested_ ? StoppedBeforeStart() : LaunchFailure(message);
  };
  if (IsContainer()) {
    // The image first: a replica whose image cannot be had never joins its peers.
    std::optional<std::string> image = PrepareImage();
    if (term_requested_) return StoppedBeforeStart();
    if (!image) return Finish(failure_);
    if (slurm_ && !SlurmRendezvous(&error)) return rendezvous_failure(error);
    return RunContainer(*image);
  }
  SetUpCgroups();
  if (slurm_) WatchSlurmMemoryGroup();
  std::optional<std::string> python = PrepareEnvironment();
  if (!python) return Finish(failure_);
  if (term_requested_) return StoppedBeforeStart();
  // Installed first: a replica whose environment fails never joins its peers.
  if (slurm_ && !SlurmRendezvous(&error)) return rendezvous_failure(error);

  std::vector<std::string> argv = {*python, "-m", spec_.python_module};
  argv.insert(argv.end(), spec_.args.begin(), spec_.args.end());
  StorageClientFiles files;
  EnvMap env_map = TrainerEnvironment(launcher_env_, PrepareTrainerDefaults(&files), spec_.env);
  const std::string site_dir = Join(work_dir_, kSiteDir);
  Status site = MakeDirs(site_dir);
  if (site.ok()) {
    site = WriteFileAtomic(site_dir + "/sitecustomize.py", kSiteCustomize, /*durable=*/false);
  }
  if (site.ok()) {
    std::string& python_path = env_map["PYTHONPATH"];
    python_path = python_path.empty() ? site_dir : site_dir + ":" + python_path;
  } else {
    Service(Severity::kWarning, "Cannot write " + site_dir + "/sitecustomize.py (" +
                                    site.message() +
                                    "); the trainer's print() output may show only when it "
                                    "flushes or exits.");
  }
  const std::vector<std::string> env = ToEnvLines(env_map);
  PrepareGcsMount();

  Service(Severity::kInfo, "Running module " + spec_.python_module + ".");
  Service(Severity::kInfo, "Running command: " + executor::ShellJoin(argv));
  auto st = RunChild(argv, env, Sink::kTrainer, [this] { MarkRunning(); });
  gcs_namespace_ = false;
  ReplicaExit exit;
  exit.phase = "run";
  if (!st) {
    exit.exit_code = 1;
    exit.phase = "launch";
    exit.message = process_error_;
    Service(Severity::kError, process_error_);
    return Finish(exit);
  }
  exit.exit_code = st->exit_code;
  exit.signal = st->signal;
  exit.stop_requested = child_ended_after_term_;
  exit.stop_unrequested = child_ended_after_term_ && stop_unrequested_;
  if (st->exit_code == 0) {
    Service(Severity::kInfo, "Module completed; cleaning up.");
  } else if (st->signal != 0) {
    Service(term_requested_ ? Severity::kWarning : Severity::kError,
            "Module was terminated by " + SignalName(st->signal) + "; cleaning up.");
  } else {
    Service(Severity::kError,
            "Module exited with status " + std::to_string(st->exit_code) + "; cleaning up.");
  }
  CheckOom(&exit);  // now, so that the reason follows the exit line
  FinishChild();
  if (st->exit_code != 0) exit.error_tail = BuildErrorTail(stderr_tail_.Lines());
  CheckRelativeGs();
  Service(Severity::kInfo, "Clean up finished.");
  return Finish(exit);
}

EnvMap Launcher::PrepareTrainerDefaults(StorageClientFiles* files) {
  EnvMap defaults;
  EnvMap storage = StorageClientEnvironment(spec_.env, work_dir_, files);
  if (!storage.empty()) {
    Status s = MakeDirs(files->config_dir);
    if (s.ok()) s = WriteFileAtomic(files->boto_file, files->boto_text, /*durable=*/false);
    if (s.ok() && !files->token_file.empty()) {
      s = WriteFileAtomic(files->token_file, files->token_text, /*durable=*/false);
    }
    if (s.ok()) {
      defaults.merge(storage);
    } else {
      files->dir.clear();
      Service(Severity::kWarning, "Cannot configure gcloud and gsutil for the replica (" +
                                      s.message() + "); they would not reach Trainyard's storage.");
    }
  }
  return defaults;
}

void Launcher::PrepareGcsMount() {
  gcs_namespace_ = false;
  if (buckets_dir_.empty()) return;
  struct stat want;
  if (::stat(buckets_dir_.c_str(), &want) != 0) return;
  struct stat have;
  if (::stat(kGcsMountPoint, &have) == 0 && have.st_dev == want.st_dev &&
      have.st_ino == want.st_ino) {
    return;  // /gcs already is the bucket store (e.g. an operator's symlink)
  }
  auto unavailable = [&](const std::string& why) {
    Service(Severity::kInfo, std::string("Buckets are not mounted at ") + kGcsMountPoint + " (" +
                                 why +
                                 "); gs://BUCKET/PATH is $TRAINYARD_BUCKETS_DIR/BUCKET/PATH.");
  };
  if (::geteuid() != 0) return unavailable("the launcher does not run as root");
  if (::lstat(kGcsMountPoint, &have) != 0) {
    // The mount point: an empty directory, the only change to the host's filesystem.
    if (::mkdir(kGcsMountPoint, 0755) != 0 && errno != EEXIST) {
      return unavailable(std::string("cannot create ") + kGcsMountPoint + ": " +
                         std::strerror(errno));
    }
  } else if (!S_ISDIR(have.st_mode)) {
    return unavailable(std::string(kGcsMountPoint) + " exists and is not a directory");
  }
  // Try it in a throwaway child first, so that the outcome is known (and said) before the
  // trainer starts.
  pid_t pid = ::fork();
  if (pid < 0) return unavailable(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(errno);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) ::_exit(errno);
    if (::mount(buckets_dir_.c_str(), kGcsMountPoint, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      ::_exit(errno);
    }
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int err = WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
  if (err != 0) {
    return unavailable("cannot make a mount namespace: " + std::string(std::strerror(err)));
  }
  gcs_namespace_ = true;
  Service(Severity::kInfo, std::string("Buckets are mounted at ") + kGcsMountPoint +
                               ": gs://BUCKET/PATH is " + kGcsMountPoint + "/BUCKET/PATH.");
}

void Launcher::PrepareLocalJobDir() {
  auto job = spec_.env.find("CLOUD_ML_JOB");
  if (job == spec_.env.end()) return;
  const std::string dir = LocalJobDirFromCloudMlJob(job->second);
  if (dir.empty()) return;
  if (Status s = MakeDirs(dir); !s.ok()) {
    Service(Severity::kWarning, "Cannot create the job directory " + dir + " (" + s.message() +
                                    "); the trainer may fail to write there.");
  }
}

void Launcher::CheckRelativeGs() {
  const std::string cwd = spec_.cwd.empty() ? work_dir_ : spec_.cwd;
  size_t total = 0;
  std::vector<std::string> files = RelativeGsFiles(cwd, kGsWarningFiles, &total);
  std::string warning = RelativeGsWarning(cwd, files, total);
  if (warning.empty()) return;
  Service(Severity::kWarning, warning);
  exit_warnings_.push_back(std::move(warning));
}

bool Launcher::SlurmRendezvous(std::string* error) {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : "");
  };
  const std::string node = env("SLURMD_NODENAME");
  {
    nlohmann::json info = {{"jobId", env("SLURM_JOB_ID")},
                           {"stepId", env("SLURM_STEP_ID")},
                           {"node", node},
                           {"stepGpus", env("SLURM_STEP_GPUS")}};
    Status s = WriteFileAtomic(Join(work_dir_, "slurm.json"), info.dump(), /*durable=*/false);
    if (!s.ok()) Service(Severity::kWarning, "Cannot write slurm.json: " + s.message());
  }
  // The port: the one asked for (a restarted replica keeps its own), else a free one in the
  // range, probed from a random point. It stays bound until the trainer is about to start, so
  // no other launcher on the node takes it meanwhile.
  int lo = 20000;
  int hi = 32767;
  if (std::string range = env("TRAINYARD_PORT_RANGE"); !range.empty()) {
    if (std::sscanf(range.c_str(), "%d-%d", &lo, &hi) != 2 || lo < 1 || hi > 65535 || lo > hi) {
      lo = 20000;
      hi = 32767;
    }
  }
  int wanted = std::atoi(env("TRAINYARD_RENDEZVOUS_PORT").c_str());
  int fd = -1;
  int port = 0;
  const int span = hi - lo + 1;
  const int start = static_cast<int>((NowMicros() ^ ::getpid()) % span);
  for (int i = -1; i < span && fd < 0; ++i) {
    const int candidate = i < 0 ? wanted : lo + (start + i) % span;
    if (candidate <= 0) continue;
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) break;
    if (i < 0) {
      // The port of a replica restarted in place: its old connections may hold it in
      // TIME_WAIT, which must not move it elsewhere (its peers know it there).
      int one = 1;
      (void)::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(candidate));
    if (::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      fd = s;
      port = candidate;
    } else {
      ::close(s);
    }
  }
  if (fd < 0) {
    *error =
        "no free port in " + std::to_string(lo) + "-" + std::to_string(hi) + " on node " + node;
    return false;
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  nlohmann::json endpoint = {{"host", host}, {"port", port}, {"node", node}};
  std::string line = "TY-ENDPOINT " + endpoint.dump() + "\n";
  if (::write(STDOUT_FILENO, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    ::close(fd);
    *error = std::string("cannot tell the driver this replica's address: ") + std::strerror(errno);
    return false;
  }
  Service(Severity::kInfo, "Waiting for the other replicas (this one is " + std::string(host) +
                               ":" + std::to_string(port) + " on Slurm node " + node + ").");
  // The answer: one "TY-ENV {...}" line on stdin, once every replica of the run has reported.
  std::string buf;
  std::string answer;
  while (answer.empty()) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {sfd_, POLLIN, 0}};
    if (::poll(fds, 2, 1000) < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) HandleSignals();
    if (term_requested_) {
      ::close(fd);
      *error = "stopped while waiting for the other replicas";
      return false;
    }
    log_.MaybeFlush(MonotonicMicros());
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    char chunk[65536];
    ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      ::close(fd);
      *error = "the Slurm driver went away before every replica had reported its address";
      return false;
    }
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string l = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (StartsWith(l, "TY-ENV ")) answer = l.substr(7);
    }
  }
  ::close(fd);
  nlohmann::json vars = nlohmann::json::parse(answer, nullptr, /*allow_exceptions=*/false);
  if (!vars.is_object()) {
    *error = "the Slurm driver's answer is not a JSON object";
    return false;
  }
  for (const auto& [k, v] : vars.items()) {
    if (v.is_string()) spec_.env[k] = v.get<std::string>();
  }
  // GPUs are Slurm's: each step sees only its own (CUDA_VISIBLE_DEVICES from slurmstepd); a
  // step without GPUs sees none. A container gets the devices of SLURM_STEP_GPUS (global
  // indices), numbered from 0 inside.
  const std::string visible = env("CUDA_VISIBLE_DEVICES");
  const std::string step_gpus = env("SLURM_STEP_GPUS");
  if (IsContainer() && !step_gpus.empty()) {
    std::string inside;
    int i = 0;
    for (const std::string& g : Split(step_gpus, ',')) {
      spec_.container.devices.push_back("/dev/nvidia" + Trim(g));
      inside += (i ? "," : "") + std::to_string(i);
      ++i;
    }
    for (const char* dev : {"/dev/nvidiactl", "/dev/nvidia-uvm"}) {
      if (::access(dev, F_OK) == 0) spec_.container.devices.push_back(dev);
    }
    spec_.env["CUDA_VISIBLE_DEVICES"] = inside;
  } else {
    spec_.env["CUDA_VISIBLE_DEVICES"] = visible;
  }
  if (!visible.empty()) spec_.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  Service(Severity::kInfo, "Every replica has reported its address; starting the trainer.");
  return true;
}

int Launcher::LaunchFailure(const std::string& message) {
  ReplicaExit exit;
  exit.exit_code = 1;
  exit.phase = "launch";
  exit.message = message;
  Service(Severity::kError, message);
  return Finish(exit);
}

int Launcher::StoppedBeforeStart() {
  ReplicaExit exit;
  exit.phase = "install";
  exit.signal = term_signal_;
  exit.exit_code = 128 + term_signal_;
  exit.message = "the replica was stopped before the trainer started";
  Service(Severity::kWarning, "The replica was stopped before the trainer started.");
  return Finish(exit);
}

bool Launcher::Init(std::string* error) {
  // Identity first: the executor (and a restarted daemon) find the launcher through it.
  auto self = executor::ReadProcStat(::getpid());
  Status s = WriteFileAtomic(Join(work_dir_, executor::kPidFile),
                             executor::FormatPidFile(::getpid(), self ? self->start_time : 0),
                             /*durable=*/false);
  if (!s.ok()) std::fprintf(stderr, "trainyard-launcher: %s\n", s.ToString().c_str());

  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) std::perror("trainyard-launcher: subreaper");
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGCHLD, SIGHUP}) sigaddset(&set, sig);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  sfd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  ::signal(SIGPIPE, SIG_IGN);
  if (sfd_ < 0) {
    *error = std::string("cannot create a signalfd: ") + std::strerror(errno);
    return false;
  }
  ReserveExitSpace();
  if (!log_.Open(Join(work_dir_, executor::kLogFile))) {
    *error = "cannot open " + Join(work_dir_, executor::kLogFile) + ": " + std::strerror(errno);
    return false;
  }
  auto text = ReadFile(Join(work_dir_, executor::kSpecFile));
  if (!text.ok()) {
    *error = text.status().message();
    return false;
  }
  auto spec = executor::SpecFromJson(*text);
  if (!spec.ok()) {
    *error = spec.status().message();
    return false;
  }
  spec_ = std::move(spec).value();
  report_attempt_ = spec_.attempt;
  if (auto b = spec_.env.find("TRAINYARD_BUCKETS_DIR"); b != spec_.env.end()) {
    buckets_dir_ = b->second;
  }
  if (IsContainer()) {
    executor::ContainerSpec& c = spec_.container;
    if (c.engine.empty()) c.engine = "podman";
    if (c.name.empty()) {
      *error = "the container replica spec names no container";
      return false;
    }
    const size_t slash = c.engine.rfind('/');
    docker_ = c.engine.substr(slash == std::string::npos ? 0 : slash + 1).starts_with("docker");
    std::map<std::string, std::string> env_map;
    for (const std::string& kv : base_env_) {
      size_t eq = kv.find('=');
      if (eq != std::string::npos) env_map[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : c.engine_env) env_map[k] = v;
    for (const auto& [k, v] : env_map) engine_env_.push_back(k + "=" + v);
    // See the header comment: the engine's daemonized helpers are not the replica's leftovers.
    if (::prctl(PR_SET_CHILD_SUBREAPER, 0) != 0) std::perror("trainyard-launcher: subreaper");
    return true;
  }
  if (spec_.python.empty()) spec_.python = "python3";
  if (spec_.python_module.empty()) {
    *error = "the replica spec names no Python module";
    return false;
  }
  if (spec_.env_cache_dir.empty()) spec_.env_cache_dir = Join(work_dir_, "env-cache");
  return true;
}

// Sets aside room for exit.json (freed in Finish): a trainer that fills the filesystem must
// not also take the report of how it ended. Best effort: a disk full already gets none.
void Launcher::ReserveExitSpace() {
  const std::string path = Join(work_dir_, executor::kExitReserveFile);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string zeros(executor::kExitReserveBytes, '\0');
  size_t off = 0;
  while (off < zeros.size()) {
    ssize_t n = ::write(fd, zeros.data() + off, zeros.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  if (off < zeros.size()) ::unlink(path.c_str());
}

int Launcher::Finish(ReplicaExit exit) {
  CheckOom(&exit);
  ReleaseCgroups();
  log_.Flush();
  // ENOSPC seen by the launcher's log, or named by the trainer's error: the replica ran out of
  // disk space, which a restart would not cure (the scheduler does not retry it).
  if (log_.disk_full() || executor::MentionsDiskFull(exit.error_tail) ||
      (exit.phase != "run" && executor::MentionsDiskFull(exit.message))) {
    exit.disk_full = true;
    if (log_.disk_full()) {
      const std::string lost = "No space left on device: " + std::to_string(log_.dropped_bytes()) +
                               " bytes of the replica's log could not be written to " +
                               Join(work_dir_, executor::kLogFile);
      exit.message = exit.message.empty() ? lost : exit.message + "; " + lost;
    }
  }
  ::unlink(Join(work_dir_, executor::kExitReserveFile).c_str());
  std::string report = executor::ExitToJson(exit, report_attempt_);
  if (!exit_warnings_.empty()) {
    // An addition of the launcher's to exit.json (docs/on-disk-layout.md); readers that do not
    // know it ignore it.
    nlohmann::json j = nlohmann::json::parse(report, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) {
      j["warnings"] = exit_warnings_;
      report = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }
  // A newer attempt owns the work dir (this step's allocation was given up after its node's
  // slurmd died, and the gang runs again elsewhere): its exit.json is not this step's to write.
  std::string exit_file = executor::kExitFile;
  if (const int now = executor::SpecAttemptIn(work_dir_);
      executor::AttemptSuperseded(report_attempt_, now)) {
    exit_file = executor::SupersededExitFile(report_attempt_);
    std::fprintf(stderr,
                 "trainyard-launcher: attempt %d of this replica runs now; this step's (attempt "
                 "%d) report goes to %s\n",
                 now, report_attempt_, exit_file.c_str());
  }
  Status s = WriteFileAtomic(work_dir_ + "/" + exit_file, report);
  if (!s.ok() && report.size() > 1024) {
    // Still no room for the whole report (its error tail, its warnings): the facts alone.
    ReplicaExit brief = exit;
    brief.error_tail.clear();
    if (brief.message.size() > 256) brief.message.resize(256);
    s = WriteFileAtomic(work_dir_ + "/" + exit_file, executor::ExitToJson(brief, report_attempt_));
  }
  if (!s.ok()) {
    std::fprintf(stderr, "trainyard-launcher: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Environment

std::optional<std::string> Launcher::PythonVersion() {
  // Cached per interpreter file (path, inode, size, mtime): running Python costs ~20 ms.
  std::string resolved = spec_.python;
  if (resolved.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    for (const std::string& dir : Split(path != nullptr ? path : "/usr/bin:/bin", ':')) {
      std::string candidate = (dir.empty() ? "." : dir) + "/" + spec_.python;
      if (::access(candidate.c_str(), X_OK) == 0) {
        resolved = candidate;
        break;
      }
    }
  }
  std::string cache_file;
  struct stat st;
  if (::stat(resolved.c_str(), &st) == 0) {
    std::string id = resolved + "\n" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) +
                     "\n" + std::to_string(st.st_size) + "\n" + std::to_string(st.st_mtim.tv_sec) +
                     "." + std::to_string(st.st_mtim.tv_nsec);
    cache_file = spec_.env_cache_dir + "/python-" + Sha256Hex(id).substr(0, 32) + ".version";
    if (auto cached = ReadFile(cache_file); cached.ok() && !cached->empty()) {
      std::string v = *cached;
      while (!v.empty() && v.back() == '\n') v.pop_back();
      return v;
    }
  }
  capture_.clear();
  auto status = RunChild({spec_.python, "-c", "import sys;print(sys.version)"}, host_env_,
                         Sink::kCapture, {});
  if (status) FinishChild();
  if (!status || status->exit_code != 0) {
    failure_.phase = "install";
    failure_.exit_code = status ? status->exit_code : 1;
    failure_.signal = status ? status->signal : 0;
    failure_.message = "cannot run the Python interpreter " + spec_.python +
                       (status ? " (exit status " + std::to_string(status->exit_code) + ")"
                               : ": " + process_error_);
    return std::nullopt;
  }
  std::string version = capture_;
  while (!version.empty() && version.back() == '\n') version.pop_back();
  if (!cache_file.empty()) (void)WriteFileAtomic(cache_file, version + "\n", /*durable=*/false);
  return version;
}

std::optional<std::string> Launcher::PrepareEnvironment() {
  if (spec_.packages.empty()) return spec_.python;

  if (Status s = MakeDirs(spec_.env_cache_dir); !s.ok()) {
    failure_.phase = "install";
    failure_.exit_code = 1;
    failure_.message = s.message();
    return std::nullopt;
  }
  std::optional<std::string> version = PythonVersion();
  if (!version) return std::nullopt;

  // The environment's identity: everything that changes what pip would install.
  std::string hash_input = "trainyard-env-v1\npython=" + spec_.python + "\nversion=" + *version +
                           "\nindex-url=" + spec_.pip_index_url + "\n";
  for (const std::string& link : spec_.pip_find_links) hash_input += "find-links=" + link + "\n";
  for (size_t i = 0; i < spec_.packages.size(); ++i) {
    const std::string& path = spec_.packages[i];
    auto sha = Sha256FileHex(path);
    if (!sha.ok()) {
      failure_.phase = "install";
      failure_.exit_code = 1;
      failure_.message = "cannot read the package " +
                         (i < spec_.package_uris.size() ? spec_.package_uris[i] : path) + ": " +
                         sha.status().message();
      Service(Severity::kError, failure_.message);
      return std::nullopt;
    }
    size_t slash = path.rfind('/');
    hash_input +=
        "package=" + path.substr(slash == std::string::npos ? 0 : slash + 1) + " " + *sha + "\n";
  }
  const std::string hash = Sha256Hex(hash_input);
  const std::string dir = spec_.env_cache_dir + "/" + hash;
  const std::string lock_path = dir + ".lock";

  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) {
    failure_.phase = "install";
    failure_.exit_code = 1;
    failure_.message = "cannot open " + lock_path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  // A shared lock while the environment is used (held until the launcher exits), so garbage
  // collection (which takes it exclusively, without waiting) never removes one in use; an
  // exclusive one while it is built. flock(2) converts a lock by dropping it first: a
  // LOCK_EX|LOCK_NB that fails leaves this launcher with no lock at all, and the replica that
  // then builds the environment keeps it shared for as long as its trainer runs. So a replica
  // that does not get it exclusively never waits for LOCK_EX: it starts over from LOCK_SH
  // (which waits only while a build holds it exclusively) and looks for .complete again.
  bool announced = false;
  auto lock_failed = [&]() -> bool {
    if (errno == EWOULDBLOCK || errno == EINTR) return false;
    failure_.phase = "install";
    failure_.exit_code = 1;
    failure_.message = "cannot lock " + lock_path + ": " + std::strerror(errno);
    return true;
  };
  auto lock = [&](int op) -> bool {
    while (::flock(lock_fd, op | LOCK_NB) != 0) {
      if (lock_failed()) return false;
      WaitForSignal(100 * 1000);
      if (term_requested_) return false;
    }
    return true;
  };
  auto stopped = [&]() -> std::optional<std::string> {
    ::close(lock_fd);
    if (term_requested_) return spec_.python;  // Run() reports the stop
    return std::nullopt;
  };
  std::optional<std::string> python;
  auto cached = [&]() -> bool {
    if (!executor::FileExists(dir + "/.complete")) return false;
    Service(Severity::kInfo, "Using cached environment " + hash);
    python = dir + "/bin/python";
    return true;
  };
  for (bool first = true;; first = false) {
    if (!lock(LOCK_SH)) return stopped();
    // Replicas of one job may all hold it shared here at once (test_faults.py holds them).
    if (first) TY_FAILPOINT("launcher.env.after_shared_lock");
    if (cached()) break;
    if (::flock(lock_fd, LOCK_EX | LOCK_NB) == 0) {
      if (!cached()) python = BuildEnvironment(hash, dir, hash_input);  // or built meanwhile
      if (python && !lock(LOCK_SH)) return stopped();
      break;
    }
    if (lock_failed()) return stopped();
    // Another replica holds it (shared, about to build, or exclusively, building); this one
    // holds nothing now. Again from the shared lock, after a pause of 50-150 ms.
    if (!announced) {
      Service(Severity::kInfo, "Waiting for another replica to prepare environment " + hash);
      announced = true;
    }
    WaitForSignal((50 + static_cast<int64_t>(NowMicros() % 100)) * 1000);
    if (term_requested_) return stopped();
  }
  if (!python) {
    ::close(lock_fd);
    return python;
  }
  // Its last use, for garbage collection (least recently used first).
  ::utimensat(AT_FDCWD, (dir + "/.complete").c_str(), nullptr, 0);
  env_lock_fd_ = lock_fd;  // closed (released) when the launcher exits
  return python;
}

std::optional<std::string> Launcher::BuildEnvironment(const std::string& hash,
                                                      const std::string& dir,
                                                      const std::string& hash_input) {
  for (size_t i = 0; i < spec_.packages.size(); ++i) {
    Service(Severity::kInfo,
            "Installing the package: " +
                (i < spec_.package_uris.size() ? spec_.package_uris[i] : spec_.packages[i]));
  }
  // A leftover of an interrupted build. The venv is built in place: its bin/python path is
  // baked into its scripts and pyvenv.cfg, so it cannot be built elsewhere and renamed.
  (void)executor::RemoveTree(dir);

  std::vector<std::string> venv = {spec_.python,    "-m", "venv", "--system-site-packages",
                                   "--without-pip", dir};
  Service(Severity::kInfo, "Running command: " + executor::ShellJoin(venv));
  auto st = RunChild(venv, host_env_, Sink::kInstall, {});
  if (st) FinishChild();
  if (!st || st->exit_code != 0 || term_requested_) {
    (void)executor::RemoveTree(dir);
    failure_ = InstallFailure(st, "creating the environment");
    return std::nullopt;
  }

  std::vector<std::string> pip = {spec_.python,
                                  "-m",
                                  "pip",
                                  "--python",
                                  dir + "/bin/python",
                                  "install",
                                  "--no-input",
                                  "--disable-pip-version-check",
                                  "--no-build-isolation",
                                  "--no-cache-dir"};
  if (spec_.pip_index_url.empty()) {
    pip.push_back("--no-index");
  } else {
    pip.push_back("--index-url");
    pip.push_back(spec_.pip_index_url);
  }
  for (const std::string& link : spec_.pip_find_links) {
    pip.push_back("--find-links");
    pip.push_back(link);
  }
  pip.insert(pip.end(), spec_.packages.begin(), spec_.packages.end());
  install_tail_.clear();
  install_errors_.clear();
  Service(Severity::kInfo, "Running command: " + executor::ShellJoin(pip));
  // pip sees what the trainer will see on its PYTHONPATH: the cloudml-hypertune Trainyard ships
  // there satisfies a package that requires it (Google's samples do), with no index to fetch it.
  // The host part is the trainer's plus PIP_* (an operator's index, find-links, timeouts):
  // building a package runs its setup.py, which is the user's code too.
  EnvMap pip_env_map = HostEnvironment(launcher_env_, {"PIP_*"});
  if (auto pp = spec_.env.find("PYTHONPATH"); pp != spec_.env.end()) {
    pip_env_map["PYTHONPATH"] = pp->second;
  }
  const std::vector<std::string> pip_env = ToEnvLines(pip_env_map);
  st = RunChild(pip, pip_env, Sink::kInstall, {});
  if (st) FinishChild();
  if (!st || st->exit_code != 0 || term_requested_) {
    (void)executor::RemoveTree(dir);
    failure_ = InstallFailure(st, "installing the packages");
    return std::nullopt;
  }
  Status s = WriteFileAtomic(dir + "/.complete", hash_input, /*durable=*/false);
  if (!s.ok()) {
    (void)executor::RemoveTree(dir);
    failure_.phase = "install";
    failure_.exit_code = 1;
    failure_.message = s.message();
    return std::nullopt;
  }
  Service(Severity::kInfo, "Environment " + hash + " is ready.");
  return dir + "/bin/python";
}

ReplicaExit Launcher::InstallFailure(const std::optional<ChildStatus>& st,
                                     const std::string& what) {
  ReplicaExit exit;
  exit.phase = "install";
  exit.exit_code = st ? st->exit_code : 1;
  exit.signal = st ? st->signal : 0;
  if (!st) {
    exit.message = process_error_;
  } else if (term_requested_) {
    exit.message = "the replica was stopped while " + what;
  } else {
    std::vector<std::string> lines(install_errors_.begin(), install_errors_.end());
    if (lines.empty()) lines.assign(install_tail_.begin(), install_tail_.end());
    for (const std::string& l : lines) {
      if (!exit.message.empty()) exit.message.push_back('\n');
      exit.message += l;
    }
    if (exit.message.empty()) {
      exit.message = what + " failed with status " + std::to_string(exit.exit_code);
    }
  }
  Service(term_requested_ ? Severity::kWarning : Severity::kError,
          "Failed " + what + " (status " + std::to_string(exit.exit_code) + ").");
  return exit;
}

// ---------------------------------------------------------------------------------------------
// Custom containers

// Whether `run`'s error output says the image is not in local storage (podman: "image not
// known"; docker: "No such image" / "Unable to find image").
constexpr Duration kContainerStartedAfter = 200 * 1000;

bool MissingImage(const std::vector<std::string>& stderr_lines) {
  for (const std::string& line : stderr_lines) {
    if (line.find("image not known") != std::string::npos ||
        line.find("No such image") != std::string::npos ||
        line.find("Unable to find image") != std::string::npos) {
      return true;
    }
  }
  return false;
}

// Images (docs/containers.md, "Registries"). Each engine call costs tens of milliseconds (more
// on a loaded machine), so an image that needs no pull costs none ("never", and local names
// such as localhost/trainer:1: `run --pull=never` fails at once when it is missing) or one
// (`image inspect` with "missing"; two when a mirror maps it).
std::optional<std::string> Launcher::PrepareImage() {
  const executor::ContainerSpec& c = spec_.container;
  const executor::ImagePull& p = c.pull;
  const std::string policy = p.policy.empty() ? "never" : p.policy;
  if (policy == "never" || p.reference.empty()) return c.image;
  // Replicas on this machine that need the same image take turns: the first pulls, the others
  // find it there ("missing") or find that their job pulled it ("always"). An uncontended lock
  // costs next to nothing, so images already here are checked under it too (no window between
  // a check and a pull).
  const std::string dir =
      (spec_.env_cache_dir.empty() ? work_dir_ : spec_.env_cache_dir) + "/image-pulls";
  const std::string base = dir + "/" + Sha256Hex(p.reference).substr(0, 32);
  auto fail = [&](const std::string& message) -> std::optional<std::string> {
    failure_ = ReplicaExit{};
    failure_.phase = "launch";
    failure_.exit_code = 1;
    failure_.message = message;
    Service(Severity::kError, message);
    return std::nullopt;
  };
  if (Status st = MakeDirs(dir); !st.ok()) return fail("Cannot pull images: " + st.message());
  const std::string lock_path = base + ".lock";
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) {
    return fail("Cannot pull images: cannot open " + lock_path + ": " + std::strerror(errno));
  }
  bool waited = false;
  while (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const std::string why = std::strerror(errno);
      ::close(lock_fd);
      return fail("Cannot pull images: cannot lock " + lock_path + ": " + why);
    }
    if (!waited) {
      Service(Severity::kInfo, "Waiting for another replica's pull of " + p.reference + ".");
      waited = true;
    }
    WaitForSignal(100 * 1000);
    if (term_requested_) {
      ::close(lock_fd);
      return std::nullopt;  // Run() reports the stop
    }
  }
  const std::string marker = base + ".pulled";  // the token of the job that pulled it last
  std::string run = p.reference;
  bool have = false;
  if (policy == "missing") {
    if (ImagePresent(c.image)) {
      run = c.image;
      have = true;
    } else if (p.reference != c.image && ImagePresent(p.reference)) {
      have = true;
    }
    if (have && waited) {
      Service(Severity::kInfo, "Another replica has pulled " + run + "; it is not pulled again.");
    }
  } else if (policy == "always" && !p.token.empty()) {
    auto pulled_for = ReadFile(marker);
    if (pulled_for.ok() && *pulled_for == p.token + "\n" && ImagePresent(p.reference)) {
      Service(Severity::kInfo, "Another replica of this job has pulled " + p.reference +
                                   "; it is not pulled again (image_pull_policy always).");
      have = true;
    }
  }
  if (!have && !term_requested_) {
    have = PullImage();
    if (have && !p.token.empty()) {
      (void)WriteFileAtomic(marker, p.token + "\n", /*durable=*/false);
    }
  }
  ::close(lock_fd);  // releases the lock
  if (!have) return std::nullopt;
  return run;
}

bool Launcher::ImagePresent(const std::string& ref) {
  auto st = RunEngine({"image", "inspect", "--format", "{{.Id}}", ref});
  return st && st->signal == 0 && st->exit_code == 0;
}

std::string Launcher::PullDescription() const {
  const executor::ContainerSpec& c = spec_.container;
  const executor::ImagePull& p = c.pull;
  std::string out = c.image;
  if (p.reference != c.image) {
    out += " (as " + p.reference +
           (p.mirror.empty() ? std::string(")") : " through registry_mirrors " + p.mirror + ")");
  }
  return out;
}

bool Launcher::PullImage() {
  const executor::ContainerSpec& c = spec_.container;
  const executor::ImagePull& p = c.pull;
  std::vector<std::string> argv = {c.engine, "pull"};
  std::vector<std::string> env = engine_env_;
  std::string how = "image_pull_policy " + p.policy;
  if (!p.tls_verify) {
    how += ", without TLS verification";
    if (!docker_) argv.push_back("--tls-verify=false");
  }
  if (!p.auth_file.empty()) {
    how += ", credentials from " + p.auth_file;
    if (docker_) {
      // docker reads <DOCKER_CONFIG>/config.json (the same format).
      const size_t slash = p.auth_file.rfind('/');
      if (p.auth_file.substr(slash + 1) == "config.json") {
        env.push_back("DOCKER_CONFIG=" + p.auth_file.substr(0, slash));
      } else {
        Service(Severity::kWarning,
                "docker reads credentials from a file named config.json; "
                "registry_auth_file " +
                    p.auth_file + " is not used.");
      }
    } else {
      argv.push_back("--authfile");
      argv.push_back(p.auth_file);
    }
  } else {
    how += ", no registry_auth_file";
  }
  argv.push_back("--");  // whatever the reference is, it is never read as an option
  argv.push_back(p.reference);
  Service(Severity::kInfo, "Pulling the container image " + PullDescription() +
                               " from the registry " + p.registry + " (" + how + ").");
  Service(Severity::kInfo, "Running command: " + executor::ShellJoin(argv));
  capture_.clear();
  engine_err_.clear();
  const int64_t start = MonotonicMicros();
  auto st = RunChild(argv, env, Sink::kPull, {});
  if (st) FinishChild();
  const double seconds = static_cast<double>(MonotonicMicros() - start) / kMicrosPerSecond;
  char took[32];
  std::snprintf(took, sizeof took, "%.2f s", seconds);
  if (term_requested_) return false;
  if (st && st->signal == 0 && st->exit_code == 0) {
    std::string id = capture_;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    if (const size_t nl = id.rfind('\n'); nl != std::string::npos) id = id.substr(nl + 1);
    Service(Severity::kInfo, "Pulled " + p.reference + " from the registry " + p.registry + " in " +
                                 took + (id.empty() ? "" : " (image " + id + ")") + ".");
    return true;
  }
  // What the engine said: its "Error" lines (podman's retry warnings repeat them), else the
  // last lines it printed.
  std::string said;
  for (const std::string& line : engine_err_) {
    if (StartsWith(line, "Error") || StartsWith(line, "error")) {
      said += (said.empty() ? "" : " ") + line;
    }
  }
  if (said.empty()) said = EngineErrors(3);
  if (said.size() > 2000) said = said.substr(0, 2000) + "...";
  const std::string engine_name = docker_ ? "docker" : "podman";
  std::string outcome =
      !st ? process_error_
          : engine_name + " pull " +
                (st->signal != 0 ? "was killed by " + SignalName(st->signal)
                                 : "exited with status " + std::to_string(st->exit_code)) +
                " after " + took + (said.empty() ? "" : ": " + said);
  failure_ = ReplicaExit{};
  failure_.phase = "launch";
  failure_.exit_code = 1;
  failure_.message = "Cannot pull the container image " + PullDescription() +
                     " from the registry " + p.registry + " (" + how + "): " + outcome;
  Service(Severity::kError, failure_.message);
  return false;
}

int Launcher::RunContainer(const std::string& image) {
  const executor::ContainerSpec& c = spec_.container;
  const std::string engine_name = docker_ ? "docker" : "podman";
  auto launch_failure = [&](const std::string& message) { return LaunchFailure(message); };

  const std::string env_file = Join(work_dir_, "container.env");
  // The container's environment is Trainyard's defaults and the spec's, none of the host's.
  StorageClientFiles files;
  EnvMap env = PrepareTrainerDefaults(&files);
  // Python in the image unbuffered, so print() output is in the logs at once (its stdout is a
  // pipe, which Python would block-buffer until exit). Unlike for Python trainers, there is no
  // cheaper way in: an image's PYTHONPATH and site-packages are unknown (the cost: a write()
  // per print, docs/benchmarks.md). The spec's env still wins.
  env["PYTHONUNBUFFERED"] = "1";
  for (const auto& [k, v] : spec_.env) env[k] = v;
  if (Status s = WriteContainerEnv(env); !s.ok()) {
    return launch_failure("Cannot write " + env_file + ": " + s.message());
  }
  // A container of an earlier attempt of this replica (the launcher died before removing it)
  // goes first: podman's --replace does it in the same call, docker needs its own.
  if (docker_) {
    (void)RunEngine({"rm", "-f", c.name});
    if (term_requested_) return StoppedBeforeStart();
  }
  // Trainyard never pulls (--pull=never): a missing image makes `run` fail at once, and the
  // failure says what to do about it (below). No separate `image exists` call: every engine
  // call costs tens of milliseconds of start time.
  std::vector<std::string> argv = {c.engine, "run", "--name", c.name};
  if (!docker_) argv.push_back("--replace");
  for (const char* a : {"--pull=never", "--network=host", "--env-file"}) argv.push_back(a);
  argv.push_back(env_file);
  for (const std::string& m : c.mounts) {
    argv.push_back("-v");
    argv.push_back(m);
  }
  for (const std::string& m : ContainerMounts(files)) {
    argv.push_back("-v");
    argv.push_back(m);
  }
  for (const std::string& d : c.devices) {
    argv.push_back("--device");
    argv.push_back(d);
  }
  if (spec_.limits.cpu_millis > 0) {
    argv.push_back("--cpus");
    argv.push_back(FormatCpus(spec_.limits.cpu_millis));
  }
  if (spec_.limits.memory_bytes > 0) {
    argv.push_back("--memory");
    argv.push_back(std::to_string(spec_.limits.memory_bytes) + "b");
  }
  std::vector<std::string> command;  // after the image
  if (c.entrypoint) {
    argv.push_back("--entrypoint");
    if (c.entrypoint->empty()) {
      // [""]: no entrypoint and, unlike "[]" for podman, not the image's CMD either.
      argv.push_back("");
    } else if (docker_) {
      // docker takes one executable; the rest of the entrypoint leads the command.
      argv.push_back(c.entrypoint->front());
      command.assign(c.entrypoint->begin() + 1, c.entrypoint->end());
    } else {
      argv.push_back(JsonStringArray(*c.entrypoint));
    }
  }
  argv.push_back("--");  // whatever the image is called, it is never read as an option
  argv.push_back(image);
  argv.insert(argv.end(), command.begin(), command.end());
  argv.insert(argv.end(), c.args.begin(), c.args.end());

  Service(Severity::kInfo, "Running container image " + image + ".");
  Service(Severity::kInfo, "Running command: " + executor::ShellJoin(argv));
  // The replica counts as running once the container shows life (output, or 200 ms without
  // the engine failing): a missing image fails the job while it is still PREPARING.
  auto st = RunChild(
      argv, engine_env_, Sink::kTrainer, [this] { MarkRunning(); }, kContainerStartedAfter);
  ReplicaExit exit;
  exit.phase = "run";
  if (!st) {
    exit.exit_code = 1;
    exit.phase = "launch";
    exit.message = process_error_;
    Service(Severity::kError, process_error_);
    InspectAndRemoveContainer(&exit);
    return Finish(exit);
  }
  exit.exit_code = st->exit_code;
  exit.signal = st->signal;
  // The engine reports a container killed by a signal shell-style, as 128 + signal.
  if (exit.signal == 0 && exit.exit_code > 128 && exit.exit_code <= 128 + SIGRTMAX) {
    exit.signal = exit.exit_code - 128;
  }
  exit.stop_requested = child_ended_after_term_;
  exit.stop_unrequested = child_ended_after_term_ && stop_unrequested_;
  const bool engine_error = st->signal == 0 && st->exit_code == 125;
  if (exit.exit_code == 0) {
    Service(Severity::kInfo, "Container completed; cleaning up.");
  } else if (engine_error) {
    Service(Severity::kError, c.engine + " could not run the container (status 125); cleaning up.");
  } else if (exit.signal != 0) {
    Service(term_requested_ ? Severity::kWarning : Severity::kError,
            "Container was terminated by " + SignalName(exit.signal) + "; cleaning up.");
  } else {
    Service(Severity::kError,
            "Container exited with status " + std::to_string(exit.exit_code) + "; cleaning up.");
  }
  FinishChild();
  if (engine_error && MissingImage(stderr_tail_.Lines())) {
    // Only images that were not to be pulled get here (PrepareImage pulled the others).
    const std::string make = "build it (" + c.engine + " build -t " + image + " DIR) or load it (" +
                             c.engine + " load -i FILE) on this machine";
    exit.phase = "launch";
    exit.exit_code = 1;
    exit.message =
        "The container image " + image + " is not in the local storage of " + engine_name;
    if (c.pull.reference.empty()) {
      exit.message +=
          ", and its name has no registry to pull it from (localhost/ names "
          "images built on this machine): " +
          make + ", or push it to a registry and give that registry's name.";
    } else if (c.pull.policy == "missing" || c.pull.policy == "always") {
      exit.message += " any more (it was removed after Trainyard found or pulled it): " + make +
                      ", or submit the job again to pull it.";
    } else {
      exit.message += " and image_pull_policy is never: " + make + ", or pull it (" + c.engine +
                      " pull " + c.pull.reference + ").";
    }
    Service(Severity::kError, exit.message);
    InspectAndRemoveContainer(&exit);
    Service(Severity::kInfo, "Clean up finished.");
    return Finish(exit);
  }
  if (engine_error) {
    exit.phase = "launch";
    std::vector<std::string> lines = stderr_tail_.Lines();
    const size_t keep = std::min<size_t>(lines.size(), 5);
    for (size_t i = lines.size() - keep; i < lines.size(); ++i) {
      if (!exit.message.empty()) exit.message.push_back('\n');
      exit.message += lines[i];
    }
    if (exit.message.empty()) exit.message = c.engine + " run exited with status 125";
  }
  InspectAndRemoveContainer(&exit);
  if (exit.exit_code != 0) exit.error_tail = BuildErrorTail(stderr_tail_.Lines());
  Service(Severity::kInfo, "Clean up finished.");
  return Finish(exit);
}

std::optional<ChildStatus> Launcher::RunEngine(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {spec_.container.engine};
  argv.insert(argv.end(), args.begin(), args.end());
  capture_.clear();
  engine_err_.clear();
  auto st = RunChild(argv, engine_env_, Sink::kEngine, {});
  if (st) FinishChild();
  return st;
}

std::vector<std::string> Launcher::ContainerMounts(const StorageClientFiles& files) {
  std::vector<std::string> mounts;
  if (!files.dir.empty()) mounts.push_back(files.dir + ":" + files.dir);
  if (!buckets_dir_.empty()) mounts.push_back(buckets_dir_ + ":" + kGcsMountPoint);
  // A job dir on the host (not in a bucket, which is mounted already) at the same path, so
  // what the trainer writes there outlives the container (compat §6.4: --job-dir DIR).
  auto job = spec_.env.find("CLOUD_ML_JOB");
  const std::string job_dir =
      job != spec_.env.end() ? LocalJobDirFromCloudMlJob(job->second) : std::string();
  if (!job_dir.empty()) {
    struct stat st;
    if (job_dir == "/" || job_dir.find(':') != std::string::npos ||
        job_dir.find(',') != std::string::npos) {
      Service(Severity::kWarning, "The job directory " + job_dir +
                                      " cannot be mounted into the container; what the trainer "
                                      "writes there stays in the container and is lost.");
    } else if (::stat(job_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      Service(Severity::kWarning, "The job directory " + job_dir +
                                      " is not a directory on this machine; it is not mounted "
                                      "into the container.");
    } else {
      mounts.push_back(job_dir + ":" + job_dir);
    }
  }
  return mounts;
}

Status Launcher::WriteContainerEnv(const EnvMap& env) {
  std::string text;
  for (const auto& [k, v] : env) {
    if (!ValidEnvFileKey(k)) {
      Service(Severity::kWarning, "The environment variable \"" + k +
                                      "\" cannot be passed to the container; it is left out.");
      continue;
    }
    // An env file has one variable per line and no quoting.
    if (v.find('\n') != std::string::npos || v.find('\r') != std::string::npos) {
      Service(Severity::kWarning, "The value of the environment variable " + k +
                                      " has a line break and cannot be passed to the "
                                      "container; it is left out.");
      continue;
    }
    text += k + "=" + v + "\n";
  }
  return WriteFileAtomic(Join(work_dir_, "container.env"), text, /*durable=*/false);
}

std::string Launcher::EngineErrors(size_t max_lines) const {
  std::string out;
  const size_t first = engine_err_.size() > max_lines ? engine_err_.size() - max_lines : 0;
  for (size_t i = first; i < engine_err_.size(); ++i) {
    if (!out.empty()) out.push_back('\n');
    out += engine_err_[i];
  }
  return out;
}

void Launcher::InspectAndRemoveContainer(ReplicaExit* exit) {
  const executor::ContainerSpec& c = spec_.container;
  // Cleanup commands are not stopped by a stop request: the container must go either way.
  shielded_ = true;
  auto st =
      RunEngine({"inspect", "--type", "container", "--format", "{{.State.OOMKilled}}", c.name});
  std::string state = capture_;
  while (!state.empty() && (state.back() == '\n' || state.back() == ' ')) state.pop_back();
  if (st && st->exit_code == 0 && state == "true") ReportOom(exit);

  const std::vector<std::string> rm = docker_
                                          ? std::vector<std::string>{"rm", "-f", c.name}
                                          : std::vector<std::string>{"rm", "-f", "-t", "0", c.name};
  st = RunEngine(rm);
  // The executor's one sweep at the end of the grace period can hit it: once more then.
  if (st && st->signal != 0) st = RunEngine(rm);
  shielded_ = false;
  if (!st) {
    Service(Severity::kWarning, "Cannot remove the container " + c.name + ": " + process_error_);
  } else if (st->exit_code != 0) {
    std::string errors = EngineErrors(5);
    std::string lower = errors;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (lower.find("no such container") == std::string::npos) {
      Service(Severity::kWarning, "Cannot remove the container " + c.name + " (status " +
                                      std::to_string(st->exit_code) + ")" +
                                      (errors.empty() ? "." : ": " + errors));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Resource limits

void Launcher::SetUpCgroups() {
  if (spec_.cgroup_root.empty()) return;
  namespace cg = executor::cgroup_v1;
  const std::string& root = spec_.cgroup_root;
  std::vector<std::string> dirs;
  auto setup = [&]() -> Status {
    TRAINYARD_RETURN_IF_ERROR(cg::ValidateGroupName(spec_.cgroup_name));
    for (const char* controller : {cg::kMemory, cg::kCpu}) {
      TRAINYARD_RETURN_IF_ERROR(cg::CheckHierarchy(root + "/" + controller, controller));
      std::string dir = cg::GroupDir(root, controller, spec_.cgroup_name);
      // A group left by an earlier attempt: its processes go, and a fresh group starts its
      // OOM-kill counter at 0.
      TRAINYARD_RETURN_IF_ERROR(cg::DestroyGroup(dir, kCleanupTimeout, [this] { ReapAndWait(); }));
      TRAINYARD_RETURN_IF_ERROR(cg::CreateGroup(dir));
      dirs.push_back(std::move(dir));
    }
    const std::string& memory = dirs[0];
    const std::string& cpu = dirs[1];
    if (spec_.limits.memory_bytes > 0) {
      const std::string bytes = std::to_string(spec_.limits.memory_bytes);
      TRAINYARD_RETURN_IF_ERROR(cg::WriteControl(memory, "memory.limit_in_bytes", bytes));
      // memory.memsw.* exists only with swap accounting on. Without this the limit covers RAM
      // only and a replica could keep going in swap; best effort (the RAM limit is what counts).
      if (cg::HasControl(memory, "memory.memsw.limit_in_bytes")) {
        (void)cg::WriteControl(memory, "memory.memsw.limit_in_bytes", bytes);
      }
    }
    if (spec_.limits.cpu_millis > 0) {
      const int64_t quota =
          std::max(cg::kMinCfsQuotaMicros, spec_.limits.cpu_millis * cg::kCfsPeriodMicros / 1000);
      TRAINYARD_RETURN_IF_ERROR(
          cg::WriteControl(cpu, "cpu.cfs_period_us", std::to_string(cg::kCfsPeriodMicros)));
      TRAINYARD_RETURN_IF_ERROR(cg::WriteControl(cpu, "cpu.cfs_quota_us", std::to_string(quota)));
    }
    return Status::Ok();
  };
  if (Status s = setup(); !s.ok()) {
    for (const std::string& dir : dirs) {
      (void)executor::cgroup_v1::DestroyGroup(dir, kCleanupTimeout, [this] { ReapAndWait(); });
    }
    CgroupWarning(s.message());
    return;
  }
  void* page = ::mmap(nullptr, static_cast<size_t>(::sysconf(_SC_PAGESIZE)), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page != MAP_FAILED) join_errno_ = static_cast<int*>(page);
  cgroup_dirs_ = std::move(dirs);
  for (const std::string& dir : cgroup_dirs_) cgroup_procs_.push_back(dir + "/cgroup.procs");

  std::vector<std::string> limits;
  if (spec_.limits.memory_bytes > 0) {
    limits.push_back(FormatBytes(spec_.limits.memory_bytes) + " of memory");
  }
  if (spec_.limits.cpu_millis > 0) {
    char cpus[32];
    std::snprintf(cpus, sizeof cpus, "%g CPU%s",
                  static_cast<double>(spec_.limits.cpu_millis) / 1000,
                  spec_.limits.cpu_millis == 1000 ? "" : "s");
    limits.push_back(cpus);
  }
  if (!limits.empty()) {
    Service(Severity::kInfo, "Limiting the replica to " + limits[0] +
                                 (limits.size() > 1 ? " and " + limits[1] : "") + ".");
  }
}

void Launcher::CgroupWarning(const std::string& reason) {
  if (cgroup_warned_) return;
  cgroup_warned_ = true;
  Service(Severity::kWarning,
          "Cannot apply the replica's resource limits (" + reason + "); it runs without them.");
}

void Launcher::CheckJoinErrors() {
  if (join_errno_ == nullptr) return;
  for (size_t i = 0; i < cgroup_procs_.size(); ++i) {
    if (join_errno_[i] != 0) {
      CgroupWarning("cannot join " + cgroup_dirs_[i] + ": " + std::strerror(join_errno_[i]));
      return;
    }
  }
}

void Launcher::WatchSlurmMemoryGroup() {
  if (!cgroup_dirs_.empty()) return;  // groups of its own (not made under Slurm)
  slurm_memory_ = executor::cgroup_v1::OwnMemoryGroup();
  if (!slurm_memory_) return;
  auto kills = executor::cgroup_v1::ReadGroupOomKills(*slurm_memory_);
  if (!kills) {
    slurm_memory_.reset();
    return;
  }
  slurm_oom_kills_ = *kills;
}

void Launcher::CheckOom(ReplicaExit* exit) {
  if (oom_checked_) return;
  if (cgroup_dirs_.empty() && slurm_memory_) {
    // The step's task group is Slurm's: every kill past the count at start is this replica's
    // (the launcher itself shares the group, but a dead launcher reports nothing).
    oom_checked_ = true;
    auto kills = executor::cgroup_v1::ReadGroupOomKills(*slurm_memory_);
    if (kills && *kills > slurm_oom_kills_) {
      ReportOom(exit, executor::cgroup_v1::ReadGroupMemoryLimit(*slurm_memory_));
    }
    return;
  }
  if (cgroup_dirs_.empty()) return;
  oom_checked_ = true;
  const std::string& memory = cgroup_dirs_[0];
  int64_t kills = 0;
  if (auto n = executor::cgroup_v1::ReadOomKillCount(memory)) {
    kills = *n;  // the group is fresh: every kill is this replica's
  } else if (exit->signal == SIGKILL) {
    // Kernels before 4.13 have no oom_kill counter. Hitting the limit alone (failcnt) is normal
    // for a replica whose page cache gets reclaimed, so it only counts together with a SIGKILL.
    kills = executor::cgroup_v1::ReadFailCount(memory).value_or(0) > 0 ? 1 : 0;
  }
  if (kills <= 0) return;
  ReportOom(exit);
}

void Launcher::ReportOom(ReplicaExit* exit, int64_t limit_bytes) {
  exit->oom_killed = true;
  if (limit_bytes < 0) limit_bytes = spec_.limits.memory_bytes;
  const std::string limit = limit_bytes > 0 ? " (limit " + FormatBytes(limit_bytes) + ")" : "";
  if (exit->exit_code != 0) {
    Service(Severity::kError, "The replica ran out of memory" + limit + " and was killed.");
  } else {
    // The trainer survived the loss of one of its processes (e.g. a data-loader worker).
    Service(Severity::kWarning,
            "A process of the replica ran out of memory" + limit + " and was killed.");
  }
}

void Launcher::ReleaseCgroups() {
  // Belt and braces with KillDescendants: whatever is still in a group is killed with it.
  for (const std::string& dir : cgroup_dirs_) {
    Status s = executor::cgroup_v1::DestroyGroup(dir, kCleanupTimeout, [this] { ReapAndWait(); });
    if (!s.ok()) std::fprintf(stderr, "trainyard-launcher: %s\n", s.message().c_str());
  }
  cgroup_dirs_.clear();
  cgroup_procs_.clear();
}

void Launcher::ReapAndWait() {
  ReapChildren();
  WaitForSignal(5 * 1000);
}

// ---------------------------------------------------------------------------------------------
// Children

// `on_started` runs once the child exists, or, with `started_after` > 0, once it has printed
// something or lived that long (a container engine that fails at once, e.g. for a missing
// image, never counts as started).
std::optional<ChildStatus> Launcher::RunChild(const std::vector<std::string>& argv,
                                              const std::vector<std::string>& env, Sink sink,
                                              const std::function<void()>& on_started,
                                              Duration started_after) {
  process_error_.clear();
  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    process_error_ = std::string("cannot create a pipe: ") + std::strerror(errno);
    return std::nullopt;
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    process_error_ = std::string("cannot create a pipe: ") + std::strerror(errno);
    ::close(out[0]);
    ::close(out[1]);
    return std::nullopt;
  }
  std::vector<char*> c_argv;
  for (const std::string& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  std::vector<char*> c_env;
  for (const std::string& e : env) c_env.push_back(const_cast<char*>(e.c_str()));
  c_env.push_back(nullptr);
  std::string cwd = spec_.cwd.empty() ? work_dir_ : spec_.cwd;
  const pid_t parent = ::getpid();
  std::vector<const char*> join;
  for (const std::string& p : cgroup_procs_) join.push_back(p.c_str());
  const size_t join_count = join.size();
  const char* const* join_paths = join.data();
  int* const join_errno = join_errno_;
  if (join_errno != nullptr) std::fill(join_errno, join_errno + join_count, 0);
  const bool gcs_ns = gcs_namespace_;
  const char* const gcs_source = buckets_dir_.c_str();

  pid_t pid = ::fork();
  if (pid < 0) {
    process_error_ = std::string("cannot fork: ") + std::strerror(errno);
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    return std::nullopt;
  }
  if (pid == 0) {
    // Child: own process group, dies with the launcher, default signal state.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    // Into the replica's cgroups before anything runs (async-signal-safe calls only: the
    // launcher is single-threaded, but this is still the child of a fork). "0" is the writer.
    // A failed join is reported by the launcher; the child runs on regardless.
    for (size_t i = 0; i < join_count; ++i) {
      int fd = ::open(join_paths[i], O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ::write(fd, "0", 1) != 1) {
        if (join_errno != nullptr) join_errno[i] = errno != 0 ? errno : EIO;
      }
      if (fd >= 0) ::close(fd);
    }
    if (gcs_ns) {
      // /gcs in a mount namespace of the trainer's own: slave, so that nothing mounted here
      // propagates back to the host (PrepareGcsMount has tried the same steps already).
      if (::unshare(CLONE_NEWNS) == 0 &&
          ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) == 0) {
        ::mount(gcs_source, kGcsMountPoint, nullptr, MS_BIND | MS_REC, nullptr);
      }
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    if (::chdir(cwd.c_str()) != 0) {
      dprintf(2, "trainyard-launcher: cannot change to %s: %s\n", cwd.c_str(),
              std::strerror(errno));
      ::_exit(127);
    }
    ::execvpe(c_argv[0], c_argv.data(), c_env.data());
    dprintf(2, "trainyard-launcher: cannot execute %s: %s\n", c_argv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no window in which a signal to the group misses it
  ::close(out[1]);
  ::close(err[1]);
  pipe_fd_[0] = out[0];
  pipe_fd_[1] = err[0];
  for (int fd : pipe_fd_) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ::fcntl(fd, F_SETPIPE_SZ, kPipeSize);  // fewer wake-ups for chatty trainers; best effort
  }
  child_ = pid;
  child_reaped_ = false;
  sink_ = sink;
  if (term_requested_ && !shielded_) ::kill(-pid, SIGTERM);
  started_pending_ = nullptr;
  if (on_started && started_after <= 0) {
    on_started();
  } else if (on_started) {
    started_pending_ = on_started;
    started_deadline_ = MonotonicMicros() + started_after;
    started_bytes_ = stdout_bytes_;
  }

  while (!child_reaped_) {
    struct pollfd fds[3] = {{sfd_, POLLIN, 0}, {pipe_fd_[0], POLLIN, 0}, {pipe_fd_[1], POLLIN, 0}};
    int n = ::poll(fds, 3, PollTimeoutMs(MonotonicMicros()));
    if (n < 0 && errno != EINTR) break;
    if (n > 0) {
      size_t before = bytes_read_;
      for (int i = 0; i < 2; ++i) {
        if (fds[i + 1].revents != 0 && ReadPipe(i) == ReadResult::kEof) {
          ::close(pipe_fd_[i]);
          pipe_fd_[i] = -1;
        }
      }
      if (fds[0].revents != 0) HandleSignals();
      // A trickle (an unbuffered trainer writes each line, even each print() argument, with
      // its own write): let the pipe fill a little instead of waking up for every write.
      // Each wake-up costs the writer too, and the wait is far below the flush delay.
      const size_t got = bytes_read_ - before;
      if (got > 0 && got < kTrickleBytes && !child_reaped_) ::usleep(kTrickleDelayMicros);
    }
    const int64_t now = MonotonicMicros();
    if (started_pending_ && !child_reaped_ &&
        (stdout_bytes_ > started_bytes_ || now >= started_deadline_)) {
      auto started = std::move(started_pending_);
      started_pending_ = nullptr;
      started();
    }
    CheckKillFile(now);
    if (term_requested_ && !escalated_ && now >= kill_deadline_) Escalate();
    log_.MaybeFlush(now);
    if (n == 0 && !child_reaped_) ReapChildren();  // belt and braces; SIGCHLD may coalesce
  }
  // What the child wrote before it exited.
  for (int i = 0; i < 2; ++i) {
    while (pipe_fd_[i] >= 0) {
      ReadResult r = ReadPipe(i);
      if (r == ReadResult::kAgain) break;
      if (r == ReadResult::kEof) {
        ::close(pipe_fd_[i]);
        pipe_fd_[i] = -1;
      }
    }
    // Its last words without a newline are its last line: logged now, before the line saying
    // how it ended. A stream a descendant still holds open may go on with them (FinishChild).
    if (pipe_fd_[i] < 0) {
      const Timestamp ts = NowMicros();
      assembler_[i].Finish([&](std::string_view line) { OnLine(i, ts, line); });
    }
  }
  CheckJoinErrors();
  return DecodeWaitStatus(child_wait_status_);
}

void Launcher::FinishChild() {
  KillDescendants(SIGKILL);
  // Every writer is gone: the pipes reach EOF unless a process outside the tree holds them.
  const int64_t deadline = MonotonicMicros() + kDrainTimeout;
  while ((pipe_fd_[0] >= 0 || pipe_fd_[1] >= 0) && MonotonicMicros() < deadline) {
    struct pollfd fds[2] = {{pipe_fd_[0], POLLIN, 0}, {pipe_fd_[1], POLLIN, 0}};
    int n = ::poll(fds, 2, 50);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      while (pipe_fd_[i] >= 0 && fds[i].revents != 0) {
        ReadResult r = ReadPipe(i);
        if (r == ReadResult::kAgain) break;
        if (r == ReadResult::kEof) {
          ::close(pipe_fd_[i]);
          pipe_fd_[i] = -1;
        }
      }
    }
  }
  for (int i = 0; i < 2; ++i) {
    if (pipe_fd_[i] >= 0) {
      ::close(pipe_fd_[i]);
      pipe_fd_[i] = -1;
    }
    const Timestamp ts = NowMicros();
    assembler_[i].Finish([&](std::string_view line) { OnLine(i, ts, line); });
  }
  child_ = 0;
  log_.Flush();
}

Launcher::ReadResult Launcher::ReadPipe(int stream) {
  ssize_t n;
  do {
    n = ::read(pipe_fd_[stream], read_buf_.data(), read_buf_.size());
  } while (n < 0 && errno == EINTR);
  if (n == 0) return ReadResult::kEof;
  if (n < 0) return errno == EAGAIN ? ReadResult::kAgain : ReadResult::kEof;
  bytes_read_ += static_cast<size_t>(n);
  if (stream == 0) stdout_bytes_ += static_cast<size_t>(n);
  const Timestamp ts = NowMicros();
  assembler_[stream].Feed(std::string_view(read_buf_.data(), static_cast<size_t>(n)),
                          [&](std::string_view line) { OnLine(stream, ts, line); });
  return ReadResult::kData;
}

void Launcher::OnLine(int stream, Timestamp ts, std::string_view line) {
  const bool is_stderr = stream == 1;
  switch (sink_) {
    case Sink::kTrainer:
      log_.Add(ts, ClassifyLine(line, is_stderr), false, line);
      if (is_stderr) stderr_tail_.Add(line);
      break;
    case Sink::kInstall:
      // pip's output belongs to the replica that ran it (several replicas may install).
      log_.Add(ts, ClassifyLine(line, is_stderr), false, line);
      if (StartsWith(line, "ERROR:") && install_errors_.size() < kInstallTailLines) {
        install_errors_.emplace_back(line);
      }
      install_tail_.emplace_back(line);
      if (install_tail_.size() > kInstallTailLines) install_tail_.pop_front();
      break;
    case Sink::kEngine:
      if (is_stderr) {
        if (engine_err_.size() >= kInstallTailLines) engine_err_.erase(engine_err_.begin());
        engine_err_.emplace_back(line);
      } else {
        capture_.append(line.data(), line.size());
        capture_.push_back('\n');
      }
      break;
    case Sink::kPull:
      // Progress on stderr ("Copying blob ..."), the image id on stdout.
      if (is_stderr) {
        log_.Add(ts,
                 line.find("level=warning") != std::string_view::npos ? Severity::kWarning
                                                                      : Severity::kInfo,
                 /*service=*/true, line);
        if (engine_err_.size() >= kInstallTailLines) engine_err_.erase(engine_err_.begin());
        engine_err_.emplace_back(line);
      } else {
        capture_.append(line.data(), line.size());
        capture_.push_back('\n');
      }
      break;
    case Sink::kCapture:
      if (is_stderr) {
        log_.Add(ts, Severity::kError, false, line);
      } else {
        capture_.append(line.data(), line.size());
        capture_.push_back('\n');
      }
      break;
  }
}

int Launcher::PollTimeoutMs(int64_t now) const {
  int64_t next = now + kMicrosPerSecond;
  if (int64_t f = log_.FlushDeadline(); f >= 0) next = std::min(next, f);
  if (term_requested_ && !escalated_) next = std::min(next, kill_deadline_);
  if (started_pending_) next = std::min(next, started_deadline_);
  int64_t wait = next - now;
  if (wait <= 0) return 0;
  return static_cast<int>((wait + 999) / 1000);
}

void Launcher::HandleSignals() {
  struct signalfd_siginfo info;
  while (::read(sfd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    switch (static_cast<int>(info.ssi_signo)) {
      case SIGCHLD:
        ReapChildren();
        break;
      case SIGTERM:
      case SIGINT:
        StartTermination(static_cast<int>(info.ssi_signo));
        break;
      default:
        break;  // SIGHUP: the launcher has no terminal; ignored
    }
  }
}

void Launcher::ReapChildren() {
  int status = 0;
  pid_t w;
  while ((w = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (w == child_ && !child_reaped_) {
      child_reaped_ = true;
      child_wait_status_ = status;
      child_ended_after_term_ = term_requested_;
    }
  }
}

void Launcher::StartTermination(int signo) {
  if (term_requested_) return;
  term_requested_ = true;
  term_signal_ = SIGTERM;
  Duration grace = executor::kDefaultKillGrace;
  auto text = ReadFile(Join(work_dir_, executor::kKillFile));
  stop_unrequested_ = !text.ok();  // the daemon writes `kill` before it signals (exit.json)
  if (text.ok()) {
    std::string_view v = *text;
    while (!v.empty() && v.back() == '\n') v.remove_suffix(1);
    Duration g = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), g);
    if (ec == std::errc() && p == v.data() + v.size() && g >= 0) grace = g;
  }
  kill_deadline_ = MonotonicMicros() + grace;
  Service(Severity::kWarning,
          (signo != 0 ? "Received " + SignalName(signo)
                      : std::string("Trainyard asked for a stop that no signal brought")) +
              "; stopping the replica (grace period " + FormatDuration(grace) + ").");
  if (child_ > 0 && !child_reaped_ && !shielded_) ::kill(-child_, SIGTERM);
}

void Launcher::CheckKillFile(int64_t now) {
  if (!slurm_ || term_requested_ || now < next_kill_check_) return;
  next_kill_check_ = now + kMicrosPerSecond;
  if (::access(Join(work_dir_, executor::kKillFile).c_str(), F_OK) == 0) {
    StartTermination(0);
  }
}

void Launcher::Escalate() {
  escalated_ = true;
  if (shielded_) return;  // the trainer is gone; what runs is the cleanup
  Service(Severity::kWarning, "The grace period is over; killing the replica's processes.");
  if (child_ > 0 && !child_reaped_) ::kill(-child_, SIGKILL);
  for (const executor::ProcStat& p : executor::Descendants(::getpid(), executor::ListProcesses())) {
    if (p.state != 'Z') ::kill(p.pid, SIGKILL);
  }
}

void Launcher::KillDescendants(int sig) {
  const int64_t deadline = MonotonicMicros() + kCleanupTimeout;
  const pid_t self = ::getpid();
  bool announced = false;
  while (true) {
    ReapChildren();
    std::vector<executor::ProcStat> rest = executor::Descendants(self, executor::ListProcesses());
    if (rest.empty()) return;
    if (MonotonicMicros() >= deadline) {
      std::fprintf(stderr, "trainyard-launcher: %zu descendant(s) survived the cleanup\n",
                   rest.size());
      return;
    }
    int live = 0;
    for (const executor::ProcStat& p : rest) {
      if (p.state == 'Z') continue;
      ::kill(p.pid, sig);
      ++live;
    }
    if (live > 0 && !announced) {
      Service(Severity::kInfo,
              "Stopping " + std::to_string(live) + " leftover process(es) of the replica.");
      announced = true;
    }
    WaitForSignal(5 * 1000);
  }
}

void Launcher::WaitForSignal(Duration timeout) {
  struct pollfd fd = {sfd_, POLLIN, 0};
  int n = ::poll(&fd, 1, static_cast<int>((timeout + 999) / 1000));
  if (n > 0) HandleSignals();
  log_.MaybeFlush(MonotonicMicros());
}

}  // namespace

int RunLauncher(const std::string& work_dir, bool slurm) {
  Launcher launcher(work_dir, slurm);
  return launcher.Run();
}

}  // namespace trainyard::launcher
