#include "process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <thread>

extern char** environ;

namespace trainyard::cli {

namespace {

std::vector<char*> CArgv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// --- RunWithHelpers ------------------------------------------------------------------------

// The signals that stop a run. While RunWithHelpers runs they are handled by OnStopSignal,
// which may run on any thread, at any moment: it reads only the lock-free atomics below.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

static_assert(std::atomic<pid_t>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);

std::atomic<std::atomic<pid_t>*> g_helper_groups{nullptr};  // process group ids, 0 = none
std::atomic<size_t> g_helper_count{0};
std::atomic<pid_t> g_foreground{0};
std::atomic<int> g_stop_signal{0};  // the first stop signal received, 0 = none
std::atomic<int> g_stop_count{0};

extern "C" void OnStopSignal(int sig) {
  int saved_errno = errno;
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, sig);
  // The first signal asks politely; a repeated one (a second Ctrl-C) does not wait.
  int kill_sig = g_stop_count.fetch_add(1) == 0 ? SIGTERM : SIGKILL;
  pid_t fg = g_foreground.load();
  if (fg > 0) kill(fg, kill_sig);
  std::atomic<pid_t>* groups = g_helper_groups.load();
  size_t n = g_helper_count.load();
  for (size_t i = 0; groups != nullptr && i < n; ++i) {
    pid_t g = groups[i].load();
    if (g > 0) kill(-g, kill_sig);
  }
  errno = saved_errno;
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// This process's environment with `changes` applied in order, built before fork because setenv
// is not safe between fork and exec in a process that may have threads.
std::vector<std::string> MergedEnvironment(const std::vector<EnvChange>& changes) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  for (const auto& [name, value] : changes) {
    std::string prefix = name + "=";
    std::erase_if(out, [&](const std::string& kv) { return kv.rfind(prefix, 0) == 0; });
    if (value) out.push_back(prefix + *value);
  }
  return out;
}

// What a child must undo before exec: the signal mask and dispositions RunWithHelpers changed.
struct SignalRestore {
  sigset_t mask;
  struct sigaction actions[std::size(kStopSignals)];
};

// Starts `spec`; in a new process group with stdin from /dev/null when `own_group`. Returns once
// the child has exec'd, or fails with the reason it could not (reported back over a close-on-exec
// pipe), so a missing interpreter is an error here rather than a silent exit status 127.
// Must be called with the stop signals blocked, so that a signal cannot reach OnStopSignal in
// the child between fork and exec.
Result<pid_t> SpawnChild(const ChildSpec& spec, bool own_group, const SignalRestore& restore) {
  if (spec.argv.empty()) return InvalidArgument("empty command");
  std::vector<char*> cargv = CArgv(spec.argv);
  std::vector<std::string> env = MergedEnvironment(spec.env);
  std::vector<char*> cenv = CArgv(env);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return Internal(std::string("pipe failed: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    return Internal(std::string("fork failed: ") + std::strerror(e));
  }
  if (pid == 0) {
    close(fds[0]);
    if (own_group) {
      setpgid(0, 0);
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull > 0) {
        dup2(devnull, 0);
        close(devnull);
      }
    }
    for (size_t i = 0; i < std::size(kStopSignals); ++i) {
      struct sigaction sa {};
      sa.sa_handler = restore.actions[i].sa_handler == SIG_IGN ? SIG_IGN : SIG_DFL;
      sigemptyset(&sa.sa_mask);
      sigaction(kStopSignals[i], &sa, nullptr);
    }
    sigprocmask(SIG_SETMASK, &restore.mask, nullptr);
    // Should trainyard itself be SIGKILLed, its children still get a SIGTERM instead of running
    // on unattended.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    // Report {stage, errno}: 0 = chdir, 1 = exec.
    int report[2] = {0, 0};
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
      report[1] = errno;
    } else {
      execvpe(cargv[0], cargv.data(), cenv.data());
      report[0] = 1;
      report[1] = errno;
    }
    ssize_t ignored = write(fds[1], report, sizeof report);
    (void)ignored;
    _exit(127);
  }
  close(fds[1]);
  int report[2] = {0, 0};
  ssize_t n = 0;
  do {
    n = read(fds[0], report, sizeof report);
  } while (n < 0 && errno == EINTR);
  close(fds[0]);
  if (n <= 0) return pid;  // exec succeeded: the pipe closed without a report
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (report[0] == 0) {
    return FailedPrecondition("cannot change directory to " + spec.cwd + ": " +
                              std::strerror(report[1]));
  }
  return FailedPrecondition("cannot run " + spec.argv[0] + ": " + std::strerror(report[1]));
}

// Whether `pid` has exited, without reaping it: an unreaped child keeps its pid, and with it
// its process group id, from being reused.
bool HasExited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

