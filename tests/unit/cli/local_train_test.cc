// `local train`: the TF_CONFIG/PyTorch environment builders, the primary-name probe, the
// process-group runner, and real `local train --distributed` runs with a tiny Python trainer.
#include "local_train.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "commands.h"
#include "packaging.h"
#include "process.h"
#include "trainyard/core/util.h"

#ifndef TRAINYARD_CLI_BINARY
#error "TRAINYARD_CLI_BINARY must name the trainyard executable"
#endif

namespace trainyard::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr char kPython[] = "/usr/bin/python3";
const std::vector<std::string> kTorchVars = {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK",
                                             "LOCAL_RANK"};

std::map<std::string, std::optional<std::string>> EnvOf(const LocalTask& t) {
  std::map<std::string, std::optional<std::string>> m;
  for (const auto& [k, v] : t.env) m[k] = v;
  return m;
}

json TfConfigOf(const LocalTask& t) { return json::parse(*EnvOf(t).at("TF_CONFIG")); }

bool WaitFor(const std::function<bool()>& done, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// True when `pid` no longer exists at all: it exited and was reaped.
bool Reaped(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// True when `pid` was reaped or is a zombie: for grandchildren, which are reparented to a PID 1
// that may be slow to reap them.
bool ProcessGone(pid_t pid) {
  if (Reaped(pid)) return true;
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return true;
  size_t paren = stat->rfind(')');
  return paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] == 'Z';
}

// --- builders ------------------------------------------------------------------------------

TEST(LocalTrainTfConfigTest, MatchesGcloudsJsonDumps) {
  EXPECT_EQ(LocalTrainTfConfig("trainer.task", {"--x", "1", "--job-dir", "/tmp/o"}),
            "{\"job\": {\"job_name\": \"trainer.task\", \"args\": [\"--x\", \"1\", \"--job-dir\", "
            "\"/tmp/o\"]}, \"task\": {}, \"cluster\": {}, \"environment\": \"cloud\"}");
  EXPECT_EQ(LocalTrainTfConfig("m", {}),
            "{\"job\": {\"job_name\": \"m\", \"args\": []}, \"task\": {}, \"cluster\": {}, "
            "\"environment\": \"cloud\"}");
  // json.dumps escapes non-ASCII (ensure_ascii) and quotes.
  EXPECT_EQ(LocalTrainTfConfig("m", {"caf\xc3\xa9 \"q\""}),
            "{\"job\": {\"job_name\": \"m\", \"args\": [\"caf\\u00e9 \\\"q\\\"\"]}, \"task\": {}, "
            "\"cluster\": {}, \"environment\": \"cloud\"}");
}

TEST(DistributedLocalTasksTest, DefaultsMatchGcloud) {
  DistributedLayout layout;
  EXPECT_EQ(layout.parameter_servers, 2);
  EXPECT_EQ(layout.workers, 2);
  EXPECT_EQ(layout.evaluators, 0);
  EXPECT_EQ(layout.start_port, 27182);
  auto tasks = DistributedLocalTasks("trainer.task", {"--a", "1"}, layout);
  ASSERT_EQ(tasks.size(), 5u);
  std::vector<std::pair<std::string, int64_t>> order;
  for (const auto& t : tasks) order.emplace_back(t.type, t.index);
  EXPECT_EQ(order, (std::vector<std::pair<std::string, int64_t>>{
                       {"ps", 0}, {"ps", 1}, {"worker", 0}, {"worker", 1}, {"chief", 0}}));
  // Byte for byte what gcloud's json.dumps gives, key order included.
  EXPECT_EQ(*EnvOf(tasks[3]).at("TF_CONFIG"),
            "{\"job\": {\"job_name\": \"trainer.task\", \"args\": [\"--a\", \"1\"]}, \"task\": "
            "{\"type\": \"worker\", \"index\": 1}, \"cluster\": {\"chief\": "
            "[\"localhost:27182\"], \"ps\": [\"localhost:27183\", \"localhost:27184\"], "
            "\"worker\": [\"localhost:27185\", \"localhost:27186\"]}, \"environment\": \"cloud\"}");
  for (const auto& t : tasks) {
    json c = TfConfigOf(t);
    EXPECT_EQ(c["cluster"], TfConfigOf(tasks[0])["cluster"]) << t.type;
    EXPECT_EQ(c["task"], (json{{"type", t.type}, {"index", t.index}}));
    EXPECT_EQ(c["job"], (json{{"job_name", "trainer.task"}, {"args", {"--a", "1"}}}));
    EXPECT_EQ(c["environment"], "cloud");
  }
}

TEST(DistributedLocalTasksTest, PortsFollowPrimaryThenPsThenWorkers) {
  DistributedLayout layout;
  layout.parameter_servers = 1;
  layout.workers = 3;
  layout.start_port = 4000;
  json cluster = TfConfigOf(DistributedLocalTasks("m", {}, layout).back())["cluster"];
  EXPECT_EQ(cluster, (json{{"chief", {"localhost:4000"}},
                           {"ps", {"localhost:4001"}},
                           {"worker", {"localhost:4002", "localhost:4003", "localhost:4004"}}}));
  layout.parameter_servers = 0;
  layout.workers = 0;
  cluster = TfConfigOf(DistributedLocalTasks("m", {}, layout).back())["cluster"];
  EXPECT_EQ(cluster.dump(), R"({"chief":["localhost:4000"],"ps":[],"worker":[]})");
}

TEST(DistributedLocalTasksTest, EvaluatorsRunButAreNotInTheCluster) {
  DistributedLayout layout;
  layout.parameter_servers = 1;
  layout.workers = 1;
  layout.evaluators = 2;
  auto tasks = DistributedLocalTasks("m", {}, layout);
  ASSERT_EQ(tasks.size(), 5u);
  EXPECT_EQ(tasks[2].type, "evaluator");
  EXPECT_EQ(tasks[2].index, 0);
  EXPECT_EQ(tasks[3].type, "evaluator");
  EXPECT_EQ(tasks[3].index, 1);
  EXPECT_EQ(tasks[4].type, "chief");
  for (const auto& t : tasks) {
    json cluster = TfConfigOf(t)["cluster"];
    EXPECT_FALSE(cluster.contains("evaluator"));
    EXPECT_EQ(cluster.size(), 3u);
  }
  EXPECT_EQ(TfConfigOf(tasks[3])["task"], (json{{"type", "evaluator"}, {"index", 1}}));
}

TEST(DistributedLocalTasksTest, PrimaryAndWorkersGetPyTorchRanks) {
  DistributedLayout layout;
  layout.parameter_servers = 1;
  layout.workers = 2;
  layout.evaluators = 1;
  layout.start_port = 5000;
  layout.primary = "master";
  auto tasks = DistributedLocalTasks("m", {}, layout);
  ASSERT_EQ(tasks.size(), 5u);
  std::map<std::string, std::string> rank_of;  // "type-index" -> RANK
  for (const auto& t : tasks) {
    auto env = EnvOf(t);
    std::string name = t.type + "-" + std::to_string(t.index);
    for (const auto& var : kTorchVars) ASSERT_TRUE(env.count(var)) << name << " " << var;
    if (t.type == "ps" || t.type == "evaluator") {
      // Removed, not just left out: a RANK inherited from the shell must not reach them.
      for (const auto& var : kTorchVars) EXPECT_FALSE(env[var].has_value()) << name << " " << var;
      continue;
    }
    EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1") << name;
    EXPECT_EQ(env["MASTER_PORT"], "5000") << name;
    EXPECT_EQ(env["WORLD_SIZE"], "3") << name;
    EXPECT_EQ(env["LOCAL_RANK"], "0") << name;
    rank_of[name] = env["RANK"].value_or("");
  }
  EXPECT_EQ(rank_of, (std::map<std::string, std::string>{
                         {"master-0", "0"}, {"worker-0", "1"}, {"worker-1", "2"}}));
}

TEST(DistributedLocalTasksTest, PrimaryNameKeysTheClusterAndTheTask) {
  DistributedLayout layout;
  layout.primary = "master";
  auto tasks = DistributedLocalTasks("m", {}, layout);
  json c = TfConfigOf(tasks.back());
  EXPECT_EQ(c["task"], (json{{"type", "master"}, {"index", 0}}));
  EXPECT_EQ(c["cluster"]["master"], json({"localhost:27182"}));
  EXPECT_FALSE(c["cluster"].contains("chief"));
  // The primary comes first in the cluster, as in gcloud's dict.
  EXPECT_NE(EnvOf(tasks.back()).at("TF_CONFIG")->find("\"cluster\": {\"master\": ["),
            std::string::npos);
}

TEST(DistributedLayoutTest, Validation) {
  DistributedLayout ok;
  EXPECT_TRUE(ValidateDistributedLayout(ok).ok());
  DistributedLayout l = ok;
  l.workers = -1;
  EXPECT_EQ(ValidateDistributedLayout(l).message(),
            "argument --worker-count: Value must be greater than or equal to 0; received: -1");
  l = ok;
  l.parameter_servers = -2;
  EXPECT_NE(ValidateDistributedLayout(l).message().find("--parameter-server-count"),
            std::string::npos);
  l = ok;
  l.evaluators = -1;
  EXPECT_NE(ValidateDistributedLayout(l).message().find("--evaluator-count"), std::string::npos);
  l = ok;
  l.start_port = 0;
  EXPECT_FALSE(ValidateDistributedLayout(l).ok());
  l.start_port = 65536;
  EXPECT_FALSE(ValidateDistributedLayout(l).ok());
  l = ok;
  l.start_port = 65531;  // 65531 .. 65535 for 2 ps + 2 workers + primary: just fits
  EXPECT_TRUE(ValidateDistributedLayout(l).ok());
  l.start_port = 65532;
  EXPECT_FALSE(ValidateDistributedLayout(l).ok());
  l = ok;
  l.workers = INT64_MAX;
  EXPECT_FALSE(ValidateDistributedLayout(l).ok());
}

TEST(PrimaryTaskNameTest, FollowsTheTensorFlowMajorVersion) {
  std::string warning;
  EXPECT_EQ(PrimaryTaskName(true, "1.15.5\n", &warning), "master");
  EXPECT_EQ(PrimaryTaskName(true, "2.13.0\n", &warning), "chief");
  EXPECT_EQ(warning, "");
  EXPECT_EQ(PrimaryTaskName(false, "", &warning), "chief");
  EXPECT_NE(warning.find("Cannot import tensorflow"), std::string::npos);
  warning.clear();
  EXPECT_EQ(PrimaryTaskName(true, "3.0.0\n", &warning), "chief");
  EXPECT_NE(warning.find("Unexpected tensorflow version 3.0.0,"), std::string::npos) << warning;
}

TEST(PrimaryTaskNameTest, ProbeRunsThePython) {
  TempDir tmp;
  auto fake_python = [&](const std::string& name, const std::string& body) {
    std::string path = tmp.path() + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(path, "#!/bin/sh\n" + body).ok());
    fs::permissions(path, fs::perms::owner_all);
    return path;
  };
  std::string warning;
  // stderr is not part of the version: the probe reads stdout only, like gcloud.
  EXPECT_EQ(ProbePrimaryTaskName(fake_python("tf1", "echo noise >&2\necho 1.15.2\n"), tmp.path(),
                                 &warning),
            "master");
  EXPECT_EQ(ProbePrimaryTaskName(fake_python("tf2", "echo 2.11.0\n"), tmp.path(), &warning),
            "chief");
  EXPECT_EQ(warning, "");
  EXPECT_EQ(ProbePrimaryTaskName(fake_python("notf", "exit 1\n"), tmp.path(), &warning), "chief");
  EXPECT_NE(warning.find("Cannot import tensorflow"), std::string::npos);
  warning.clear();
  EXPECT_EQ(ProbePrimaryTaskName(tmp.path() + "/missing", tmp.path(), &warning), "chief");
  EXPECT_NE(warning.find("Cannot import tensorflow"), std::string::npos);
}

