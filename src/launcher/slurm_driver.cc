// trainyard-launcher slurm-driver --plan FILE: what a Slurm gang's batch script execs
// (slurm_executor.cc writes the plan). It makes no decisions of its own: it starts one `srun`
// step per replica (each with its own CPUs and GPUs: --exact), waits until every launcher has
// reported the address its trainer will listen on (a "TY-ENDPOINT {...}" line on the step's
// stdout), answers each with its cluster environment built from the real addresses (a
// "TY-ENV {...}" line on its stdin: TF_CONFIG, CLUSTER_SPEC, MASTER_ADDR, ...), records them in
// rendezvous.json and exits once every step has. Log lines never travel through srun: the
// launchers write them to their work dirs. Everything else a step prints goes to the batch
// job's output (driver.out), prefixed with its task name.
//
// Restart in place: a step whose replica may be restarted (killed by a signal nobody at
// Trainyard sent) keeps its slot until the daemon's decision in the gang's control.log:
// "restart <task> <attempt>" starts a new step on the same node, with the same port and the
// same cluster environment; "release <task> <attempt>" lets it go (docs/slurm.md "Restart in
// place"). Each step knows its replica's attempt, so a decision repeated by a daemon that
// restarted meanwhile is done once (slurm_control.h). A step whose launcher was killed (srun:
// "task 0: Killed") is reported at once, so the daemon need not wait for Slurm's verdict.
//
// Signals: USR1 comes from Slurm before the job's time limit (sbatch --signal=B:USR1@...): the
// driver then asks every step to stop gracefully (scancel -s TERM, which never reaches the
// batch shell), so replicas stop in order even while the daemon is down.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launcher.h"
#include "protocol_private.h"
#include "trainyard/cluster_env/cluster_env.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"
#include "trainyard/executor/launcher_protocol.h"
#include "trainyard/executor/slurm_control.h"
#include "trainyard/executor/subprocess.h"

extern char** environ;

