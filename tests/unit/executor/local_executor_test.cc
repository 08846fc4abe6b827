// The local executor against real processes: the real trainyard-launcher running
// /usr/bin/python3 trainers written into temp dirs.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cgroup_v1.h"
#include "proc_util.h"
#include "test_util.h"
#include "trainyard/core/util.h"
#include "trainyard/executor/cgroups.h"
#include "trainyard/executor/executor.h"
#include "trainyard/executor/launcher_protocol.h"

namespace trainyard::executor {
namespace {

namespace fs = std::filesystem;
using model::Severity;
using std::chrono::seconds;

constexpr const char* kPython = "/usr/bin/python3";
constexpr auto kTimeout = seconds(90);
constexpr const char* kCgroupRoot = "/sys/fs/cgroup";

using test_util::WriteText;

// A temporary directory for one test.
class TempDir : public test_util::TempDir {
 public:
  TempDir() : test_util::TempDir("ty_exec_test") {}
};

// Records every event; tests wait on predicates over what arrived.
class Recorder : public ExecutorListener {
 public:
  void OnReplicaRunning(const ReplicaKey& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back("running " + key.TaskName());
    running_[key]++;
    cv_.notify_all();
  }
  Status OnReplicaLogs(std::span<model::LogEntry> entries) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : entries) {
      events_.push_back("log " + e.task_name);
      logs_.push_back(e);
    }
    cv_.notify_all();
    return Status::Ok();
  }
  void OnReplicaMetrics(const ReplicaKey& key, std::span<const MetricRecord> records,
                        bool ended) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::string(ended ? "last " : "") + "metrics " + key.TaskName());
    metrics_[key].assign(records.begin(), records.end());
    cv_.notify_all();
  }
  void OnReplicaExit(const ReplicaKey& key, const ReplicaExit& exit) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back("exit " + key.TaskName());
    exits_[key] = exit;
    exit_count_[key]++;
    cv_.notify_all();
  }

  bool WaitForRunning(const ReplicaKey& key) {
    return WaitFor([&] { return running_[key] > 0; });
  }
  std::vector<MetricRecord> Metrics(const ReplicaKey& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return metrics_[key];
  }

 private:
  // `pred` runs with mu_ held: it must read the members directly.
  bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout = kTimeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, pred);
  }

 public:
  std::optional<ReplicaExit> WaitExit(const ReplicaKey& key) {
    std::optional<ReplicaExit> out;
    WaitFor([&] { return exits_.count(key) != 0; });
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = exits_.find(key); it != exits_.end()) out = it->second;
    return out;
  }
  bool WaitLog(const std::string& message) {
    return WaitFor([&] { return FindLocked(message) != nullptr; });
  }
  std::optional<model::LogEntry> Find(const std::string& message) {
    std::lock_guard<std::mutex> lock(mu_);
    const model::LogEntry* e = FindLocked(message);
    return e != nullptr ? std::optional<model::LogEntry>(*e) : std::nullopt;
  }
  bool HasLogContaining(const std::string& part) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : logs_) {
      if (e.message.find(part) != std::string::npos) return true;
    }
    return false;
  }
  std::vector<model::LogEntry> Logs() {
    std::lock_guard<std::mutex> lock(mu_);
    return logs_;
  }
  std::vector<std::string> Events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  int RunningCalls(const ReplicaKey& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return running_[key];
  }
  int ExitCalls(const ReplicaKey& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return exit_count_[key];
  }

 private:
  const model::LogEntry* FindLocked(const std::string& message) const {
    for (const auto& e : logs_) {
      if (e.message == message) return &e;
    }
    return nullptr;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> events_;
  std::vector<model::LogEntry> logs_;
  std::map<ReplicaKey, ReplicaExit> exits_;
  std::map<ReplicaKey, std::vector<MetricRecord>> metrics_;
  std::map<ReplicaKey, int> running_;
  std::map<ReplicaKey, int> exit_count_;
};

// Every process left in the launcher's session, or descending from the given pids.
std::vector<pid_t> Leftovers(const std::string& work_dir, const std::vector<pid_t>& extra = {}) {
  std::vector<pid_t> out;
  auto text = ReadFile(work_dir + "/" + kPidFile);
  pid_t launcher = 0;
  uint64_t start = 0;
  if (text.ok()) ParsePidFile(*text, &launcher, &start);
  for (const ProcStat& p : ListProcesses()) {
    // Zombies re-parented to init are dead; reaping them is init's business.
    if (launcher > 0 && p.session == launcher && p.state != 'Z') out.push_back(p.pid);
  }
  for (pid_t pid : extra) {
    auto st = ReadProcStat(pid);
    if (st && st->state != 'Z') out.push_back(pid);
  }
  return out;
}

bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout = kTimeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

class LocalExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    code_dir_ = tmp_.path() + "/code";
    cache_dir_ = tmp_.path() + "/env-cache";
    fs::create_directories(code_dir_);
    executor_ = NewExecutor();
  }
  void TearDown() override {
    if (executor_) executor_->Shutdown();
    // A failed test must not leave replicas running: kill whatever is left in their sessions.
    std::error_code ec;
    for (const auto& dir : fs::directory_iterator(tmp_.path() + "/work", ec)) {
      auto text = ReadFile(dir.path().string() + "/" + kPidFile);
      pid_t pid = 0;
      uint64_t start = 0;
      if (!text.ok() || !ParsePidFile(*text, &pid, &start)) continue;
      std::vector<ProcStat> procs = ListProcesses();
      if (ProcessAlive(pid, start)) {
        for (const ProcStat& p : Descendants(pid, procs)) ::kill(p.pid, SIGKILL);
        ::kill(pid, SIGKILL);
      }
      for (const ProcStat& p : procs) {
        if (p.session == pid) ::kill(p.pid, SIGKILL);
      }
    }
  }

  std::unique_ptr<Executor> NewExecutor() {
    LocalExecutorOptions options;
    options.launcher_path = TRAINYARD_LAUNCHER_PATH;
    options.jobs_dir = tmp_.path() + "/jobs";
    options.log_poll_interval = 10 * 1000;
    return NewLocalExecutor(options, &recorder_);
  }

  void WriteTrainer(const std::string& module, const std::string& code) {
    WriteText(code_dir_ + "/" + module + ".py", code);
  }

  ReplicaSpec Spec(const std::string& module, int index = 0) {
    ReplicaSpec spec;
    spec.key = {"proj", "job_" + module, "", "master", index};
    // Where the executor itself would put it (Recover finds replicas by key).
    spec.work_dir =
        tmp_.path() + "/jobs/proj/job_" + module + "/master-replica-" + std::to_string(index);
    spec.python = kPython;
    spec.python_module = module;
    spec.env_cache_dir = cache_dir_;
    spec.cwd = code_dir_;
    return spec;
  }

  // Builds an sdist of package `name` (module `name`.task) into tmp/dist and returns its path.
  std::string BuildSdist(const std::string& name, const std::string& setup_extra,
                         const std::string& task_code) {
    std::string src = tmp_.path() + "/src-" + name;
    WriteText(src + "/setup.py", "from setuptools import setup\n" + setup_extra + "setup(name='" +
                                     name + "', version='0.1', packages=['" + name +
                                     "'], install_requires=[" + deps_ + "])\n");
    WriteText(src + "/" + name + "/__init__.py", "");
    WriteText(src + "/" + name + "/task.py", task_code);
    std::string dist = tmp_.path() + "/dist";
    std::string cmd =
        "cd '" + src + "' && " + kPython + " setup.py -q sdist -d '" + dist + "' >/dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return dist + "/" + name + "-0.1.tar.gz";
  }

  // The pid a test trainer printed as "child PID" (0 if none came in time).
  pid_t WaitForChildPid() {
    pid_t child = 0;
    WaitUntil([&] {
      for (const auto& e : recorder_.Logs()) {
        int c = 0;
        if (std::sscanf(e.message.c_str(), "child %d", &c) == 1) {
          child = c;
          return true;
        }
      }
      return false;
    });
    return child;
  }

  TempDir tmp_;
  std::string code_dir_;
  std::string cache_dir_;
  std::string deps_;
  Recorder recorder_;
  std::unique_ptr<Executor> executor_;
};