// --- RunWithHelpers -----------------------------------------------------------------------

ChildSpec PythonChild(const std::string& code, std::vector<EnvChange> env = {}) {
  return ChildSpec{{kPython, "-c", code}, "", std::move(env)};
}

// A helper that writes its pid (and with `child` the pid of a process it starts) and then
// runs until it is killed, optionally ignoring SIGTERM.
std::string HelperCode(const std::string& out, bool ignore_term, bool child) {
  return "import os, signal, subprocess, sys, time\n" +
         std::string(ignore_term ? "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" : "") +
         "kid = subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: "
         "time.sleep(1)']).pid if " +
         (child ? "True" : "False") + " else 0\n" + "open('" + out +
         ".tmp', 'w').write('%d %d %d' % (os.getpid(), os.getpgid(0), kid))\n" + "os.rename('" +
         out + ".tmp', '" + out + "')\n" + "while True: time.sleep(1)\n";
}

struct HelperRecord {
  pid_t pid = 0;
  pid_t pgid = 0;
  pid_t child = 0;
};

HelperRecord ReadRecord(const std::string& path) {
  HelperRecord r;
  auto text = ReadFile(path);
  if (text.ok()) {
    std::istringstream in(*text);
    in >> r.pid >> r.pgid >> r.child;
  }
  return r;
}