namespace trainyard::launcher {
namespace {

using nlohmann::json;

struct Step {
  std::string work_dir;
  std::string task_name;
  size_t task = 0;  // index into the run plan's tasks
  bool container = false;
  pid_t pid = 0;
  int in_fd = -1;   // the step's stdin (write end)
  int out_fd = -1;  // its stdout (read end)
  std::string buf;
  int err_fd = -1;  // srun's stderr (read end): Slurm's own words on the step
  std::string err_buf;
  std::vector<std::string> err_lines;  // the first of them (ClassifySrunStepEnd)
  bool oom = false;                    // srun said the step ended OUT_OF_MEMORY
  bool ended = false;  // exited, its output read to the end, and reported if it had to be
  bool reported = false;
  bool answered = false;
  bool exited = false;
  int status = 0;
  // Restart in place (docs/slurm.md): the srun command line (the launcher's from command_at
  // on), where its launcher reported to be, and whether the step's slot is kept for the
  // daemon's decision on it (until await_until, monotonic).
  std::vector<std::string> argv;
  size_t command_at = 0;
  std::string node;
  int port = 0;
  bool awaiting = false;
  int64_t await_until = 0;
  int restarts = 0;
  // The replica's attempt this step runs (the plan's, then each restart's; -1 unknown).
  int attempt = -1;
  // A restart the daemon asked for before the step had ended here (the launcher's report
  // comes before srun returns): done as soon as it has, as attempt asked_attempt.
  bool restart_asked = false;
  int asked_attempt = -1;
  // The attempt a decision on this step is compared with (DecideSlurmControl).
  int current_attempt() const { return restart_asked ? asked_attempt : attempt; }
};

void Say(const std::string& line) {
  std::string l = "trainyard slurm-driver: " + line + "\n";
  [[maybe_unused]] ssize_t n = ::write(STDOUT_FILENO, l.data(), l.size());
}

// The exit report of a replica whose step ended before its launcher could write one (srun
// refused the step, the node failed it): the daemon sees how it ended instead of waiting.
void ReportLostStep(const Step& s, bool stopping) {
  const std::string path = s.work_dir + "/" + executor::kExitFile;
  if (::access(path.c_str(), F_OK) == 0) return;
  // A newer attempt owns the work dir (this allocation was given up after a node failure):
  // nothing of this step is its to report (slurm_control.h).
  if (executor::AttemptSuperseded(s.attempt, executor::SpecAttemptIn(s.work_dir))) {
    Say("not reporting " + s.task_name + " (attempt " + std::to_string(s.attempt) +
        "): a newer attempt of it runs in another allocation");
    return;
  }
  executor::ReplicaExit exit;
  exit.exit_code = 1;
  const executor::SrunStepEnd end = executor::ClassifySrunStepEnd(s.err_lines, s.status);
  if (s.oom) {
    // Slurm's task/cgroup killed the step for memory and took the launcher with it: the
    // step's OUT_OF_MEMORY, reported as the launcher reports an OOM kill (never restarted).
    exit.phase = "run";
    exit.exit_code = 128 + SIGKILL;
    exit.signal = SIGKILL;
    exit.oom_killed = true;
    exit.message = "Slurm ended the step of " + s.task_name + " OUT_OF_MEMORY";
    Status st = WriteFileAtomic(path, executor::ExitToJson(exit, s.attempt));
    if (!st.ok()) Say("cannot write " + path + ": " + st.message());
    return;
  }
  if (s.reported && end.task_signal != 0 && !stopping &&
      ::access((s.work_dir + "/" + executor::kKillFile).c_str(), F_OK) != 0) {
    // Its launcher was killed (someone's kill -9, the node's OOM killer) and Slurm did not
    // end the step: the replica was lost inside a healthy allocation, as locally a launcher
    // killed with its trainer. Reported now, not left to Slurm's verdict on the job; the
    // daemon still checks that the job runs before it restarts the replica in place.
    exit.phase = "lost";
    exit.signal = end.task_signal;
    exit.exit_code = 128 + end.task_signal;
    std::string said;
    for (const std::string& l : s.err_lines) {
      if (l.find(": task ") != std::string::npos) said = l;
    }
    exit.message = "its launcher was killed by signal " + std::to_string(end.task_signal) +
                   (s.node.empty() ? std::string() : " on node " + s.node) +
                   (said.empty() ? std::string() : " (" + said + ")");
    Status st = WriteFileAtomic(path, executor::ExitToJson(exit, s.attempt));
    if (!st.ok()) Say("cannot write " + path + ": " + st.message());
    return;
  }
  // A launcher that reported its address had started: its step was taken from under it
  // (most often with the allocation: a node failure or a preemption ends every step, and the
  // driver may see that before Slurm says why). Lost, not a launch failure; and the stop was
  // not Trainyard's, so the executor waits for Slurm's verdict on the job before reporting it.
  exit.phase = s.reported ? "lost" : "launch";
  exit.stop_requested = true;
  const int code = WIFEXITED(s.status) ? WEXITSTATUS(s.status) : 128 + WTERMSIG(s.status);
  exit.message = "the Slurm step of " + s.task_name + " ended (srun exit status " +
                 std::to_string(code) + ") before its launcher reported";
  Status st = WriteFileAtomic(path, executor::ExitToJson(exit, s.attempt));
  if (!st.ok()) Say("cannot write " + path + ": " + st.message());
}

// A line srun wrote on its stderr: to driver.out like the rest, and noted when it says that
// Slurm ended the step OUT_OF_MEMORY ("srun: error: n1: task 0: Out Of Memory").
void OnSrunError(Step& s, const std::string& line) {
  if (line.find(": Out Of Memory") != std::string::npos) s.oom = true;
  if (s.err_lines.size() < 64) s.err_lines.push_back(line);
  std::string l = "[" + s.task_name + "] " + line + "\n";
  [[maybe_unused]] ssize_t m = ::write(STDOUT_FILENO, l.data(), l.size());
}

// Reads what srun wrote on its stderr; false at its end.
bool ReadSrunErrors(Step& s) {
  char chunk[8192];
  ssize_t n = ::read(s.err_fd, chunk, sizeof chunk);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n <= 0) {
    if (!s.err_buf.empty()) OnSrunError(s, s.err_buf);
    s.err_buf.clear();
    ::close(s.err_fd);
    s.err_fd = -1;
    return false;
  }
  s.err_buf.append(chunk, static_cast<size_t>(n));
  size_t nl;
  while ((nl = s.err_buf.find('\n')) != std::string::npos) {
    OnSrunError(s, s.err_buf.substr(0, nl));
    s.err_buf.erase(0, nl + 1);
  }
  return true;
}

// Starts the step's srun: s.argv with `extra` srun options before the launcher's command
// line. False only when no pipe could be made; a spawn failure is the step's end (reported).
bool SpawnStep(Step& s, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = s.argv;
  argv.insert(argv.begin() + static_cast<std::ptrdiff_t>(s.command_at), extra.begin(), extra.end());
  s.pid = 0;
  s.buf.clear();
  s.err_buf.clear();
  s.err_lines.clear();
  s.oom = s.ended = s.reported = s.answered = s.exited = false;
  s.status = 0;
  int in_pipe[2];
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    Say(std::string("pipe: ") + std::strerror(errno));
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  int rc = posix_spawnp(&s.pid, "srun", &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  ::fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
  s.in_fd = in_pipe[1];
  s.out_fd = out_pipe[0];
  s.err_fd = err_pipe[0];
  if (rc != 0) {
    Say("cannot run srun: " + std::string(std::strerror(rc)));
    ::close(s.in_fd);
    ::close(s.out_fd);
    ::close(s.err_fd);
    s.in_fd = s.out_fd = s.err_fd = -1;
    s.exited = true;
    s.status = 127 << 8;
    s.ended = true;
    ReportLostStep(s, false);
  }
  return true;
}

// Whether the daemon may restart the ended step's replica (executor::MayBeRestarted on its
// exit report), so that its slot is kept for the decision. Never one Trainyard was stopping.
bool MayRestart(const Step& s) {
  if (::access((s.work_dir + "/" + executor::kKillFile).c_str(), F_OK) == 0) return false;
  auto text = ReadFile(s.work_dir + "/" + executor::kExitFile);
  if (!text.ok()) return false;
  auto exit = executor::ExitFromJson(*text);
  return exit.ok() && executor::MayBeRestarted(*exit);
}

// The exit report of a replica the daemon asked to restart that cannot be (the job is
// stopping, or it was stopped meanwhile): it never started again.
void ReportNotRestarted(const Step& s, const std::string& why, int attempt) {
  executor::ReplicaExit exit;
  exit.phase = "install";
  exit.signal = SIGTERM;
  exit.exit_code = 128 + SIGTERM;
  exit.stop_requested = true;
  exit.message = "the replica was stopped before the trainer started (" + why + ")";
  const std::string path = s.work_dir + "/" + executor::kExitFile;
  // The attempt that never started: the one the daemon's spec is at now.
  Status st = WriteFileAtomic(path, executor::ExitToJson(exit, attempt));
  if (!st.ok()) Say("cannot write " + path + ": " + st.message());
}

// The environment a replica's launcher gets on its stdin ("TY-ENV {...}"): the run's cluster
// as rendezvoused, the same for a step restarted in place.
void Answer(Step& s, const cluster_env::RunEnvironment& env) {
  auto vars = env.ForTask(s.task, {}, s.container);
  vars.erase("CUDA_VISIBLE_DEVICES");  // the step's own, from Slurm (launcher)
  vars.erase("CUDA_DEVICE_ORDER");
  std::string line = "TY-ENV " + json(vars).dump() + "\n";
  if (s.in_fd >= 0) {
    if (::write(s.in_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      Say("cannot answer " + s.task_name + ": " + std::strerror(errno));
    }
    ::close(s.in_fd);
    s.in_fd = -1;
  }
  s.answered = true;
}

}  // namespace

int RunSlurmDriver(const std::string& plan_path) {
  auto text = ReadFile(plan_path);
  if (!text.ok()) {
    Say(text.status().message());
    return 1;
  }
  const json plan = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!plan.is_object() || !plan.contains("replicas") || !plan.contains("run")) {
    Say(plan_path + " is not a gang plan");
    return 1;
  }
  cluster_env::RunPlan run;
  std::string error;
  if (!cluster_env::RunPlanFromJson(plan["run"].dump(), &run, &error)) {
    Say(plan_path + ": " + error);
    return 1;
  }
  const std::string gang_dir = plan_path.substr(0, plan_path.rfind('/'));
  const std::string launcher = plan.value("launcher", "trainyard-launcher");
  const std::string port_range = plan.value("portRange", "20000-32767");
  const char* job_id = std::getenv("SLURM_JOB_ID");
  Say("Slurm job " + std::string(job_id != nullptr ? job_id : "?") + " on " +
      std::string(std::getenv("SLURM_JOB_NODELIST") != nullptr ? std::getenv("SLURM_JOB_NODELIST")
                                                               : "?") +
      ", " + std::to_string(plan["replicas"].size()) + " replica(s)");
  if (plan.contains("envelopeNote")) Say(plan.value("envelopeNote", ""));

  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGCHLD, SIGUSR1, SIGUSR2, SIGHUP}) sigaddset(&set, sig);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  int sfd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  ::signal(SIGPIPE, SIG_IGN);

  std::vector<Step> steps;
  for (const json& r : plan["replicas"]) {
    Step s;
    s.work_dir = r.value("workDir", "");
    s.task_name = r.value("taskName", "");
    s.task = r.value("task", 0);
    s.container = r.value("container", false);
    s.attempt = r.value("attempt", -1);
    if (s.task >= run.tasks.size()) {
      Say("replica " + s.task_name + " names task " + std::to_string(s.task) +
          " outside the run plan");
      return 1;
    }
    std::vector<std::string> argv = {
        "srun",
        "--ntasks=1",
        "--nodes=1",
        "--exact",
        "--unbuffered",
        "--kill-on-bad-exit=0",
        "--cpus-per-task=" + std::to_string(r.value("cpus", 1)),
        "--mem-per-cpu=" + std::to_string(r.value("memPerCpuMb", 1)) + "M",
        "--job-name=" + s.task_name,
        "--export=ALL,TRAINYARD_PORT_RANGE=" + port_range,
    };
    const std::string gpus = r.value("gpus", "");
    argv.push_back(gpus.empty() ? "--gres=none" : "--gpus=" + gpus);
    if (plan.value("heterogeneous", false)) {
      argv.push_back("--het-group=" + std::to_string(r.value("hetGroup", 0)));
    }
    s.command_at = argv.size();
    for (const std::string& a :
         {launcher, std::string("--work-dir"), s.work_dir, std::string("--slurm")}) {
      argv.push_back(a);
    }
    s.argv = std::move(argv);
    if (!SpawnStep(s, {})) return 1;
    steps.push_back(std::move(s));
  }

  bool answered_all = false;
  bool stop_sent = false;
  // Restart in place: a replica killed inside this allocation keeps its step's slot until the
  // daemon's decision in control.log ("restart <task> <attempt>": a new step on the same node
  // with the same port and environment; "release <task>"), or until restartWaitSeconds pass.
  const bool in_place = plan.value("restartInPlace", false);
  const int64_t restart_wait = plan.value("restartWaitSeconds", 300) * kMicrosPerSecond;
  const std::string control_path = gang_dir + "/control.log";
  size_t control_offset = 0;
  auto all_exited = [&] {
    for (const Step& s : steps) {
      if (!s.ended || s.awaiting) return false;
    }
    return true;
  };
  auto restart_in_place = [&](Step& s, int attempt) {
    if (!s.ended) {
      s.restart_asked = true;
      s.asked_attempt = attempt;
      return;
    }
    s.restart_asked = false;
    s.awaiting = false;
    // The ended step's files go, exit.json last: the daemon reads the work dir again once
    // that one is gone (or replaced).
    for (const char* f : {executor::kPidFile, executor::kRunningFile, executor::kLogFile,
                          executor::kLogOffsetFile, executor::kStopReasonFile,
                          executor::kLauncherErrFile, "slurm.json", executor::kExitFile}) {
      ::unlink((s.work_dir + "/" + f).c_str());
    }
    if (attempt >= 0) s.attempt = attempt;
    if (stop_sent) return ReportNotRestarted(s, "the Slurm job is stopping", attempt);
    if (::access((s.work_dir + "/" + executor::kKillFile).c_str(), F_OK) == 0) {
      return ReportNotRestarted(s, "Trainyard stopped it", attempt);
    }
    std::vector<std::string> extra;
    if (!s.node.empty()) extra.push_back("--nodelist=" + s.node);
    if (s.port > 0) {
      // The last --export counts: the plan's, plus the port this replica had.
      for (const std::string& a : s.argv) {
        if (StartsWith(a, "--export=")) {
          extra.push_back(a + ",TRAINYARD_RENDEZVOUS_PORT=" + std::to_string(s.port));
        }
      }
    }
    ++s.restarts;
    Say("restarting " + s.task_name + " in place on node " + s.node + ", port " +
        std::to_string(s.port) + " (attempt " + std::to_string(attempt) + ")");
    SpawnStep(s, extra);
  };
  auto read_control = [&] {
    auto control = ReadFile(control_path);
    if (!control.ok() || control->size() <= control_offset) return;
    size_t end = control->rfind('\n');
    if (end == std::string::npos || end < control_offset) return;
    for (const std::string& line :
         Split(std::string_view(*control).substr(control_offset, end - control_offset), '\n')) {
      const std::optional<executor::SlurmControl> c = executor::ParseSlurmControlLine(line);
      if (!c) continue;
      for (Step& s : steps) {
        if (s.task_name != c->task) continue;
        switch (executor::DecideSlurmControl(*c, s.current_attempt())) {
          case executor::SlurmControlAction::kRestart:
            restart_in_place(s, c->attempt);
            break;
          case executor::SlurmControlAction::kRelease:
            s.awaiting = false;
            break;
          case executor::SlurmControlAction::kIgnore:
            // A decision repeated by a daemon that restarted before it saw this driver act.
            Say("ignoring \"" + line + "\": " + s.task_name + " is at attempt " +
                std::to_string(s.current_attempt()) + " already");
            break;
        }
      }
    }
    control_offset = end + 1;
  };
  while (!all_exited()) {
    std::vector<pollfd> fds;
    fds.push_back({sfd, POLLIN, 0});
    for (const Step& s : steps) {
      if (s.out_fd >= 0) fds.push_back({s.out_fd, POLLIN, 0});
      if (s.err_fd >= 0) fds.push_back({s.err_fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 1000);
    signalfd_siginfo info;
    while (::read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGUSR1 && !stop_sent && job_id != nullptr) {
        stop_sent = true;
        for (Step& s : steps) s.awaiting = false;
        Say("the job's time limit is near: stopping every replica gracefully");
        // Their SIGTERM is Trainyard's own (the executor reads this before calling it lost).
        Status mark = WriteFileAtomic(gang_dir + "/time-limit", "USR1\n");
        if (!mark.ok()) Say(mark.message());
        auto res =
            executor::RunCommand({"scancel", "-s", "TERM", job_id}, {}, 30 * kMicrosPerSecond);
        if (!res.ok()) Say("scancel: " + res.status().message());
      } else if (sig == SIGTERM || sig == SIGINT) {
        Say("received " + std::string(strsignal(sig)) + "; the steps are Slurm's to stop");
      }
    }
    int status = 0;
    pid_t w;
    while ((w = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (Step& s : steps) {
        if (s.pid != w) continue;
        s.exited = true;
        s.status = status;
        if (s.in_fd >= 0) {
          ::close(s.in_fd);
          s.in_fd = -1;
        }
      }
    }
    for (Step& s : steps) {
      if (s.err_fd >= 0) ReadSrunErrors(s);
      if (s.out_fd < 0) continue;
      char chunk[65536];
      ssize_t n = ::read(s.out_fd, chunk, sizeof chunk);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        ::close(s.out_fd);
        s.out_fd = -1;
        continue;
      }
      s.buf.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = s.buf.find('\n')) != std::string::npos) {
        std::string line = s.buf.substr(0, nl);
        s.buf.erase(0, nl + 1);
        if (StartsWith(line, "TY-ENDPOINT ")) {
          json ep = json::parse(line.substr(12), nullptr, false);
          if (ep.is_object() && ep.contains("host") && ep.contains("port")) {
            const std::string address =
                ep.value("host", "") + ":" + std::to_string(ep.value("port", 0));
            s.reported = true;
            s.node = ep.value("node", "");
            if (s.restarts > 0) {
              // Restarted in place: its peers know it by its old address, which it keeps.
              if (address != run.tasks[s.task].address) {
                Say("WARNING: " + s.task_name + " restarted at " + address + ", not at " +
                    run.tasks[s.task].address + "; it keeps its old address in the cluster");
              }
              Answer(s, cluster_env::RunEnvironment(run));
              Say(s.task_name + " restarted at " + address + " (node " + s.node + ")");
              continue;
            }
            run.tasks[s.task].address = address;
            s.port = ep.value("port", 0);
            Say(s.task_name + " is at " + run.tasks[s.task].address + " (node " + s.node + ")");
          }
        } else {
          std::string l = "[" + s.task_name + "] " + line + "\n";
          [[maybe_unused]] ssize_t m = ::write(STDOUT_FILENO, l.data(), l.size());
        }
      }
    }
    for (Step& s : steps) {
      // Reported once srun's words on the step are read to the end (an OUT_OF_MEMORY among them).
      if (s.exited && !s.ended && s.out_fd < 0 && s.err_fd < 0) {
        s.ended = true;
        ReportLostStep(s, stop_sent);
        if (s.restart_asked) {
          restart_in_place(s, s.asked_attempt);
        } else if (in_place && answered_all && s.answered && !stop_sent && MayRestart(s)) {
          s.awaiting = true;
          s.await_until = MonotonicMicros() + restart_wait;
          Say(s.task_name + " ended; keeping its place for Trainyard's decision to restart it");
        }
      }
      if (s.awaiting && MonotonicMicros() > s.await_until) {
        s.awaiting = false;
        Say("no decision on " + s.task_name + " from Trainyard in time; letting it go");
      }
    }
    if (in_place &&
        std::any_of(steps.begin(), steps.end(), [](const Step& s) { return s.ended; })) {
      read_control();
    }
    if (!answered_all &&
        std::all_of(steps.begin(), steps.end(),
                    [](const Step& s) { return s.reported || s.exited; }) &&
        std::all_of(steps.begin(), steps.end(), [](const Step& s) { return s.reported; })) {
      answered_all = true;
      const cluster_env::RunEnvironment env(run);
      json rv = json::object();
      for (const cluster_env::Task& t : run.tasks) {
        rv[t.type + "-replica-" + std::to_string(t.index)] = t.address;
      }
      Status w2 = WriteFileAtomic(gang_dir + "/rendezvous.json", rv.dump());
      if (!w2.ok()) Say(w2.message());
      for (Step& s : steps) Answer(s, env);
      Say("every replica reported its address; the cluster is " + rv.dump());
    }
  }
  int failed = 0;
  for (const Step& s : steps) {
    if (!WIFEXITED(s.status) || WEXITSTATUS(s.status) != 0) ++failed;
  }
  Say(std::to_string(steps.size() - failed) + " of " + std::to_string(steps.size()) +
      " steps ended cleanly");
  return 0;
}

}  // namespace trainyard::launcher
