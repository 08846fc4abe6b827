#include "trainyard/executor/launcher_protocol.h"

#include <gtest/gtest.h>

#include "proc_util.h"
#include "protocol_private.h"

namespace trainyard::executor {
namespace {

using model::Severity;

TEST(SpecJsonTest, RoundTripsEveryField) {
  ReplicaSpec spec;
  spec.key = {"proj", "job_1", "3", "worker", 2};
  spec.work_dir = "/var/lib/trainyard/w";
  spec.python = "/usr/bin/python3";
  spec.packages = {"/cache/a.tar.gz", "/cache/b.whl"};
  spec.package_uris = {"gs://b/a.tar.gz", "gs://b/b.whl"};
  spec.python_module = "trainer.task";
  spec.args = {"--lr", "0.1", "--job-dir", "gs://b/out"};
  spec.env = {{"TF_CONFIG", "{\"task\":{}}"}, {"CLOUD_ML_JOB_ID", "job_1"}};
  spec.env_cache_dir = "/cache/envs";
  spec.pip_index_url = "http://index";
  spec.pip_find_links = {"/wheels"};
  spec.cwd = "/tmp";
  spec.cgroup_root = "/sys/fs/cgroup";
  spec.cgroup_name = "trainyard/proj.job_1.worker-replica-2.1";
  spec.limits.memory_bytes = int64_t{15} << 30;
  spec.limits.cpu_millis = 3500;
  auto back = SpecFromJson(SpecToJson(spec));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->key, spec.key);
  EXPECT_EQ(back->work_dir, spec.work_dir);
  EXPECT_EQ(back->python, spec.python);
  EXPECT_EQ(back->packages, spec.packages);
  EXPECT_EQ(back->package_uris, spec.package_uris);
  EXPECT_EQ(back->python_module, spec.python_module);
  EXPECT_EQ(back->args, spec.args);
  EXPECT_EQ(back->env, spec.env);
  EXPECT_EQ(back->env_cache_dir, spec.env_cache_dir);
  EXPECT_EQ(back->pip_index_url, spec.pip_index_url);
  EXPECT_EQ(back->pip_find_links, spec.pip_find_links);
  EXPECT_EQ(back->cwd, spec.cwd);
  EXPECT_EQ(back->cgroup_root, spec.cgroup_root);
  EXPECT_EQ(back->cgroup_name, spec.cgroup_name);
  EXPECT_EQ(back->limits.memory_bytes, spec.limits.memory_bytes);
  EXPECT_EQ(back->limits.cpu_millis, spec.limits.cpu_millis);
}

TEST(SpecJsonTest, WithoutCgroupFieldsMeansNoCgroupsAndNoLimits) {
  // A spec.json written before resource limits existed.
  auto spec = SpecFromJson(R"({"pythonModule": "trainer.task"})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->cgroup_root, "");
  EXPECT_EQ(spec->cgroup_name, "");
  EXPECT_EQ(spec->limits.memory_bytes, 0);
  EXPECT_EQ(spec->limits.cpu_millis, 0);
  std::string text = SpecToJson(ReplicaSpec{});
  EXPECT_NE(text.find(R"("limits":{"cpuMillis":0,"memoryBytes":0})"), std::string::npos) << text;
}

TEST(SpecJsonTest, RoundTripsTheContainer) {
  ReplicaSpec spec;
  spec.python_module = "";
  spec.env = {{"TF_CONFIG", "{\"task\":{}}"}};
  spec.container.engine = "/usr/bin/podman";
  spec.container.engine_env = {{"CONTAINERS_CONF", "/etc/ty/containers.conf"}};
  spec.container.image = "localhost/trainer:1";
  spec.container.entrypoint = std::vector<std::string>{"python", "-m", "trainer.task"};
  spec.container.args = {"--lr", "0.1"};
  spec.container.name = "ty-proj-job_1-master-0";
  spec.container.mounts = {"/data:/data:ro", "/out:/out"};
  spec.container.devices = {"/dev/nvidia0"};
  auto back = SpecFromJson(SpecToJson(spec));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const ContainerSpec& c = back->container;
  EXPECT_EQ(c.engine, spec.container.engine);
  EXPECT_EQ(c.engine_env, spec.container.engine_env);
  EXPECT_EQ(c.image, spec.container.image);
  EXPECT_EQ(c.entrypoint, spec.container.entrypoint);
  EXPECT_EQ(c.args, spec.container.args);
  EXPECT_EQ(c.name, spec.container.name);
  EXPECT_EQ(c.mounts, spec.container.mounts);
  EXPECT_EQ(c.devices, spec.container.devices);
  EXPECT_EQ(back->env, spec.env);
}

TEST(SpecJsonTest, RoundTripsTheImagePullAndLeavesItOutWhenUnset) {
  ReplicaSpec spec;
  spec.container.image = "gcr.io/p/t:1";
  EXPECT_EQ(SpecToJson(spec).find("pull"), std::string::npos);
  ImagePull& p = spec.container.pull;
  p.policy = "always";
  p.reference = "localhost:5000/p/t:1";
  p.registry = "localhost:5000";
  p.mirror = "gcr.io=localhost:5000";
  p.tls_verify = false;
  p.auth_file = "/etc/trainyard/auth.json";
  p.token = "proj/job@1.abcd";
  auto back = SpecFromJson(SpecToJson(spec));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const ImagePull& b = back->container.pull;
  EXPECT_EQ(b.policy, p.policy);
  EXPECT_EQ(b.reference, p.reference);
  EXPECT_EQ(b.registry, p.registry);
  EXPECT_EQ(b.mirror, p.mirror);
  EXPECT_FALSE(b.tls_verify);
  EXPECT_EQ(b.auth_file, p.auth_file);
  EXPECT_EQ(b.token, p.token);
  auto bad = SpecFromJson(R"({"container": {"image": "x", "pull": "always"}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("container.pull is not an object"), std::string::npos);
}

TEST(SpecJsonTest, ContainerEntrypointDistinguishesUnsetFromEmpty) {
  ReplicaSpec spec;
  spec.container.image = "img";
  std::string text = SpecToJson(spec);
  EXPECT_EQ(text.find("entrypoint"), std::string::npos) << text;
  auto unset = SpecFromJson(text);
  ASSERT_TRUE(unset.ok());
  EXPECT_FALSE(unset->container.entrypoint.has_value());

  spec.container.entrypoint = std::vector<std::string>{};
  text = SpecToJson(spec);
  EXPECT_NE(text.find(R"("entrypoint":[])"), std::string::npos) << text;
  auto empty = SpecFromJson(text);
  ASSERT_TRUE(empty.ok());
  ASSERT_TRUE(empty->container.entrypoint.has_value());
  EXPECT_TRUE(empty->container.entrypoint->empty());
}

TEST(SpecJsonTest, WithoutContainerKeyIsNotAContainerReplica) {
  std::string text = SpecToJson(ReplicaSpec{});
  EXPECT_EQ(text.find("container"), std::string::npos) << text;
  auto spec = SpecFromJson(R"({"pythonModule": "trainer.task"})");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->container.image, "");
  EXPECT_FALSE(spec->container.entrypoint.has_value());
  auto null_container = SpecFromJson(R"({"container": null})");
  ASSERT_TRUE(null_container.ok());
  EXPECT_EQ(null_container->container.image, "");
}

TEST(SpecJsonTest, RejectsMalformedJson) {
  EXPECT_FALSE(SpecFromJson("{").ok());
  EXPECT_FALSE(SpecFromJson("[]").ok());
  EXPECT_FALSE(SpecFromJson(R"({"args": "not a list"})").ok());
  EXPECT_FALSE(SpecFromJson(R"({"key": {"index": "zero"}})").ok());
  EXPECT_FALSE(SpecFromJson(R"({"limits": 5})").ok());
  EXPECT_FALSE(SpecFromJson(R"({"limits": {"memoryBytes": "1G"}})").ok());
  EXPECT_FALSE(SpecFromJson(R"({"container": "img"})").ok());
  EXPECT_FALSE(SpecFromJson(R"({"container": {"image": "i", "entrypoint": "sh"}})").ok());
  EXPECT_FALSE(SpecFromJson(R"({"container": {"image": "i", "mounts": [1]}})").ok());
}

TEST(ExitJsonTest, RoundTripsAndUsesProtocolNames) {
  ReplicaExit exit;
  exit.exit_code = 143;
  exit.signal = 15;
  exit.phase = "run";
  exit.message = "m";
  exit.error_tail = "Traceback (most recent call last):\n[...]\nValueError: x";
  std::string text = ExitToJson(exit);
  EXPECT_NE(text.find("\"exitCode\":143"), std::string::npos);
  EXPECT_NE(text.find("\"errorTail\""), std::string::npos);
  auto back = ExitFromJson(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->exit_code, 143);
  EXPECT_EQ(back->signal, 15);
  EXPECT_EQ(back->phase, "run");
  EXPECT_EQ(back->message, "m");
  EXPECT_EQ(back->error_tail, exit.error_tail);
  EXPECT_FALSE(back->killed_by_request);
  EXPECT_FALSE(back->oom_killed);
}

TEST(ExitJsonTest, RoundTripsOomKilled) {
  ReplicaExit exit;
  exit.exit_code = 137;
  exit.signal = 9;
  exit.phase = "run";
  exit.oom_killed = true;
  exit.stop_requested = true;
  std::string text = ExitToJson(exit);
  EXPECT_NE(text.find("\"oomKilled\":true"), std::string::npos) << text;
  auto back = ExitFromJson(text);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->oom_killed);
  EXPECT_TRUE(back->stop_requested);
  EXPECT_FALSE(back->stop_unrequested);
  EXPECT_EQ(text.find("stopUnrequested"), std::string::npos) << text;
  exit.stop_unrequested = true;  // a SIGTERM nobody at Trainyard asked for (Slurm)
  back = ExitFromJson(ExitToJson(exit));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->stop_unrequested);
  // Older exit.json files have no oomKilled.
  auto old = ExitFromJson(R"({"exitCode": 1, "phase": "run"})");
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->oom_killed);
  EXPECT_FALSE(old->stop_unrequested);
}