TEST(RunWithHelpersTest, StopsHelpersTheirChildrenAndStubbornOnesWhenThePrimaryExits) {
  TempDir tmp;
  std::string a = tmp.path() + "/a", b = tmp.path() + "/b";
  // The primary waits for both helpers to be up, then exits 7.
  std::string primary = "import os, sys, time\nwhile not (os.path.exists('" + a +
                        "') and os.path.exists('" + b +
                        "')): time.sleep(0.01)\n"
                        "sys.exit(int(os.environ['CODE']))\n";
  auto start = std::chrono::steady_clock::now();
  auto rc = RunWithHelpers({PythonChild(HelperCode(a, /*ignore_term=*/false, /*child=*/true)),
                            PythonChild(HelperCode(b, /*ignore_term=*/true, /*child=*/false))},
                           PythonChild(primary, {{"CODE", "7"}, {"UNSET_ME", std::nullopt}}),
                           std::chrono::milliseconds(300));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  EXPECT_EQ(*rc, 7);
  HelperRecord ra = ReadRecord(a), rb = ReadRecord(b);
  ASSERT_GT(ra.pid, 0);
  ASSERT_GT(rb.pid, 0);
  EXPECT_EQ(ra.pgid, ra.pid);  // own process group
  EXPECT_EQ(rb.pgid, rb.pid);
  EXPECT_NE(ra.pgid, getpgrp());
  // Direct children are reaped before RunWithHelpers returns.
  EXPECT_TRUE(Reaped(ra.pid));
  EXPECT_TRUE(Reaped(rb.pid));  // ignored SIGTERM: needed the SIGKILL after the grace
  EXPECT_GE(took, std::chrono::milliseconds(300));
  // The helper's own child was in its group and went with it.
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(ra.child); }, std::chrono::seconds(10)));
  // Signal dispositions are restored.
  struct sigaction sa {};
  sigaction(SIGTERM, nullptr, &sa);
  EXPECT_EQ(sa.sa_handler, SIG_DFL);
}