TEST_F(LocalExecutorTest, SuccessfulTrainerDeliversLinesWithSeveritiesInOrder) {
  WriteTrainer("trainer_ok", R"(import logging, os, sys
print("out 1")
print("out 2")
sys.stdout.flush()
print("err 1", file=sys.stderr)
logging.warning("careful")
print("I1121 12:34:56.789012 123 file.py:1] absl info", file=sys.stderr)
print("tab\there back\\slash")
print("argv " + " ".join(sys.argv[1:]))
print("env " + os.environ.get("MY_VAR", "unset"))
)");
  ReplicaSpec spec = Spec("trainer_ok");
  spec.key.trial_id = "7";
  spec.args = {"--job-dir", "/tmp/out dir"};
  spec.env = {{"MY_VAR", "my value"}};
  ASSERT_TRUE(executor_->Launch(spec).ok());
  EXPECT_EQ(executor_->RunningCount(), 1);

  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_EQ(exit->phase, "run");
  EXPECT_FALSE(exit->killed_by_request);
  EXPECT_EQ(exit->error_tail, "");
  EXPECT_TRUE(WaitUntil([&] { return executor_->RunningCount() == 0; }));

  auto expect = [&](const std::string& msg, Severity sev, const std::string& task) {
    auto e = recorder_.Find(msg);
    ASSERT_TRUE(e.has_value()) << "missing line: " << msg;
    EXPECT_EQ(e->severity, sev) << msg;
    EXPECT_EQ(e->task_name, task) << msg;
    EXPECT_EQ(e->project, "proj");
    EXPECT_EQ(e->job_id, "job_trainer_ok");
    EXPECT_EQ(e->trial_id, "7");
    EXPECT_GT(e->timestamp, 0);
  };
  expect("out 1", Severity::kInfo, "master-replica-0");
  expect("err 1", Severity::kError, "master-replica-0");
  expect("WARNING:root:careful", Severity::kWarning, "master-replica-0");
  expect("I1121 12:34:56.789012 123 file.py:1] absl info", Severity::kInfo, "master-replica-0");
  expect("tab\there back\\slash", Severity::kInfo, "master-replica-0");
  expect("argv --job-dir /tmp/out dir", Severity::kInfo, "master-replica-0");
  expect("env my value", Severity::kInfo, "master-replica-0");
  expect("Running module trainer_ok.", Severity::kInfo, "master-replica-0");
  expect("Module completed; cleaning up.", Severity::kInfo, "master-replica-0");

  // Lines of one stream keep their order; timestamps never go back.
  std::vector<std::string> stdout_lines;
  Timestamp last = 0;
  for (const auto& e : recorder_.Logs()) {
    EXPECT_GE(e.timestamp, last);
    last = e.timestamp;
    const bool launcher_line = e.message.rfind("Running ", 0) == 0 ||
                               e.message.rfind("Module completed", 0) == 0 ||
                               e.message.rfind("Clean up finished", 0) == 0;
    if (e.task_name == "master-replica-0" && e.severity == Severity::kInfo &&
        e.message.rfind("I1121", 0) != 0 && !launcher_line) {
      stdout_lines.push_back(e.message);
    }
  }
  EXPECT_EQ(stdout_lines,
            (std::vector<std::string>{"out 1", "out 2", "tab\there back\\slash",
                                      "argv --job-dir /tmp/out dir", "env my value"}));

  // Running once, before the exit, and every log line before the exit.
  auto events = recorder_.Events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "exit master-replica-0");
  EXPECT_EQ(std::count(events.begin(), events.end(), "running master-replica-0"), 1);
  EXPECT_EQ(recorder_.ExitCalls(spec.key), 1);
}

TEST_F(LocalExecutorTest, LastWordsWithoutANewlineComeBeforeTheExitLine) {
  WriteTrainer("trainer_no_newline", R"(import sys
print("first")
sys.stderr.write("err without newline")
sys.stdout.write("last words without newline")
)");
  ReplicaSpec spec = Spec("trainer_no_newline");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);

  std::vector<std::string> messages;
  for (const auto& e : recorder_.Logs()) messages.push_back(e.message);
  auto index_of = [&](const std::string& m) {
    return std::find(messages.begin(), messages.end(), m) - messages.begin();
  };
  const auto completed = index_of("Module completed; cleaning up.");
  ASSERT_LT(completed, static_cast<ptrdiff_t>(messages.size()));
  EXPECT_LT(index_of("first"), completed);
  EXPECT_LT(index_of("last words without newline"), completed);
  EXPECT_LT(index_of("err without newline"), completed);
}

TEST_F(LocalExecutorTest, RaisingTrainerReportsTheTracebackTail) {
  WriteTrainer("trainer_raise", R"(import sys
print("starting")
def f(n):
    if n == 0:
        raise ValueError("boom")
    f(n - 1)
f(15)
)");
  ReplicaSpec spec = Spec("trainer_raise");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 1);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_EQ(exit->phase, "run");
  EXPECT_EQ(exit->error_tail.rfind("Traceback (most recent call last):\n[...]\n", 0), 0u)
      << exit->error_tail;
  EXPECT_TRUE(EndsWith(exit->error_tail, "ValueError: boom")) << exit->error_tail;
  auto line = recorder_.Find("ValueError: boom");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->severity, Severity::kError);
  EXPECT_TRUE(recorder_.HasLogContaining("Module exited with status 1"));
}

TEST_F(LocalExecutorTest, MissingModuleFailsInRunPhase) {
  ReplicaSpec spec = Spec("no_such_module");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "run");
  EXPECT_EQ(exit->exit_code, 1);
  EXPECT_NE(exit->error_tail.find("No module named no_such_module"), std::string::npos)
      << exit->error_tail;
}

TEST_F(LocalExecutorTest, RejectsASecondLaunchOfARunningReplica) {
  WriteTrainer("trainer_wait", "import time\ntime.sleep(30)\n");
  ReplicaSpec spec = Spec("trainer_wait");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  Status again = executor_->Launch(spec);
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  executor_->Kill(spec.key, 0, "stopped early");
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->killed_by_request);
  EXPECT_EQ(exit->stop_reason, "stopped early");
}

TEST_F(LocalExecutorTest, TrialMetricsArriveAsEventsBeforeTheExitAndSurviveRestarts) {
  WriteTrainer("trainer_metrics", R"(import json, os
with open(os.environ["CLOUD_ML_HP_METRIC_FILE"], "w") as f:
    f.write(json.dumps({"timestamp": 1.0, "acc": "0.5", "global_step": "10"}) + "\n")
    f.write(json.dumps({"timestamp": 2.0, "acc": "0.75", "global_step": "20"}) + "\n")
    f.write(json.dumps({"timestamp": 3.0, "loss": "0.1", "global_step": "20"}) + "\n")
)");
  ReplicaSpec spec = Spec("trainer_metrics");
  spec.key.trial_id = "3";
  spec.work_dir.clear();  // the executor's own layout
  spec.metric_tag = "acc";
  spec.attempt = 2;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  auto records = recorder_.Metrics(spec.key);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].step, 20);
  EXPECT_DOUBLE_EQ(records[1].value, 0.75);
  auto events = recorder_.Events();
  // Read while it ran or after it ended (then as its last records): either way before the exit.
  auto metrics = std::find_if(events.begin(), events.end(), [](const std::string& e) {
    return e == "metrics master-replica-0" || e == "last metrics master-replica-0";
  });
  ASSERT_NE(metrics, events.end());
  EXPECT_LT(metrics - events.begin(),
            std::find(events.begin(), events.end(), "exit master-replica-0") - events.begin());
  EXPECT_EQ(executor_->ReplicaMetrics(spec.key, "acc").size(), 2u);
  EXPECT_TRUE(executor_->ReplicaMetrics(spec.key, "other").empty());
  EXPECT_EQ(executor_->ReplicaMetricTags(spec.key), (std::vector<std::string>{"acc", "loss"}));
  // A restarted daemon finds the spec with its attempt and metric tag.
  Recorder second;
  LocalExecutorOptions options;
  options.launcher_path = TRAINYARD_LAUNCHER_PATH;
  options.jobs_dir = tmp_.path() + "/jobs";
  auto executor = NewLocalExecutor(options, &second);
  auto found = executor->Recover({spec.key});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].spec.attempt, 2);
  EXPECT_EQ(found[0].spec.metric_tag, "acc");
  EXPECT_NE(found[0].spec.work_dir.find("/job_trainer_metrics/trial-3/master-replica-0"),
            std::string::npos)
      << found[0].spec.work_dir;
  EXPECT_EQ(executor->ReplicaMetrics(spec.key, "acc").size(), 2u);
  EXPECT_EQ(executor->ReplicaMetricTags(spec.key).size(), 2u);
  ASSERT_TRUE(second.WaitExit(spec.key).has_value());
  executor->Shutdown();
}

TEST_F(LocalExecutorTest, LaunchFailsWhenTheLauncherCannotStart) {
  LocalExecutorOptions options;
  options.launcher_path = tmp_.path() + "/no-such-launcher";
  auto executor = NewLocalExecutor(options, &recorder_);
  ReplicaSpec spec = Spec("trainer_any");
  // Launch only queues the start; the failure comes back as the replica's exit.
  ASSERT_TRUE(executor->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "launch");
  EXPECT_EQ(exit->exit_code, 1);
  EXPECT_FALSE(exit->killed_by_request);
  EXPECT_NE(exit->message.find("no-such-launcher"), std::string::npos) << exit->message;
  EXPECT_EQ(executor->RunningCount(), 0);
  // The key is free again: a second launch is accepted (and fails the same way).
  ASSERT_TRUE(executor->Launch(spec).ok());
  ASSERT_TRUE(recorder_.WaitExit(spec.key).has_value());
  executor->Shutdown();
}