TEST(ExitJsonTest, ToleratesInvalidUtf8) {
  ReplicaExit exit;
  exit.error_tail = "bad \xff byte";
  auto back = ExitFromJson(ExitToJson(exit));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->error_tail, "bad \xEF\xBF\xBD byte");
}

TEST(ExitJsonTest, RefusesNumbersThatAreNotIntegersInRange) {
  // Found by fuzz_launcher_files: a float or out-of-range exit code was converted with a C cast.
  for (const char* text : {R"({"exitCode": 1.0e38})", R"({"exitCode": 2.5})",
                           R"({"signal": 99999999999999})", R"({"exitCode": "1"})"}) {
    auto exit = ExitFromJson(text);
    EXPECT_FALSE(exit.ok()) << text;
  }
  auto spec = SpecFromJson(R"({"key": {"index": 1e30}})");
  EXPECT_FALSE(spec.ok());
  auto fits = ExitFromJson(R"({"exitCode": -2147483648, "signal": 2147483647})");
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits->exit_code, -2147483648LL);
}

TEST(LogRecordTest, FormatsTheDocumentedShape) {
  EXPECT_EQ(FormatLogRecord(1700000000123456, Severity::kWarning, false, "hi"),
            "1700000000123456\tWARNING\tR\thi");
  EXPECT_EQ(FormatLogRecord(5, Severity::kInfo, true, "a\tb\nc\\d\re"),
            "5\tINFO\tS\ta\\tb\\nc\\\\d\\re");
}