TEST(RunWithHelpersTest, ReportsAProgramThatCannotStartAndStopsTheOthers) {
  TempDir tmp;
  std::string a = tmp.path() + "/a";
  auto rc = RunWithHelpers({PythonChild(HelperCode(a, false, false))},
                           ChildSpec{{tmp.path() + "/no-such-python"}, "", {}},
                           std::chrono::milliseconds(2000));
  ASSERT_FALSE(rc.ok());
  EXPECT_NE(rc.status().message().find("cannot run " + tmp.path() + "/no-such-python"),
            std::string::npos)
      << rc.status().message();
  // The helper may not have written its file yet when it was stopped; if it did, it is gone.
  HelperRecord r = ReadRecord(a);
  if (r.pid > 0) {
    EXPECT_TRUE(Reaped(r.pid));
  }
  auto bad_cwd = RunWithHelpers({}, ChildSpec{{kPython, "-c", "pass"}, tmp.path() + "/nope", {}},
                                std::chrono::milliseconds(100));
  ASSERT_FALSE(bad_cwd.ok());
  EXPECT_NE(bad_cwd.status().message().find("cannot change directory"), std::string::npos);
}

// --- `trainyard local train` ---------------------------------------------------------------

// A trainer that records what it got in OUT/<type>-<index>.json. Parameter servers and
// evaluators run until killed (evaluator 0 also starts a child of its own); workers exit at
// once; the primary waits until --expect files exist, then exits 3 (or with --hang, runs on).
constexpr char kTrainer[] = R"PY(
import json, os, subprocess, sys, time