TEST_F(LocalExecutorTest, KillRightAfterLaunchStopsEveryReplicaStartedOrNot) {
  WriteTrainer("trainer_wait", "import time\ntime.sleep(30)\n");
  // Many launches then kills at once: the later ones are still queued when their kill comes
  // (the start is skipped), the earlier ones have launchers (killed as usual).
  std::vector<ReplicaSpec> specs;
  for (int i = 0; i < 12; ++i) {
    ReplicaSpec spec = Spec("trainer_wait");
    spec.key.index = i;
    spec.work_dir = tmp_.path() + "/kill-early-" + std::to_string(i);
    specs.push_back(spec);
  }
  for (const ReplicaSpec& spec : specs) ASSERT_TRUE(executor_->Launch(spec).ok());
  for (const ReplicaSpec& spec : specs) {
    EXPECT_EQ(executor_->Launch(spec).code(), StatusCode::kAlreadyExists);
    executor_->Kill(spec.key, 0, "cancelled at once");
  }
  for (const ReplicaSpec& spec : specs) {
    auto exit = recorder_.WaitExit(spec.key);
    ASSERT_TRUE(exit.has_value()) << spec.key.TaskName();
    EXPECT_TRUE(exit->killed_by_request) << spec.key.TaskName();
    EXPECT_EQ(exit->stop_reason, "cancelled at once") << spec.key.TaskName();
  }
  EXPECT_EQ(executor_->RunningCount(), 0);
  // No launcher or trainer outlived its kill (trainers run in this test's code dir).
  for (const ProcStat& p : ListProcesses()) {
    if (p.state == 'Z') continue;
    const std::string proc = "/proc/" + std::to_string(p.pid);
    auto cmdline = ReadFile(proc + "/cmdline");
    if (cmdline.ok()) {
      EXPECT_EQ(cmdline->find(tmp_.path() + "/kill-early-"), std::string::npos) << *cmdline;
    }
    std::error_code ec;
    EXPECT_NE(std::filesystem::read_symlink(proc + "/cwd", ec).string(), code_dir_) << p.pid;
  }
}

TEST_F(LocalExecutorTest, MissingInterpreterIsReportedByTheLauncher) {
  ReplicaSpec spec = Spec("trainer_any");
  spec.python = tmp_.path() + "/no-python";
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "run");
  EXPECT_EQ(exit->exit_code, 127);
  EXPECT_NE(exit->error_tail.find("cannot execute " + spec.python), std::string::npos)
      << exit->error_tail;
}

TEST_F(LocalExecutorTest, KillOfAnUnknownReplicaIsANoOp) {
  executor_->Kill({"p", "nope", "", "master", 0}, kMicrosPerSecond, "");
  EXPECT_EQ(executor_->RunningCount(), 0);
}

TEST_F(LocalExecutorTest, InstallsAPackageAndReusesTheCachedEnvironment) {
  std::string sdist = BuildSdist("mypkg", "", R"(import mypkg, sys
print("imported " + mypkg.__file__)
print("python " + sys.executable)
)");
  ReplicaSpec spec = Spec("mypkg.task");
  spec.packages = {sdist};
  spec.package_uris = {"gs://bucket/mypkg-0.1.tar.gz"};
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0) << exit->message << exit->error_tail;
  EXPECT_EQ(exit->phase, "run");
  EXPECT_TRUE(recorder_.Find("Installing the package: gs://bucket/mypkg-0.1.tar.gz"));
  EXPECT_TRUE(recorder_.HasLogContaining("imported " + cache_dir_ + "/"));
  EXPECT_TRUE(recorder_.HasLogContaining("python " + cache_dir_ + "/"));
  EXPECT_FALSE(recorder_.HasLogContaining("Using cached environment"));

  ReplicaSpec again = Spec("mypkg.task", 1);
  again.packages = spec.packages;
  again.package_uris = spec.package_uris;
  ASSERT_TRUE(executor_->Launch(again).ok());
  auto exit2 = recorder_.WaitExit(again.key);
  ASSERT_TRUE(exit2.has_value());
  EXPECT_EQ(exit2->exit_code, 0) << exit2->message << exit2->error_tail;
  int pip_commands = 0;
  bool cached = false;
  for (const auto& e : recorder_.Logs()) {
    if (e.task_name == "master-replica-0" && e.message.find(" -m pip ") != std::string::npos) {
      ++pip_commands;
    }
    if (e.message.rfind("Using cached environment ", 0) == 0) cached = true;
  }
  EXPECT_TRUE(cached);
  EXPECT_EQ(pip_commands, 1);
}

TEST_F(LocalExecutorTest, MissingDependencyFailsInInstallPhaseWithPipsMessage) {
  deps_ = "'nonexistent-pkg-xyz'";
  std::string sdist = BuildSdist("deppkg", "", "print('never')\n");
  ReplicaSpec spec = Spec("deppkg.task");
  spec.packages = {sdist};
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "install");
  EXPECT_EQ(exit->exit_code, 1);
  EXPECT_NE(exit->message.find("ERROR: Could not find a version that satisfies the requirement "
                               "nonexistent-pkg-xyz"),
            std::string::npos)
      << exit->message;
  EXPECT_EQ(recorder_.RunningCalls(spec.key), 0);
  EXPECT_FALSE(recorder_.HasLogContaining("never"));
  // Nothing half-built is left in the cache.
  for (const auto& entry : fs::directory_iterator(cache_dir_)) {
    EXPECT_FALSE(entry.is_directory()) << entry.path();
  }
}

TEST_F(LocalExecutorTest, KillStopsTheTrainerAndEveryDescendant) {
  WriteTrainer("trainer_spawn", R"(import subprocess, time
child = subprocess.Popen(["sleep", "1000"])
escaped = subprocess.Popen(["sleep", "1001"], start_new_session=True)
print("children %d %d" % (child.pid, escaped.pid), flush=True)
while True:
    time.sleep(0.05)
)");
  ReplicaSpec spec = Spec("trainer_spawn");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  ASSERT_TRUE(recorder_.WaitForRunning(spec.key));
  std::vector<pid_t> children;
  ASSERT_TRUE(WaitUntil([&] {
    for (const auto& e : recorder_.Logs()) {
      if (e.message.rfind("children ", 0) == 0) {
        int a = 0, b = 0;
        if (std::sscanf(e.message.c_str(), "children %d %d", &a, &b) == 2) {
          children = {a, b};
          return true;
        }
      }
    }
    return false;
  }));
  executor_->Kill(spec.key, 5 * kMicrosPerSecond, "");
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->killed_by_request);
  EXPECT_EQ(exit->phase, "run");
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_EQ(exit->exit_code, 128 + SIGTERM);
  EXPECT_EQ(Leftovers(spec.work_dir, children), std::vector<pid_t>{});
}

TEST_F(LocalExecutorTest, KillEscalatesToSigkillForATrainerIgnoringSigterm) {
  WriteTrainer("trainer_stubborn", R"(import signal, subprocess, time
signal.signal(signal.SIGTERM, lambda *a: print("got TERM", flush=True))
child = subprocess.Popen(["sleep", "1000"])
print("child %d" % child.pid, flush=True)
while True:
    time.sleep(0.05)
)");
  ReplicaSpec spec = Spec("trainer_stubborn");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  pid_t child = WaitForChildPid();
  ASSERT_GT(child, 0);
  executor_->Kill(spec.key, kMicrosPerSecond, "");
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  // SIGTERM came first and was survived; SIGKILL ended it (no clock is read: the order is
  // what the log shows).
  EXPECT_TRUE(recorder_.HasLogContaining("got TERM"));
  EXPECT_TRUE(exit->killed_by_request);
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_EQ(Leftovers(spec.work_dir, {child}), std::vector<pid_t>{});
  EXPECT_TRUE(recorder_.HasLogContaining("grace period"));
}

TEST_F(LocalExecutorTest, KillDuringPackageInstallStopsPip) {
  std::string sdist = BuildSdist(
      "slowpkg", "import os, time\nif os.environ.get('TY_TEST_SLOW'):\n    time.sleep(1000)\n",
      "print('never')\n");
  ::setenv("TY_TEST_SLOW", "1", 1);  // inherited by the launcher and pip, not by setup.py sdist
  // pip gets only allowlisted variables of the launcher's environment (trainer_env.h).
  ::setenv("TRAINYARD_TRAINER_ENV_ALLOW", "TY_TEST_SLOW", 1);
  ReplicaSpec spec = Spec("slowpkg.task");
  spec.packages = {sdist};
  ASSERT_TRUE(executor_->Launch(spec).ok());
  ::unsetenv("TY_TEST_SLOW");
  ::unsetenv("TRAINYARD_TRAINER_ENV_ALLOW");
  ASSERT_TRUE(WaitUntil([&] {
    for (const auto& e : recorder_.Logs()) {
      if (e.task_name == "master-replica-0" && e.message.find(" -m pip ") != std::string::npos) {
        return true;
      }
    }
    return false;
  }));
  // Let pip get to setup.py.
  ASSERT_TRUE(WaitUntil([&] {
    for (const ProcStat& p : ListProcesses()) {
      auto cmd = ReadFile("/proc/" + std::to_string(p.pid) + "/cmdline");
      if (cmd.ok() && cmd->find("setup.py") != std::string::npos &&
          cmd->find("egg_info") != std::string::npos) {
        return true;
      }
    }
    return false;
  }));
  executor_->Kill(spec.key, 2 * kMicrosPerSecond, "");
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->killed_by_request);
  EXPECT_EQ(exit->phase, "install");
  EXPECT_EQ(recorder_.RunningCalls(spec.key), 0);
  EXPECT_EQ(Leftovers(spec.work_dir), std::vector<pid_t>{});
  for (const auto& entry : fs::directory_iterator(cache_dir_)) {
    EXPECT_FALSE(entry.is_directory()) << entry.path();
  }
}