// SIGTERM to every helper group, SIGKILL after `grace` (to the whole group, so that processes a
// helper started go too), then reaps the helpers.
void StopHelpers(std::atomic<pid_t>* groups, size_t count, std::chrono::milliseconds grace) {
  for (size_t i = 0; i < count; ++i) {
    kill(-groups[i].load(), SIGTERM);
    kill(-groups[i].load(), SIGCONT);  // a stopped process acts on SIGTERM only once continued
  }
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    bool all_exited = true;
    for (size_t i = 0; i < count && all_exited; ++i) all_exited = HasExited(groups[i].load());
    if (all_exited) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (size_t i = 0; i < count; ++i) kill(-groups[i].load(), SIGKILL);
  for (size_t i = 0; i < count; ++i) {
    pid_t pid = groups[i].exchange(0);  // before reaping: the handler must not signal a reused id
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace

Result<ProcessResult> RunCaptured(const std::vector<std::string>& argv, const std::string& cwd,
                                  bool merge_stderr) {
  if (argv.empty()) return InvalidArgument("empty command");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return Internal(std::string("pipe failed: ") + std::strerror(errno));
  }
  std::vector<char*> cargv = CArgv(argv);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Internal(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(fds[1], 1);
    if (merge_stderr) {
      dup2(fds[1], 2);
    } else if (devnull >= 0) {
      dup2(devnull, 2);
    }
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      dprintf(2, "cannot change directory to %s: %s\n", cwd.c_str(), std::strerror(errno));
      _exit(127);
    }
    execvp(cargv[0], cargv.data());
    dprintf(2, "cannot run %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  ProcessResult result;
  char buf[4096];
  while (true) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) {
      result.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Internal(std::string("waitpid failed: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

Status ExecReplace(const std::vector<std::string>& argv, const std::string& cwd,
                   const std::vector<std::pair<std::string, std::string>>& env) {
  if (argv.empty()) return InvalidArgument("empty command");
  if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
    return FailedPrecondition("cannot change directory to " + cwd + ": " + std::strerror(errno));
  }
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> cargv = CArgv(argv);
  execvp(cargv[0], cargv.data());
  return FailedPrecondition("cannot run " + argv[0] + ": " + std::strerror(errno));
}

Result<int> RunWithHelpers(const std::vector<ChildSpec>& helpers, const ChildSpec& foreground,
                           std::chrono::milliseconds grace) {
  sigset_t stop_set;
  sigemptyset(&stop_set);
  for (int sig : kStopSignals) sigaddset(&stop_set, sig);
  SignalRestore restore{};
  pthread_sigmask(SIG_BLOCK, &stop_set, &restore.mask);

  auto groups = std::make_unique<std::atomic<pid_t>[]>(helpers.size());
  g_helper_groups.store(groups.get());
  g_helper_count.store(0);
  g_foreground.store(0);
  g_stop_signal.store(0);
  g_stop_count.store(0);
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;  // no SA_RESTART: waitpid returns early with EINTR
  sa.sa_mask = stop_set;
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    sigaction(kStopSignals[i], &sa, &restore.actions[i]);
  }

  // Signals stay blocked while a child is being started and are let in between starts, so a
  // signal that arrived meanwhile stops the run before the next start.
  Status failure = Status::Ok();
  size_t started = 0;
  for (const ChildSpec& helper : helpers) {
    if (g_stop_signal.load() != 0) break;
    auto pid = SpawnChild(helper, /*own_group=*/true, restore);
    if (!pid.ok()) {
      failure = pid.status();
      break;
    }
    groups[started].store(*pid);
    g_helper_count.store(++started);
    pthread_sigmask(SIG_UNBLOCK, &stop_set, nullptr);
    pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
  }
  int exit_code = 1;
  if (failure.ok() && g_stop_signal.load() == 0) {
    auto pid = SpawnChild(foreground, /*own_group=*/false, restore);
    if (pid.ok()) {
      g_foreground.store(*pid);
      pthread_sigmask(SIG_UNBLOCK, &stop_set, nullptr);
      siginfo_t info{};
      while (waitid(P_PID, static_cast<id_t>(*pid), &info, WEXITED | WNOWAIT) < 0 &&
             errno == EINTR) {
      }
      g_foreground.store(0);
      int status = 0;
      while (waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
      }
      exit_code = ExitCodeOf(status);
    } else {
      failure = pid.status();
    }
  }
  pthread_sigmask(SIG_UNBLOCK, &stop_set, nullptr);
  StopHelpers(groups.get(), started, grace);

  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    sigaction(kStopSignals[i], &restore.actions[i], nullptr);
  }
  g_helper_count.store(0);
  g_helper_groups.store(nullptr);
  int stop_signal = g_stop_signal.load();
  pthread_sigmask(SIG_SETMASK, &restore.mask, nullptr);
  if (!failure.ok()) return failure;
  if (stop_signal != 0) return 128 + stop_signal;
  return exit_code;
}

}  // namespace trainyard::cli