def arg(name):
    return sys.argv[sys.argv.index(name) + 1]

out = arg("--out")
cfg = json.loads(os.environ["TF_CONFIG"])
task = cfg["task"]
primary = task["type"] in ("chief", "master")
kid = 0
if task["type"] == "evaluator":
    kid = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"]).pid
record = {
    "pid": os.getpid(), "pgid": os.getpgid(0), "kid": kid, "cwd": os.getcwd(),
    "tf_config": cfg, "argv": sys.argv[1:],
    "torch": {k: os.environ.get(k) for k in
              ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK"]},
}
path = os.path.join(out, "%s-%d.json" % (task["type"], task["index"]))
with open(path + ".tmp", "w") as f:
    json.dump(record, f)
os.rename(path + ".tmp", path)
if task["type"] == "worker":
    sys.exit(0)
if primary and "--hang" not in sys.argv:
    expect = int(arg("--expect"))
    while len([n for n in os.listdir(out) if n.endswith(".json")]) < expect:
        time.sleep(0.01)
    sys.exit(3)
while True:
    time.sleep(1)
)PY";

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

class LocalTrainRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TRAINYARD_PYTHON", kPython, 1);
    setenv("RANK", "99", 1);  // must not leak into parameter servers or evaluators
    ASSERT_FALSE(tmp_.path().empty());
    pkg_ = tmp_.path() + "/src/trainer";
    out_ = tmp_.path() + "/out";
    fs::create_directories(pkg_);
    fs::create_directories(out_);
    ASSERT_TRUE(WriteFileAtomic(pkg_ + "/__init__.py", "").ok());
    ASSERT_TRUE(WriteFileAtomic(pkg_ + "/task.py", kTrainer).ok());
    std::string warning;
    primary_ = ProbePrimaryTaskName(kPython, tmp_.path() + "/src", &warning);
  }
  void TearDown() override {
    unsetenv("TRAINYARD_PYTHON");
    unsetenv("RANK");
  }

  std::vector<std::string> Argv(int port, const std::vector<std::string>& trainer_args) {
    std::vector<std::string> argv = {"trainyard",
                                     "local",
                                     "train",
                                     "--module-name",
                                     "trainer.task",
                                     "--package-path",
                                     pkg_,
                                     "--distributed",
                                     "--worker-count",
                                     "2",
                                     "--parameter-server-count",
                                     "1",
                                     "--evaluator-count",
                                     "1",
                                     "--start-port",
                                     std::to_string(port),
                                     "--"};
    argv.insert(argv.end(), trainer_args.begin(), trainer_args.end());
    return argv;
  }

  json Record(const std::string& name) {
    auto text = ReadFile(out_ + "/" + name + ".json");
    return text.ok() ? json::parse(*text) : json();
  }

  std::vector<std::string> Names() const {
    return {"ps-0", "worker-0", "worker-1", "evaluator-0", primary_ + "-0"};
  }

  TempDir tmp_;
  std::string pkg_, out_, primary_;
};