TEST_F(LocalExecutorTest, LauncherKilledOutrightIsReportedAndItsOrphansStopped) {
  WriteTrainer("trainer_orphan", R"(import subprocess, time
child = subprocess.Popen(["sleep", "1000"])
print("child %d" % child.pid, flush=True)
while True:
    time.sleep(0.05)
)");
  ReplicaSpec spec = Spec("trainer_orphan");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  pid_t child = WaitForChildPid();
  ASSERT_GT(child, 0);
  auto text = ReadFile(spec.work_dir + "/" + kPidFile);
  pid_t launcher = 0;
  uint64_t start = 0;
  ASSERT_TRUE(text.ok() && ParsePidFile(*text, &launcher, &start));
  ::kill(launcher, SIGKILL);
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "lost");
  EXPECT_EQ(exit->exit_code, -1);
  EXPECT_FALSE(exit->killed_by_request);
  // The message says what happened (issue 17: it used to say only that the launcher exited).
  EXPECT_NE(exit->message.find("its launcher (pid " + std::to_string(launcher) +
                               ") was killed by signal 9 (SIGKILL) before it reported how the "
                               "trainer ended; the trainer's processes left were killed"),
            std::string::npos)
      << exit->message;
  EXPECT_TRUE(WaitUntil([&] { return Leftovers(spec.work_dir, {child}).empty(); }, seconds(10)));
}

TEST_F(LocalExecutorTest, RecoverReattachesToARunningReplica) {
  WriteTrainer("trainer_gate", R"(import os, sys, time
print("before", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
print("after", flush=True)
sys.exit(3)
)");
  ReplicaSpec spec = Spec("trainer_gate");
  const std::string gate = tmp_.path() + "/gate";
  spec.args = {gate};
  ASSERT_TRUE(executor_->Launch(spec).ok());
  ASSERT_TRUE(recorder_.WaitLog("before"));
  executor_->Shutdown();
  executor_.reset();  // the daemon goes away; the replica keeps running
  ASSERT_FALSE(recorder_.Find("after").has_value());

  Recorder second;
  LocalExecutorOptions options;
  options.launcher_path = TRAINYARD_LAUNCHER_PATH;
  options.jobs_dir = tmp_.path() + "/jobs";
  options.log_poll_interval = 10 * 1000;
  auto executor = NewLocalExecutor(options, &second);
  std::vector<RecoveredReplica> found = executor->Recover({spec.key});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].spec.key, spec.key);
  EXPECT_TRUE(found[0].running);
  EXPECT_EQ(found[0].spec.args, spec.args);
  EXPECT_EQ(found[0].spec.work_dir, spec.work_dir);
  EXPECT_EQ(executor->RunningCount(), 1);
  WriteText(gate, "");
  auto exit = second.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_EQ(exit->phase, "run");
  EXPECT_TRUE(second.Find("after").has_value());
  EXPECT_FALSE(second.Find("before").has_value()) << "delivered twice";
  auto events = second.Events();
  EXPECT_EQ(events.back(), "exit master-replica-0");
  executor->Shutdown();
}

TEST_F(LocalExecutorTest, RecoverReportsAReplicaThatEndedWhileTheDaemonWasDown) {
  WriteTrainer("trainer_gate2", R"(import os, sys, time
print("before", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
print("after", flush=True)
sys.exit(4)
)");
  ReplicaSpec spec = Spec("trainer_gate2");
  const std::string gate = tmp_.path() + "/gate";
  spec.args = {gate};
  ASSERT_TRUE(executor_->Launch(spec).ok());
  ASSERT_TRUE(recorder_.WaitLog("before"));
  executor_->Shutdown();
  executor_.reset();
  WriteText(gate, "");
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(spec.work_dir + "/" + kExitFile); }));

  Recorder second;
  LocalExecutorOptions options;
  options.launcher_path = TRAINYARD_LAUNCHER_PATH;
  options.jobs_dir = tmp_.path() + "/jobs";
  auto executor = NewLocalExecutor(options, &second);
  // Reap the launcher (our child) so it is really gone, as after a daemon restart.
  ASSERT_TRUE(WaitUntil([&] {
    auto pid_text = ReadFile(spec.work_dir + "/" + kPidFile);
    pid_t pid = 0;
    uint64_t start = 0;
    if (!pid_text.ok() || !ParsePidFile(*pid_text, &pid, &start)) return false;
    ::waitpid(pid, nullptr, WNOHANG);
    return !ProcessAlive(pid, start);
  }));
  auto found = executor->Recover({spec.key});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].running);
  auto exit = second.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 4);
  EXPECT_FALSE(exit->killed_by_request);
  EXPECT_TRUE(second.Find("after").has_value());
  EXPECT_FALSE(second.Find("before").has_value());
  executor->Shutdown();
}

TEST_F(LocalExecutorTest, RecoverReportsALostLauncher) {
  ReplicaSpec spec = Spec("trainer_lost");
  fs::create_directories(spec.work_dir);
  WriteText(spec.work_dir + "/" + kSpecFile, SpecToJson(spec));
  // A pid that certainly is not a launcher any more.
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  WriteText(spec.work_dir + "/" + kPidFile, FormatPidFile(pid, 12345));
  WriteText(spec.work_dir + "/" + kLogFile,
            FormatLogRecord(1, Severity::kInfo, false, "last words") + "\n");
  auto found = executor_->Recover({spec.key, {"proj", "never-launched", "", "master", 0}});
  ASSERT_EQ(found.size(), 1u) << "a key never launched is not found";
  EXPECT_FALSE(found[0].running);
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "lost");
  EXPECT_EQ(exit->exit_code, -1);
  EXPECT_NE(exit->message.find("its launcher (pid " + std::to_string(pid) +
                               ") exited before it reported how the trainer ended"),
            std::string::npos)
      << exit->message;
  EXPECT_TRUE(recorder_.Find("last words").has_value());
}

TEST_F(LocalExecutorTest, LongLinesAreSplitIntoRecords) {
  WriteTrainer("trainer_long", "print('x' * 600000)\nprint('end')\n");
  ReplicaSpec spec = Spec("trainer_long");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  size_t xs = 0;
  int pieces = 0;
  for (const auto& e : recorder_.Logs()) {
    if (!e.message.empty() && e.message[0] == 'x') {
      xs += e.message.size();
      ++pieces;
      EXPECT_LE(e.message.size(), 256u * 1024);
    }
  }
  EXPECT_EQ(xs, 600000u);
  EXPECT_EQ(pieces, 3);
  EXPECT_TRUE(recorder_.Find("end").has_value());
}

// ---------------------------------------------------------------------------------------------
// Resource limits (cgroup v1)

// A unique group name per test process and call, under one prefix that tests share.
std::string TestCgroupName() {
  static int counter = 0;
  return "trainyard-test/" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// The replica's group directories; removes them (and kills what is in them) when the test ends,
// whatever the launcher did.
class TestCgroups {
 public:
  explicit TestCgroups(std::string name) : name_(std::move(name)) {}
  ~TestCgroups() {
    for (const char* c : {cgroup_v1::kMemory, cgroup_v1::kCpu}) {
      (void)cgroup_v1::DestroyGroup(Dir(c), 5 * kMicrosPerSecond);
    }
  }
  const std::string& name() const { return name_; }
  std::string Dir(const char* controller) const {
    return cgroup_v1::GroupDir(kCgroupRoot, controller, name_);
  }

 private:
  std::string name_;
};

int CountServiceLinesContaining(const std::vector<model::LogEntry>& logs, Severity severity,
                                const std::string& part) {
  int n = 0;
  for (const auto& e : logs) {
    if (e.task_name != "service" && e.severity == severity &&
        e.message.find(part) != std::string::npos) {
      ++n;
    }
  }
  return n;
}

TEST_F(LocalExecutorTest, MemoryLimitKillsTheTrainerAndReportsOom) {
  CgroupProbe probe = ProbeCgroupV1(kCgroupRoot);
  if (!probe.usable) GTEST_SKIP() << "no usable cgroup v1: " << probe.reason;
  WriteTrainer("trainer_hog", R"(import sys
print("allocating", flush=True)
hog = bytearray(b"x") * (300 * 1024 * 1024)
print("survived %d" % len(hog), flush=True)
)");
  TestCgroups groups(TestCgroupName());
  ReplicaSpec spec = Spec("trainer_hog");
  spec.cgroup_root = kCgroupRoot;
  spec.cgroup_name = groups.name();
  spec.limits.memory_bytes = 64 << 20;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "run");
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_EQ(exit->exit_code, 128 + SIGKILL);
  EXPECT_TRUE(exit->oom_killed);
  EXPECT_TRUE(recorder_.Find("allocating").has_value());
  EXPECT_FALSE(recorder_.HasLogContaining("survived"));
  EXPECT_TRUE(recorder_.Find("Limiting the replica to 64.0 MiB of memory."));
  auto oom = recorder_.Find("The replica ran out of memory (limit 64.0 MiB) and was killed.");
  ASSERT_TRUE(oom.has_value());
  EXPECT_EQ(oom->severity, Severity::kError);
  EXPECT_EQ(oom->task_name, "master-replica-0");
  // exit.json comes after the cleanup: the groups are gone by now.
  EXPECT_FALSE(fs::exists(groups.Dir(cgroup_v1::kMemory)));
  EXPECT_FALSE(fs::exists(groups.Dir(cgroup_v1::kCpu)));
  EXPECT_EQ(Leftovers(spec.work_dir), std::vector<pid_t>{});
}