TEST(LogRecordTest, RoundTripsEscapes) {
  const std::string msg = "tab\there\nnew \\n literal\r\\";
  auto rec = ParseLogRecord(FormatLogRecord(42, Severity::kError, true, msg));
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->ts, 42);
  EXPECT_EQ(rec->severity, Severity::kError);
  EXPECT_TRUE(rec->service);
  EXPECT_EQ(rec->message, msg);
}

TEST(LogRecordTest, KeepsEmptyMessages) {
  auto rec = ParseLogRecord(FormatLogRecord(1, Severity::kInfo, false, ""));
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->message, "");
  EXPECT_FALSE(rec->service);
}

TEST(LogRecordTest, RejectsMalformedRecords) {
  EXPECT_FALSE(ParseLogRecord("").ok());
  EXPECT_FALSE(ParseLogRecord("12\tINFO\tR").ok());
  EXPECT_FALSE(ParseLogRecord("x\tINFO\tR\tm").ok());
  EXPECT_FALSE(ParseLogRecord("12\tLOUD\tR\tm").ok());
  EXPECT_FALSE(ParseLogRecord("12\tINFO\tX\tm").ok());
}

TEST(SanitizeUtf8Test, KeepsValidTextAndReplacesInvalidBytes) {
  EXPECT_EQ(SanitizeUtf8("plain"), "plain");
  EXPECT_EQ(SanitizeUtf8("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(SanitizeUtf8("a\xFF"), "a\xEF\xBF\xBD");
  EXPECT_EQ(SanitizeUtf8("\xC3"), "\xEF\xBF\xBD");                  // truncated sequence
  EXPECT_EQ(SanitizeUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
}

TEST(PidFileTest, RoundTrips) {
  pid_t pid = 0;
  uint64_t start = 0;
  ASSERT_TRUE(ParsePidFile(FormatPidFile(1234, 98765), &pid, &start));
  EXPECT_EQ(pid, 1234);
  EXPECT_EQ(start, 98765u);
  EXPECT_FALSE(ParsePidFile("", &pid, &start));
  EXPECT_FALSE(ParsePidFile("12", &pid, &start));
  EXPECT_FALSE(ParsePidFile("x 1", &pid, &start));
  // Found by fuzz_launcher_files: a pid beyond pid_t was truncated into another process's.
  EXPECT_FALSE(ParsePidFile("12261292646 894\n", &pid, &start));
  EXPECT_FALSE(ParsePidFile("2147483648 1", &pid, &start));
  EXPECT_TRUE(ParsePidFile("2147483647 1", &pid, &start));
}

TEST(ProcTest, ReadsOwnStat) {
  auto st = ReadProcStat(::getpid());
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, ::getpid());
  EXPECT_EQ(st->ppid, ::getppid());
  EXPECT_GT(st->start_time, 0u);
  EXPECT_TRUE(ProcessAlive(::getpid(), st->start_time));
  EXPECT_FALSE(ProcessAlive(::getpid(), st->start_time + 1));
}

TEST(ShellJoinTest, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(ShellJoin({"/usr/bin/python3", "-m", "a.b", "--x=1"}), "/usr/bin/python3 -m a.b --x=1");
  EXPECT_EQ(ShellJoin({"echo", "a b", "it's", ""}), "echo 'a b' 'it'\\''s' ''");
}

TEST(MayBeRestartedTest, OnlyLossesNobodyAtTrainyardCaused) {
  ReplicaExit e;
  e.phase = "run";
  e.signal = 9;
  e.exit_code = 137;
  EXPECT_TRUE(MayBeRestarted(e));  // someone's kill -9, the node's OOM killer
  ReplicaExit lost;
  lost.phase = "lost";
  lost.stop_requested = true;  // the driver's report of a step taken with its launcher
  EXPECT_TRUE(MayBeRestarted(lost));
  ReplicaExit x = e;
  x.stop_requested = true;  // Trainyard's own stop
  EXPECT_FALSE(MayBeRestarted(x));
  x = e;
  x.killed_by_request = true;
  EXPECT_FALSE(MayBeRestarted(x));
  x = e;
  x.oom_killed = true;  // its own memory limit: it would fail the same way
  EXPECT_FALSE(MayBeRestarted(x));
  x = e;
  x.disk_full = true;
  EXPECT_FALSE(MayBeRestarted(x));
  x = e;
  x.signal = 0;
  x.exit_code = 1;  // an error of the trainer's own
  EXPECT_FALSE(MayBeRestarted(x));
  x.exit_code = 0;
  EXPECT_FALSE(MayBeRestarted(x));
  x = e;
  x.phase = "launch";
  EXPECT_FALSE(MayBeRestarted(x));
  x.phase = "install";
  EXPECT_FALSE(MayBeRestarted(x));
}

}  // namespace
}  // namespace trainyard::executor