TEST_F(LocalTrainRunTest, RunsEveryTaskAndExitsWithThePrimarysStatus) {
  int port = FreePort();
  ASSERT_GT(port, 0);
  std::vector<std::string> trainer_args = {"--out", out_, "--expect", "5"};
  std::ostringstream out, err;
  int rc = RunCli(Argv(port, trainer_args), out, err, false);
  EXPECT_EQ(rc, 3) << err.str();
  if (primary_ == "chief") {
    EXPECT_NE(err.str().find("Cannot import tensorflow"), std::string::npos);
  }

  auto addr = [&](int offset) { return "localhost:" + std::to_string(port + offset); };
  json cluster = {{primary_, {addr(0)}}, {"ps", {addr(1)}}, {"worker", {addr(2), addr(3)}}};
  json job = {{"job_name", "trainer.task"}, {"args", trainer_args}};
  std::vector<pid_t> pids;
  for (const std::string& name : Names()) {
    SCOPED_TRACE(name);
    json r = Record(name);
    ASSERT_TRUE(r.is_object()) << "no record from " << name;
    std::string type = name.substr(0, name.rfind('-'));
    int index = std::stoi(name.substr(name.rfind('-') + 1));
    EXPECT_EQ(r["tf_config"]["task"], (json{{"type", type}, {"index", index}}));
    EXPECT_EQ(r["tf_config"]["cluster"], cluster);
    EXPECT_EQ(r["tf_config"]["job"], job);
    EXPECT_EQ(r["tf_config"]["environment"], "cloud");
    EXPECT_EQ(r["argv"], json(trainer_args));
    EXPECT_EQ(r["cwd"], fs::path(pkg_).parent_path().string());
    json torch = r["torch"];
    if (type == "ps" || type == "evaluator") {
      EXPECT_EQ(torch, (json{{"MASTER_ADDR", nullptr},
                             {"MASTER_PORT", nullptr},
                             {"WORLD_SIZE", nullptr},
                             {"RANK", nullptr},
                             {"LOCAL_RANK", nullptr}}));
    } else {
      std::string rank = type == "worker" ? std::to_string(index + 1) : "0";
      EXPECT_EQ(torch, (json{{"MASTER_ADDR", "127.0.0.1"},
                             {"MASTER_PORT", std::to_string(port)},
                             {"WORLD_SIZE", "3"},
                             {"RANK", rank},
                             {"LOCAL_RANK", "0"}}));
    }
    pid_t pid = r["pid"].get<pid_t>();
    pid_t pgid = r["pgid"].get<pid_t>();
    // Helpers lead groups of their own; the primary stays in the foreground group.
    EXPECT_EQ(pgid, type == primary_ ? getpgrp() : pid);
    pids.push_back(pid);
  }
  // Nothing is left: every process was reaped before RunCli returned.
  for (pid_t pid : pids) EXPECT_TRUE(Reaped(pid)) << pid;
  pid_t kid = Record("evaluator-0")["kid"].get<pid_t>();
  ASSERT_GT(kid, 0);
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(kid); }, std::chrono::seconds(10)));
}

// Runs the real executable, as a shell would; returns its pid. `own_group` puts it in a new
// process group, the way a shell starts a job, so the test can send Ctrl-C to the whole group.
pid_t StartCli(const std::vector<std::string>& argv, bool own_group) {
  std::vector<std::string> args = argv;
  args[0] = TRAINYARD_CLI_BINARY;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    if (own_group) setpgid(0, 0);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  if (own_group && pid > 0) setpgid(pid, pid);
  return pid;
}

class LocalTrainSignalTest : public LocalTrainRunTest,
                             public ::testing::WithParamInterface<bool> {};

// false: SIGTERM to the trainyard process only; true: SIGINT to its whole process group, as
// Ctrl-C in a terminal does (helpers, in groups of their own, rely on trainyard to stop them).
TEST_P(LocalTrainSignalTest, StopsEveryProcess) {
  bool ctrl_c = GetParam();
  int port = FreePort();
  ASSERT_GT(port, 0);
  pid_t cli = StartCli(Argv(port, {"--out", out_, "--hang"}), /*own_group=*/ctrl_c);
  ASSERT_GT(cli, 0);
  bool all_up = WaitFor(
      [&] {
        for (const auto& name : Names()) {
          if (!fs::exists(out_ + "/" + name + ".json")) return false;
        }
        return true;
      },
      std::chrono::seconds(60));
  if (ctrl_c) {
    kill(-cli, SIGINT);
  } else {
    kill(cli, SIGTERM);
  }
  int status = 0;
  bool exited =
      WaitFor([&] { return waitpid(cli, &status, WNOHANG) == cli; }, std::chrono::seconds(30));
  if (!exited) {  // do not leave the run behind for the next test
    kill(cli, SIGKILL);
    waitpid(cli, &status, 0);
    for (const auto& name : Names()) {
      json r = Record(name);
      if (!r.is_object()) continue;
      pid_t pid = r["pid"].get<pid_t>();
      kill(r["pgid"].get<pid_t>() == pid ? -pid : pid, SIGKILL);  // never the test's own group
    }
  }
  ASSERT_TRUE(exited) << "trainyard did not stop";
  ASSERT_TRUE(all_up);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + (ctrl_c ? SIGINT : SIGTERM));
  for (const auto& name : Names()) {
    if (name.rfind("worker", 0) == 0) continue;  // exited by themselves
    pid_t pid = Record(name)["pid"].get<pid_t>();
    EXPECT_TRUE(Reaped(pid)) << name << " " << pid;
  }
  pid_t kid = Record("evaluator-0")["kid"].get<pid_t>();
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(kid); }, std::chrono::seconds(10)));
}