TEST_F(LocalExecutorTest, EveryProcessOfTheReplicaRunsInItsLimitedGroups) {
  CgroupProbe probe = ProbeCgroupV1(kCgroupRoot);
  if (!probe.usable) GTEST_SKIP() << "no usable cgroup v1: " << probe.reason;
  // The trainer leaves a child behind in a session of its own: the group still catches it.
  WriteTrainer("trainer_limited", R"(import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "1000"], start_new_session=True)
print("child %d" % child.pid, flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
)");
  TestCgroups groups(TestCgroupName());
  ReplicaSpec spec = Spec("trainer_limited");
  const std::string gate = tmp_.path() + "/gate";
  spec.args = {gate};
  spec.cgroup_root = kCgroupRoot;
  spec.cgroup_name = groups.name();
  spec.limits.memory_bytes = int64_t{3} << 30;
  spec.limits.cpu_millis = 1500;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  pid_t child = WaitForChildPid();
  ASSERT_GT(child, 0);

  const std::string memory = groups.Dir(cgroup_v1::kMemory);
  const std::string cpu = groups.Dir(cgroup_v1::kCpu);
  EXPECT_EQ(ReadFile(memory + "/memory.limit_in_bytes").value(),
            std::to_string(int64_t{3} << 30) + "\n");
  EXPECT_EQ(ReadFile(cpu + "/cpu.cfs_period_us").value(), "100000\n");
  EXPECT_EQ(ReadFile(cpu + "/cpu.cfs_quota_us").value(), "150000\n");
  for (const std::string& dir : {memory, cpu}) {
    std::vector<pid_t> pids = cgroup_v1::ListPids(dir);
    EXPECT_EQ(pids.size(), 2u) << dir;  // the trainer and its child, not the launcher
    EXPECT_NE(std::find(pids.begin(), pids.end(), child), pids.end()) << dir;
  }
  EXPECT_TRUE(recorder_.Find("Limiting the replica to 3.0 GiB of memory and 1.5 CPUs."));

  WriteText(gate, "");
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0) << exit->error_tail;
  EXPECT_FALSE(exit->oom_killed);
  EXPECT_FALSE(fs::exists(memory));
  EXPECT_FALSE(fs::exists(cpu));
  EXPECT_EQ(Leftovers(spec.work_dir, {child}), std::vector<pid_t>{});
  EXPECT_EQ(CountServiceLinesContaining(recorder_.Logs(), Severity::kWarning, "resource limits"),
            0);
}

TEST_F(LocalExecutorTest, ReplicaRunsWithoutLimitsWhenItsCgroupsCannotBeSetUp) {
  // A root whose hierarchies are plain directories (what a tmpfs at /sys/fs/cgroup without
  // cgroup v1 mounts looks like): nothing is created there and the trainer runs anyway.
  const std::string root = tmp_.path() + "/fake-cgroup";
  fs::create_directories(root + "/memory");
  fs::create_directories(root + "/cpu");
  WriteTrainer("trainer_unlimited", "print('ran')\n");
  ReplicaSpec spec = Spec("trainer_unlimited");
  spec.cgroup_root = root;
  spec.cgroup_name = TestCgroupName();
  spec.limits.memory_bytes = 64 << 20;
  spec.limits.cpu_millis = 500;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0) << exit->error_tail;
  EXPECT_FALSE(exit->oom_killed);
  EXPECT_TRUE(recorder_.Find("ran").has_value());
  auto logs = recorder_.Logs();
  EXPECT_EQ(CountServiceLinesContaining(logs, Severity::kWarning,
                                        "Cannot apply the replica's resource limits"),
            1);
  EXPECT_TRUE(recorder_.HasLogContaining(root + "/memory is not a cgroup v1 mount"));
  EXPECT_FALSE(recorder_.HasLogContaining("Limiting the replica"));
  EXPECT_TRUE(fs::is_empty(root + "/memory"));
  EXPECT_TRUE(fs::is_empty(root + "/cpu"));
}

// ---------------------------------------------------------------------------------------------
// Custom containers, against a fake engine: a shell script that records every call and plays
// podman's (or docker's) part as configured by files in its directory.

constexpr const char* kFakeEngine = R"SH(#!/bin/sh
d="$(dirname "$0")"
{ for a in "$@"; do printf '%s\n' "$a"; done; echo '--END--'; } >> "$d/calls"
# The last argument (the image of `image inspect`, `pull`, or `run` without arguments).
for last in "$@"; do :; done
# With a file "present", only the images it lists are in local storage.
present() { [ ! -f "$d/present" ] || grep -qxF "$1" "$d/present"; }
case "$1" in
  image)
    if [ -f "$d/present" ]; then
      present "$last" && { echo sha256:1234; exit 0; }
      echo "Error: inspecting object: $last: image not known" >&2; exit 125
    fi
    exit "$(cat "$d/image_exit" 2>/dev/null || echo 0)" ;;
  pull)
    # One line per pull, in one write (replicas pull concurrently).
    echo "$last ${DOCKER_CONFIG:-}" >> "$d/pulls"
    echo "Trying to pull $last..." >&2
    if [ -f "$d/pull_sleep" ]; then
      trap 'echo PULLTERM >> "$d/signals"; exit 143' TERM
      echo "sleeping in pull" >&2
      while :; do sleep 0.05; done
    fi
    if [ -f "$d/pull_fail" ]; then cat "$d/pull_fail" >&2; exit 125; fi
    echo "Copying blob sha256:abcd" >&2
    echo "$last" >> "$d/present"
    echo sha256:9388e6e4e80f
    exit 0 ;;
  inspect) cat "$d/oom" 2>/dev/null || echo false; exit 0 ;;
  rm) exit 0 ;;
  run)
    img=""; prev=""
    for a in "$@"; do if [ "$prev" = "--" ] && [ -z "$img" ]; then img="$a"; fi; prev="$a"; done
    if [ "$(cat "$d/image_exit" 2>/dev/null || echo 0)" != 0 ] || ! present "$img"; then
      echo "Error: $img: image not known" >&2
      exit 125
    fi
    while [ $# -gt 0 ]; do
      if [ "$1" = --env-file ]; then cp "$2" "$d/env.copy"; fi
      shift
    done
    echo "container out"
    echo "engine var ${FAKE_ENGINE_VAR:-unset} spec var ${MY_VAR:-unset}"
    echo "container err" >&2
    echo "WARNING: careful" >&2
    if [ -f "$d/run_ignore_term" ]; then trap '' TERM; fi
    if [ -f "$d/run_sleep" ]; then
      if [ ! -f "$d/run_ignore_term" ]; then trap 'echo TERM >> "$d/signals"; exit 143' TERM; fi
      echo "sleeping"
      while :; do sleep 0.05; done
    fi
    exit "$(cat "$d/run_exit" 2>/dev/null || echo 0)" ;;
esac
exit 99
)SH";

class ContainerTest : public LocalExecutorTest {
 protected:
  void SetUp() override {
    LocalExecutorTest::SetUp();
    engine_dir_ = tmp_.path() + "/engine";
    InstallEngine("podman");
  }

  // Installs the fake engine as `engine_dir_/name` (the launcher decides docker or podman by
  // the name).
  std::string InstallEngine(const std::string& name) {
    const std::string path = engine_dir_ + "/" + name;
    WriteText(path, kFakeEngine);
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }
  void Configure(const std::string& file, const std::string& value) {
    WriteText(engine_dir_ + "/" + file, value);
  }