INSTANTIATE_TEST_SUITE_P(SigtermOrCtrlC, LocalTrainSignalTest, ::testing::Bool());

TEST_F(LocalTrainRunTest, CountsWithoutDistributedOnlyWarn) {
  // Without --distributed the trainer replaces trainyard, so run the executable.
  std::string marker = out_ + "/single";
  ASSERT_TRUE(WriteFileAtomic(pkg_ + "/single.py", "import os\nopen('" + marker +
                                                       "', 'w').write(os.environ['TF_CONFIG'])\n")
                  .ok());
  auto r = RunCaptured(
      {TRAINYARD_CLI_BINARY, "local", "train", "--module-name", "trainer.single", "--package-path",
       pkg_, "--worker-count", "3", "--parameter-server-count", "0", "--evaluator-count", "1"},
      "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->output;
  EXPECT_NE(r->output.find("WARNING: --worker-count is ignored if --distributed is not provided.\n"
                           "Did you mean to run distributed training?\n"),
            std::string::npos)
      << r->output;
  EXPECT_NE(r->output.find("WARNING: --evaluator-count is ignored"), std::string::npos);
  EXPECT_EQ(r->output.find("--parameter-server-count"), std::string::npos);  // 0: like gcloud
  auto tf_config = ReadFile(marker);
  ASSERT_TRUE(tf_config.ok());
  EXPECT_EQ(*tf_config, LocalTrainTfConfig("trainer.single", {}));
}

// Issue 16: counts never given are not warned about, and `import hypertune` works as on the
// service (the module the daemon gives replicas), reporting to CLOUD_ML_HP_METRIC_FILE.
TEST_F(LocalTrainRunTest, NoSpuriousWarningsAndHypertuneReports) {
  const std::string metrics = out_ + "/hp/output.metrics";
  ASSERT_TRUE(WriteFileAtomic(pkg_ + "/tuned.py",
                              "import hypertune\n"
                              "hypertune.HyperTune().report_hyperparameter_tuning_metric(\n"
                              "    hyperparameter_metric_tag='accuracy', metric_value=0.5,\n"
                              "    global_step=7)\n")
                  .ok());
  const std::string cache = out_ + "/cache";
  auto r = RunCaptured({"/usr/bin/env", "CLOUD_ML_HP_METRIC_FILE=" + metrics,
                        "XDG_CACHE_HOME=" + cache, "PYTHONPATH=/nonexistent", TRAINYARD_CLI_BINARY,
                        "local", "train", "--module-name", "trainer.tuned", "--package-path", pkg_},
                       "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->output;
  EXPECT_EQ(r->output.find("WARNING"), std::string::npos) << r->output;
  auto file = ReadFile(metrics);
  ASSERT_TRUE(file.ok()) << r->output;
  auto record = nlohmann::json::parse(*file);
  EXPECT_EQ(record["accuracy"], "0.5");
  EXPECT_EQ(record["global_step"], "7");
  EXPECT_TRUE(fs::exists(cache + "/trainyard/python/hypertune/__init__.py"));
}

TEST_F(LocalTrainRunTest, BadCountsAreErrors) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"trainyard", "local", "train", "--module-name", "m", "--worker-count", "x"},
                   out, err, false),
            1);
  EXPECT_EQ(err.str(),
            "ERROR: (trainyard.local.train) argument --worker-count: invalid int value: 'x'\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(RunCli({"trainyard", "local", "train", "--module-name", "m", "--package-path", pkg_,
                    "--distributed", "--parameter-server-count", "-1"},
                   out2, err2, false),
            1);
  EXPECT_NE(err2.str().find("argument --parameter-server-count: Value must be greater than or "
                            "equal to 0; received: -1"),
            std::string::npos)
      << err2.str();
}

}  // namespace
}  // namespace trainyard::cli