  ReplicaSpec ContainerSpec(const std::string& name, const std::string& engine = "podman") {
    ReplicaSpec spec;
    spec.key = {"proj", "job_" + name, "", "master", 0};
    spec.work_dir = tmp_.path() + "/work/" + name;
    spec.container.engine = engine_dir_ + "/" + engine;
    spec.container.image = "localhost/trainer:1";
    spec.container.name = "ty-" + name;
    return spec;
  }

  // Every call of the engine so far, each as its argv after the engine.
  std::vector<std::vector<std::string>> Calls() {
    std::vector<std::vector<std::string>> calls;
    std::ifstream in(engine_dir_ + "/calls");
    std::vector<std::string> call;
    for (std::string line; std::getline(in, line);) {
      if (line == "--END--") {
        calls.push_back(std::move(call));
        call.clear();
      } else {
        call.push_back(line);
      }
    }
    return calls;
  }
  std::vector<std::string> RemoveCall(const std::string& name) {
    return {"rm", "-f", "-t", "0", name};
  }
  std::vector<std::string> InspectCall(const std::string& name) {
    return {"inspect", "--type", "container", "--format", "{{.State.OOMKilled}}", name};
  }

  std::string engine_dir_;
};

// What the launcher adds for every container (docs/writing-a-trainer.md): the per-replica
// gcloud/gsutil files, the bucket store at /gcs, and a local job dir at its own path.
TEST_F(ContainerTest, MountsStorageClientFilesGcsAndALocalJobDir) {
  ReplicaSpec spec = ContainerSpec("mounts");
  const std::string job_dir = spec.work_dir + "-job dir";
  ASSERT_TRUE(MakeDirs(job_dir).ok());
  spec.env = {{"STORAGE_EMULATOR_HOST", "http://127.0.0.1:8470"},
              {"CLOUD_ML_PROJECT_ID", "proj"},
              {"TRAINYARD_BUCKETS_DIR", "/srv/buckets"},
              {"CLOUD_ML_JOB", R"({"job_dir":")" + job_dir + R"("})"}};
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  auto calls = Calls();
  ASSERT_FALSE(calls.empty());
  const std::string cloudsdk = spec.work_dir + "/cloudsdk";
  const std::vector<std::string> expected_mounts = {
      "-v", cloudsdk + ":" + cloudsdk, "-v", "/srv/buckets:/gcs", "-v", job_dir + ":" + job_dir};
  EXPECT_NE(
      std::search(calls[0].begin(), calls[0].end(), expected_mounts.begin(), expected_mounts.end()),
      calls[0].end())
      << ::testing::PrintToString(calls[0]);
  const std::string env = ReadFile(spec.work_dir + "/container.env").value();
  EXPECT_NE(env.find("CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE=http://127.0.0.1:8470/storage/v1/\n"),
            std::string::npos)
      << env;
  EXPECT_NE(env.find("BOTO_CONFIG=" + cloudsdk + "/boto\n"), std::string::npos) << env;
  EXPECT_NE(ReadFile(cloudsdk + "/boto").value().find("use_gcloud_storage = True"),
            std::string::npos);
}

TEST_F(ContainerTest, RunsTheImageWithTheSpecsArgvEnvironmentAndLimits) {
  ReplicaSpec spec = ContainerSpec("full");
  spec.env = {{"TF_CONFIG", R"({"task":{"type":"master","index":0}})"}, {"MY_VAR", "my value"}};
  spec.container.engine_env = {{"FAKE_ENGINE_VAR", "engine value"}};
  spec.container.entrypoint = std::vector<std::string>{"python", "-m", "trainer.task"};
  spec.container.args = {"--lr", "0.1", "--job-dir", "/out dir"};
  spec.container.mounts = {"/data:/data:ro", "/out:/out"};
  spec.container.devices = {"/dev/nvidia0"};
  spec.limits.cpu_millis = 3500;
  spec.limits.memory_bytes = int64_t{1} << 30;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "run");
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_FALSE(exit->oom_killed);
  EXPECT_EQ(exit->error_tail, "");
  EXPECT_EQ(recorder_.RunningCalls(spec.key), 1);

  const std::string env_file = spec.work_dir + "/container.env";
  const std::vector<std::string> run = {"run",          "--name",
                                        "ty-full",      "--replace",
                                        "--pull=never", "--network=host",
                                        "--env-file",   env_file,
                                        "-v",           "/data:/data:ro",
                                        "-v",           "/out:/out",
                                        "--device",     "/dev/nvidia0",
                                        "--cpus",       "3.5",
                                        "--memory",     "1073741824b",
                                        "--entrypoint", R"(["python","-m","trainer.task"])",
                                        "--",           "localhost/trainer:1",
                                        "--lr",         "0.1",
                                        "--job-dir",    "/out dir"};
  EXPECT_EQ(Calls(), (std::vector<std::vector<std::string>>{
                         run,
                         InspectCall("ty-full"),
                         RemoveCall("ty-full"),
                     }));
  // The container gets spec.env through the file; the engine CLI gets only engine_env.
  EXPECT_EQ(ReadFile(engine_dir_ + "/env.copy").value(),
            "MY_VAR=my "
            "value\nPYTHONUNBUFFERED=1\nTF_CONFIG={\"task\":{\"type\":\"master\",\"index\":0}}\n");
  EXPECT_EQ(ReadFile(env_file).value(), ReadFile(engine_dir_ + "/env.copy").value());

  auto expect = [&](const std::string& msg, Severity sev) {
    auto e = recorder_.Find(msg);
    ASSERT_TRUE(e.has_value()) << "missing line: " << msg;
    EXPECT_EQ(e->severity, sev) << msg;
    EXPECT_EQ(e->task_name, "master-replica-0") << msg;
  };
  expect("container out", Severity::kInfo);
  expect("engine var engine value spec var unset", Severity::kInfo);
  expect("container err", Severity::kError);
  expect("WARNING: careful", Severity::kWarning);
  expect("Running container image localhost/trainer:1.", Severity::kInfo);
  expect("Running command: " + spec.container.engine +
             " run --name ty-full --replace --pull=never --network=host --env-file " + env_file +
             " -v /data:/data:ro -v /out:/out --device /dev/nvidia0 --cpus 3.5 --memory "
             "1073741824b --entrypoint '[\"python\",\"-m\",\"trainer.task\"]' "
             "-- localhost/trainer:1 --lr 0.1 --job-dir '/out dir'",
         Severity::kInfo);
  expect("Container completed; cleaning up.", Severity::kInfo);
  expect("Clean up finished.", Severity::kInfo);
  // Neither Python nor the launcher's cgroup code took part.
  EXPECT_FALSE(recorder_.HasLogContaining("Limiting the replica"));
  EXPECT_FALSE(recorder_.HasLogContaining("environment"));
  EXPECT_EQ(Leftovers(spec.work_dir), std::vector<pid_t>{});
}

TEST_F(ContainerTest, WithoutEntrypointOrLimitsTheImageKeepsItsOwn) {
  ReplicaSpec spec = ContainerSpec("plain");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  auto calls = Calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0],
            (std::vector<std::string>{
                "run", "--name", "ty-plain", "--replace", "--pull=never", "--network=host",
                "--env-file", spec.work_dir + "/container.env", "--", "localhost/trainer:1"}));
  // Only what Trainyard adds for every container (docs/writing-a-trainer.md).
  EXPECT_EQ(ReadFile(spec.work_dir + "/container.env").value(), "PYTHONUNBUFFERED=1\n");
}

TEST_F(ContainerTest, AnEmptyEntrypointClearsTheImagesEntrypointAndCommand) {
  ReplicaSpec spec = ContainerSpec("empty_ep");
  spec.container.entrypoint = std::vector<std::string>{};
  spec.container.args = {"/bin/true"};
  spec.limits.cpu_millis = 250;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  ASSERT_TRUE(recorder_.WaitExit(spec.key).has_value());
  auto calls = Calls();
  ASSERT_EQ(calls.size(), 3u);  // run, inspect, rm
  const std::vector<std::string> tail(calls[0].end() - 6, calls[0].end());
  EXPECT_EQ(tail, (std::vector<std::string>{"0.25", "--entrypoint", "", "--", "localhost/trainer:1",
                                            "/bin/true"}));
}

TEST_F(ContainerTest, DockerGetsItsOwnCommandsAndASingleEntrypointExecutable) {
  InstallEngine("docker");
  ReplicaSpec spec = ContainerSpec("dock", "docker");
  spec.container.entrypoint = std::vector<std::string>{"python", "-m", "trainer.task"};
  spec.container.args = {"--lr", "0.1"};
  spec.limits.cpu_millis = 2000;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(Calls(),
            (std::vector<std::vector<std::string>>{
                {"rm", "-f", "ty-dock"},
                {"run", "--name", "ty-dock", "--pull=never", "--network=host", "--env-file",
                 spec.work_dir + "/container.env", "--cpus", "2", "--entrypoint", "python", "--",
                 "localhost/trainer:1", "-m", "trainer.task", "--lr", "0.1"},
                InspectCall("ty-dock"),
                {"rm", "-f", "ty-dock"},
            }));
}

TEST_F(ContainerTest, MissingLocalImageFailsToStartWithoutCountingAsRunning) {
  Configure("image_exit", "1");
  ReplicaSpec spec = ContainerSpec("noimage");
  // localhost/ names no registry: nothing to pull, whatever the policy.
  spec.container.pull.policy = "missing";
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "launch");
  EXPECT_EQ(exit->exit_code, 1);
  const std::string message =
      "The container image localhost/trainer:1 is not in the local storage of podman, and its "
      "name has no registry to pull it from (localhost/ names images built on this machine): "
      "build it (" +
      spec.container.engine + " build -t localhost/trainer:1 DIR) or load it (" +
      spec.container.engine +
      " load -i FILE) on this machine, or push it to a registry and give that registry's name.";
  EXPECT_EQ(exit->message, message);
  auto line = recorder_.Find(message);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->severity, Severity::kError);
  // `run` fails at once (--pull=never); the replica never counted as running.
  auto calls = Calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0][0], "run");
  EXPECT_EQ(calls[1], InspectCall("ty-noimage"));
  EXPECT_EQ(calls[2], RemoveCall("ty-noimage"));
  EXPECT_EQ(recorder_.RunningCalls(spec.key), 0);
}

// Registries (docs/containers.md): the image a mirror maps gcr.io/p/t:1 to.
class PullTest : public ContainerTest {
 protected:
  ReplicaSpec PullSpec(const std::string& name, const std::string& policy, int index = 0) {
    ReplicaSpec spec = ContainerSpec(name);
    spec.key.index = index;
    spec.key.task_type = index == 0 ? "master" : "worker";
    spec.work_dir += "-" + std::to_string(index);
    spec.container.name += "-" + std::to_string(index);
    spec.env_cache_dir = tmp_.path() + "/env-cache";
    spec.container.image = "gcr.io/p/t:1";
    ImagePull& p = spec.container.pull;
    p.policy = policy;
    p.reference = "localhost:5000/p/t:1";
    p.registry = "localhost:5000";
    p.mirror = "gcr.io=localhost:5000";
    p.tls_verify = false;
    p.auth_file = "/etc/trainyard/auth.json";
    p.token = "proj/job_" + name + "@1";
    return spec;
  }
  std::vector<std::string> Pulls() {
    auto text = ReadFile(engine_dir_ + "/pulls");
    std::vector<std::string> out;
    if (!text.ok()) return out;
    for (const std::string& line : Split(*text, '\n')) {
      if (!line.empty()) out.push_back(line);
    }
    return out;
  }
  std::vector<std::string> PullCall(const std::string& ref) {
    return {"pull", "--tls-verify=false", "--authfile", "/etc/trainyard/auth.json", "--", ref};
  }
  std::vector<std::string> ImageCall(const std::string& ref) {
    return {"image", "inspect", "--format", "{{.Id}}", ref};
  }
};

TEST_F(PullTest, MissingPolicyPullsTheMirrorsReferenceAndRunsIt) {
  Configure("present", "");
  ReplicaSpec spec = PullSpec("pull", "missing");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "run") << exit->message;
  EXPECT_EQ(exit->exit_code, 0);
  auto calls = Calls();
  ASSERT_EQ(calls.size(), 6u) << ::testing::PrintToString(calls);
  EXPECT_EQ(calls[0], ImageCall("gcr.io/p/t:1"));
  EXPECT_EQ(calls[1], ImageCall("localhost:5000/p/t:1"));
  EXPECT_EQ(calls[2], PullCall("localhost:5000/p/t:1"));
  EXPECT_EQ(calls[3][0], "run");
  EXPECT_EQ(calls[3].back(), "localhost:5000/p/t:1");
  EXPECT_EQ(calls[5], RemoveCall(spec.container.name));
  auto line = recorder_.Find(
      "Pulling the container image gcr.io/p/t:1 (as localhost:5000/p/t:1 through "
      "registry_mirrors gcr.io=localhost:5000) from the registry localhost:5000 "
      "(image_pull_policy missing, without TLS verification, credentials from "
      "/etc/trainyard/auth.json).");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->severity, Severity::kInfo);
  // The engine's progress, then how long it took and what it got.
  EXPECT_TRUE(recorder_.Find("Copying blob sha256:abcd").has_value());
  EXPECT_TRUE(
      recorder_.HasLogContaining("Pulled localhost:5000/p/t:1 from the registry "
                                 "localhost:5000 in "));
  EXPECT_TRUE(recorder_.HasLogContaining(" s (image sha256:9388e6e4e80f)."));
  EXPECT_TRUE(recorder_.Find("Running container image localhost:5000/p/t:1.").has_value());
  EXPECT_EQ(recorder_.RunningCalls(spec.key), 1);
}

TEST_F(PullTest, MissingPolicyRunsAnImageThatIsHereWithoutPulling) {
  Configure("present", "gcr.io/p/t:1\n");
  ReplicaSpec spec = PullSpec("here", "missing");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0) << exit->message;
  auto calls = Calls();
  ASSERT_EQ(calls.size(), 4u) << ::testing::PrintToString(calls);
  EXPECT_EQ(calls[0], ImageCall("gcr.io/p/t:1"));
  EXPECT_EQ(calls[1].back(), "gcr.io/p/t:1");
  EXPECT_EQ(Pulls(), std::vector<std::string>{});
  // The mirror's reference counts too.
  Configure("present", "localhost:5000/p/t:1\n");
  spec = PullSpec("mirror_here", "missing");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  ASSERT_TRUE(recorder_.WaitExit(spec.key).has_value());
  EXPECT_EQ(Pulls(), std::vector<std::string>{});
  EXPECT_EQ(Calls().back(), RemoveCall(spec.container.name));
}

TEST_F(PullTest, AFailedPullSaysWhatWasTriedAndRunsNothing) {
  Configure("present", "");
  Configure("pull_fail",
            "time=\"x\" level=warning msg=\"Failed, retrying in 1s ... (1/3).\"\n"
            "Error: initializing source docker://localhost:5000/p/t:1: reading manifest 1 in "
            "localhost:5000/p/t: manifest unknown: manifest unknown\n");
  ReplicaSpec spec = PullSpec("nopull", "missing");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "launch");
  EXPECT_EQ(exit->exit_code, 1);
  const std::string& m = exit->message;
  EXPECT_TRUE(
      m.starts_with("Cannot pull the container image gcr.io/p/t:1 (as localhost:5000/p/t:1 through "
                    "registry_mirrors gcr.io=localhost:5000) from the registry localhost:5000 "
                    "(image_pull_policy missing, without TLS verification, credentials from "
                    "/etc/trainyard/auth.json): podman pull exited with status 125 after "))
      << m;
  EXPECT_TRUE(m.ends_with(
      " s: Error: initializing source docker://localhost:5000/p/t:1: reading manifest 1 in "
      "localhost:5000/p/t: manifest unknown: manifest unknown"))
      << m;
  auto warning =
      recorder_.Find("time=\"x\" level=warning msg=\"Failed, retrying in 1s ... (1/3).\"");
  ASSERT_TRUE(warning.has_value());
  EXPECT_EQ(warning->severity, Severity::kWarning);
  ASSERT_TRUE(recorder_.Find(m).has_value());
  EXPECT_EQ(recorder_.Find(m)->severity, Severity::kError);
  for (const auto& call : Calls()) EXPECT_NE(call[0], "run");
  EXPECT_EQ(recorder_.RunningCalls(spec.key), 0);
}

TEST_F(PullTest, ReplicasOfAJobShareOnePull) {
  Configure("present", "");
  std::vector<ReplicaSpec> specs;
  for (int i = 0; i < 3; ++i) specs.push_back(PullSpec("shared", "missing", i));
  for (const ReplicaSpec& spec : specs) ASSERT_TRUE(executor_->Launch(spec).ok());
  for (const ReplicaSpec& spec : specs) {
    auto exit = recorder_.WaitExit(spec.key);
    ASSERT_TRUE(exit.has_value());
    EXPECT_EQ(exit->exit_code, 0) << exit->message;
  }
  EXPECT_EQ(Pulls(), std::vector<std::string>{"localhost:5000/p/t:1 "});
}

TEST_F(PullTest, AlwaysPullsOncePerJob) {
  Configure("present", "gcr.io/p/t:1\nlocalhost:5000/p/t:1\n");
  std::vector<ReplicaSpec> specs;
  for (int i = 0; i < 2; ++i) specs.push_back(PullSpec("always", "always", i));
  for (const ReplicaSpec& spec : specs) ASSERT_TRUE(executor_->Launch(spec).ok());
  for (const ReplicaSpec& spec : specs) {
    auto exit = recorder_.WaitExit(spec.key);
    ASSERT_TRUE(exit.has_value());
    EXPECT_EQ(exit->exit_code, 0) << exit->message;
  }
  EXPECT_EQ(Pulls().size(), 1u);
  EXPECT_TRUE(recorder_.HasLogContaining(
      "Another replica of this job has pulled localhost:5000/p/t:1; it is not pulled again"));
  // Another job pulls again.
  ReplicaSpec other = PullSpec("always_again", "always");
  ASSERT_TRUE(executor_->Launch(other).ok());
  ASSERT_TRUE(recorder_.WaitExit(other.key).has_value());
  EXPECT_EQ(Pulls().size(), 2u);
}

TEST_F(PullTest, NeverPolicyRunsTheImageAsGivenAndSaysHowToGetIt) {
  Configure("present", "localhost:5000/p/t:1\n");
  ReplicaSpec spec = PullSpec("never", "never");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "launch");
  EXPECT_EQ(exit->message,
            "The container image gcr.io/p/t:1 is not in the local storage of podman and "
            "image_pull_policy is never: build it (" +
                spec.container.engine + " build -t gcr.io/p/t:1 DIR) or load it (" +
                spec.container.engine + " load -i FILE) on this machine, or pull it (" +
                spec.container.engine + " pull localhost:5000/p/t:1).");
  auto calls = Calls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls[0][0], "run");  // no image check before it
  EXPECT_EQ(Pulls(), std::vector<std::string>{});
}

TEST_F(PullTest, DockerGetsTheCredentialsDirectoryAndNoTlsFlag) {
  InstallEngine("docker");
  Configure("present", "");
  ReplicaSpec spec = PullSpec("docker_pull", "missing");
  spec.container.engine = engine_dir_ + "/docker";
  spec.container.pull.auth_file = "/etc/trainyard/docker/config.json";
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0) << exit->message;
  auto calls = Calls();
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls[2], (std::vector<std::string>{"pull", "--", "localhost:5000/p/t:1"}));
  EXPECT_EQ(Pulls(), std::vector<std::string>{"localhost:5000/p/t:1 /etc/trainyard/docker"});
}

TEST_F(PullTest, AStopDuringThePullEndsItAndRunsNothing) {
  Configure("present", "");
  Configure("pull_sleep", "");
  ReplicaSpec spec = PullSpec("stop_pull", "missing");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  ASSERT_TRUE(recorder_.WaitLog("sleeping in pull"));
  executor_->Kill(spec.key, 5 * kMicrosPerSecond, "");
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->killed_by_request);
  EXPECT_EQ(exit->message, "the replica was stopped before the trainer started");
  EXPECT_EQ(ReadFile(engine_dir_ + "/signals").value(), "PULLTERM\n");
  for (const auto& call : Calls()) EXPECT_NE(call[0], "run");
  EXPECT_EQ(recorder_.RunningCalls(spec.key), 0);
  EXPECT_EQ(Leftovers(spec.work_dir), std::vector<pid_t>{});
}

TEST_F(ContainerTest, FailingContainerReportsItsStatusAndStderrAndIsRemoved) {
  Configure("run_exit", "3");
  ReplicaSpec spec = ContainerSpec("fails");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "run");
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_NE(exit->error_tail.find("container err"), std::string::npos) << exit->error_tail;
  auto line = recorder_.Find("Container exited with status 3; cleaning up.");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->severity, Severity::kError);
  auto calls = Calls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), RemoveCall("ty-fails"));
}

TEST_F(ContainerTest, EngineErrorIsALaunchFailureWithTheEnginesMessage) {
  Configure("run_exit", "125");
  ReplicaSpec spec = ContainerSpec("engine_error");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "launch");
  EXPECT_EQ(exit->exit_code, 125);
  EXPECT_EQ(exit->signal, 0);
  EXPECT_EQ(exit->message, "container err\nWARNING: careful");
  EXPECT_EQ(Calls().back(), RemoveCall("ty-engine_error"));
}

TEST_F(ContainerTest, OomKilledContainerIsReported) {
  Configure("run_exit", "137");
  Configure("oom", "true\n");
  ReplicaSpec spec = ContainerSpec("oom");
  spec.limits.memory_bytes = 64 << 20;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "run");
  EXPECT_EQ(exit->exit_code, 137);
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_TRUE(exit->oom_killed);
  auto line = recorder_.Find("The replica ran out of memory (limit 64.0 MiB) and was killed.");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->severity, Severity::kError);
  EXPECT_EQ(Calls().back(), RemoveCall("ty-oom"));
}

TEST_F(ContainerTest, EnvironmentValuesWithLineBreaksAreLeftOutWithAWarning) {
  ReplicaSpec spec = ContainerSpec("env");
  spec.env = {{"GOOD", "a b=c"}, {"BAD", "line1\nline2"}, {"#COMMENT", "x"}};
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(ReadFile(spec.work_dir + "/container.env").value(), "GOOD=a b=c\nPYTHONUNBUFFERED=1\n");
  auto bad = recorder_.Find(
      "The value of the environment variable BAD has a line break and cannot be passed to the "
      "container; it is left out.");
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->severity, Severity::kWarning);
  EXPECT_TRUE(recorder_.HasLogContaining("\"#COMMENT\" cannot be passed to the container"));
}

TEST_F(ContainerTest, KillStopsTheEngineAndRemovesTheContainer) {
  Configure("run_sleep", "");
  ReplicaSpec spec = ContainerSpec("kill");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  ASSERT_TRUE(recorder_.WaitLog("sleeping"));
  executor_->Kill(spec.key, 5 * kMicrosPerSecond, "");
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->killed_by_request);
  EXPECT_TRUE(exit->stop_requested);
  EXPECT_EQ(exit->phase, "run");
  EXPECT_EQ(exit->exit_code, 128 + SIGTERM);
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_EQ(ReadFile(engine_dir_ + "/signals").value(), "TERM\n");
  auto calls = Calls();
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls[calls.size() - 2], InspectCall("ty-kill"));
  EXPECT_EQ(calls.back(), RemoveCall("ty-kill"));
  EXPECT_TRUE(recorder_.Find("Container was terminated by SIGTERM; cleaning up.").has_value());
  EXPECT_EQ(Leftovers(spec.work_dir), std::vector<pid_t>{});
}

TEST_F(ContainerTest, KillEscalationStillRemovesTheContainer) {
  Configure("run_sleep", "");
  Configure("run_ignore_term", "");
  ReplicaSpec spec = ContainerSpec("stubborn");
  ASSERT_TRUE(executor_->Launch(spec).ok());
  ASSERT_TRUE(recorder_.WaitLog("sleeping"));
  executor_->Kill(spec.key, kMicrosPerSecond / 2, "");
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->killed_by_request);
  EXPECT_EQ(exit->signal, SIGKILL);
  auto calls = Calls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), RemoveCall("ty-stubborn"));
  EXPECT_EQ(Leftovers(spec.work_dir), std::vector<pid_t>{});
}

// A real container when podman and the example base image (examples/container/build.sh) are
// there (TY_TEST_CONTAINER_IMAGE names another image), with the runtime and ulimits this
// machine needs (docs/containers.md, "Podman on these hosts").
TEST_F(ContainerTest, RunsARealPodmanContainerAndRemovesIt) {
  const char* env_image = std::getenv("TY_TEST_CONTAINER_IMAGE");
  const std::string image = env_image != nullptr ? env_image : "localhost/trainyard-base:bookworm";
  if (::access("/usr/bin/podman", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/podman";
  const std::string conf = tmp_.path() + "/containers.conf";
  WriteText(conf,
            "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n"
            "[engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\n");
  const std::string podman = "CONTAINERS_CONF='" + conf + "' /usr/bin/podman ";
  if (std::system((podman + "image exists '" + image + "'").c_str()) != 0) {
    GTEST_SKIP() << image << " is not in podman's local storage";
  }
  ReplicaSpec spec = ContainerSpec("real");
  spec.container.engine = "/usr/bin/podman";
  spec.container.engine_env = {{"CONTAINERS_CONF", conf}};
  spec.container.image = image;
  spec.container.name = "ty-unit-" + std::to_string(::getpid()) + "-real";
  spec.container.entrypoint = std::vector<std::string>{"sh", "-c"};
  spec.container.args = {"echo out; echo err >&2; echo \"tf $TF_CONFIG\"; exit 3"};
  spec.env = {{"TF_CONFIG", R"({"task":{"type":"master","index":0}})"}};
  spec.limits.memory_bytes = 256 << 20;
  spec.limits.cpu_millis = 1500;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  auto exit = recorder_.WaitExit(spec.key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->phase, "run") << exit->message;
  EXPECT_EQ(exit->exit_code, 3) << exit->error_tail;
  EXPECT_EQ(exit->error_tail, "err");
  auto out = recorder_.Find("out");
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->severity, Severity::kInfo);
  EXPECT_TRUE(recorder_.Find(R"(tf {"task":{"type":"master","index":0}})").has_value());
  EXPECT_NE(std::system((podman + "container exists " + spec.container.name).c_str()), 0);
  EXPECT_EQ(Leftovers(spec.work_dir), std::vector<pid_t>{});
}

}  // namespace
}  // namespace trainyard::executor
