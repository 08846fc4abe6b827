// `trainyard jobs logs` and `jobs stream-logs` against the fake daemon (docs/cli.md).
#include "log_commands.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "fake_daemon.h"

namespace trainyard::cli {
namespace {

using json = nlohmann::json;
using trainyard::testing::FakeDaemon;

struct CliResult {
  int rc = -1;
  std::string out;
  std::string err;
};

class LogCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC0", 1);
    tzset();
    daemon_.PutJob("p",
                   {{"jobId", "j"}, {"state", "SUCCEEDED"}, {"endTime", "2026-11-21T11:00:00Z"}});
    // Stored out of time order: the worker's batch arrives after the master's later lines.
    daemon_.AddLog("j", "INFO", "master-replica-0", "m2", "", "2026-11-21T10:00:02.000000Z");
    daemon_.AddLog("j", "WARNING", "master-replica-0", "m4", "", "2026-11-21T10:00:04.000000Z");
    daemon_.AddLog("j", "ERROR", "worker-replica-0", "w1\nsecond line", "7",
                   "2026-11-21T10:00:01.000000Z");
    daemon_.AddLog("j", "DEBUG", "worker-replica-0", "w3", "7", "2026-11-21T10:00:03.000000Z");
  }
  void TearDown() override {
    unsetenv("TZ");
    tzset();
  }

  CliResult Run(std::vector<std::string> args) {
    std::vector<std::string> argv = {"trainyard", "--endpoint", daemon_.endpoint(), "--project",
                                     "p"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::ostringstream out, err;
    CliResult r;
    r.rc = RunCli(argv, out, err, /*err_is_tty=*/false);
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  FakeDaemon daemon_;
};

TEST_F(LogCommandsTest, LogsListsEveryLineInTimeOrder) {
  CliResult r = Run({"jobs", "logs", "j"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "ERROR\t2026-11-21 10:00:01 +0000\tworker-replica-0\t7\tw1\n"
            "ERROR\t2026-11-21 10:00:01 +0000\tworker-replica-0\t7\tsecond line\n"
            "INFO\t2026-11-21 10:00:02 +0000\tmaster-replica-0\t\tm2\n"
            "DEBUG\t2026-11-21 10:00:03 +0000\tworker-replica-0\t7\tw3\n"
            "WARNING\t2026-11-21 10:00:04 +0000\tmaster-replica-0\t\tm4\n");
  // Also under `ai-platform`.
  EXPECT_EQ(Run({"ai-platform", "jobs", "logs", "j"}).out, r.out);
}

TEST_F(LogCommandsTest, TailIsTheNewestLinesOldestFirst) {
  CliResult r = Run({"jobs", "logs", "j", "--tail", "2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "DEBUG\t2026-11-21 10:00:03 +0000\tworker-replica-0\t7\tw3\n"
            "WARNING\t2026-11-21 10:00:04 +0000\tmaster-replica-0\t\tm4\n");
  EXPECT_NE(daemon_.Requests().back().path.find("orderBy=timestamp desc"), std::string::npos);
  EXPECT_EQ(Run({"jobs", "logs", "j", "--tail", "100"}).out, Run({"jobs", "logs", "j"}).out);
}

TEST_F(LogCommandsTest, FiltersAreSentToTheDaemon) {
  CliResult r = Run({"jobs", "logs", "j", "--severity", "warning"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "ERROR\t2026-11-21 10:00:01 +0000\tworker-replica-0\t7\tw1\n"
            "ERROR\t2026-11-21 10:00:01 +0000\tworker-replica-0\t7\tsecond line\n"
            "WARNING\t2026-11-21 10:00:04 +0000\tmaster-replica-0\t\tm4\n");
  r = Run({"jobs", "logs", "j", "--trial", "7", "--task-name", "worker-replica-0",
           "--allow-multiline-logs"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "ERROR\t2026-11-21 10:00:01 +0000\tworker-replica-0\t7\tw1\nsecond line\n"
            "DEBUG\t2026-11-21 10:00:03 +0000\tworker-replica-0\t7\tw3\n");
  r = Run({"jobs", "logs", "j", "--since", "2026-11-21T10:00:03Z"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "DEBUG\t2026-11-21 10:00:03 +0000\tworker-replica-0\t7\tw3\n"
            "WARNING\t2026-11-21 10:00:04 +0000\tmaster-replica-0\t\tm4\n");
  EXPECT_NE(daemon_.Requests().back().path.find("startTime=2026-11-21T10:00:03.000000Z"),
            std::string::npos)
      << daemon_.Requests().back().path;
}

TEST_F(LogCommandsTest, JsonFormatPrintsTheEntries) {
  CliResult r = Run({"jobs", "logs", "j", "--format", "json", "--tail", "2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  json entries = json::parse(r.out);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0]["jsonPayload"]["message"], "w3");
  EXPECT_EQ(entries[1]["severity"], "WARNING");
  EXPECT_EQ(
      json::parse(Run({"jobs", "logs", "j", "--severity", "CRITICAL", "--format", "json"}).out),
      json::array());
}

TEST_F(LogCommandsTest, BadFlagsAreRefusedNamingTheFlag) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--tail", "0"},
                                                                {"--tail", "x"},
                                                                {"--since", "yesterday"},
                                                                {"--since", "10y"},
                                                                {"--severity", "LOUD"},
                                                                {"--format", "yaml"}}) {
    std::vector<std::string> argv = {"jobs", "logs", "j"};
    argv.insert(argv.end(), args.begin(), args.end());
    CliResult r = Run(argv);
    EXPECT_EQ(r.rc, 1) << args[0];
    EXPECT_NE(r.err.find("argument " + args[0]), std::string::npos) << r.err;
  }
  CliResult missing = Run({"jobs", "logs", "nope"});
  EXPECT_EQ(missing.rc, 1);
}

TEST(ParseSinceTest, RelativeAndAbsoluteTimes) {
  const Timestamp now = 1'800'000'000'000'000;
  EXPECT_EQ(*ParseSince("30s", now), now - 30 * kMicrosPerSecond);
  EXPECT_EQ(*ParseSince("10m", now), now - 600 * kMicrosPerSecond);
  EXPECT_EQ(*ParseSince("1h30m", now), now - 5400 * kMicrosPerSecond);
  EXPECT_EQ(*ParseSince("2d", now), now - 2 * 86400 * kMicrosPerSecond);
  EXPECT_EQ(*ParseSince("2024-01-01T12:00:00Z", now), *ParseRfc3339("2024-01-01T12:00:00Z"));
  for (const char* bad : {"", "10", "m", "10x", "-5m", "1h30"}) {
    EXPECT_FALSE(ParseSince(bad, now).ok()) << bad;
  }
}

TEST_F(LogCommandsTest, StreamLogsPrintsEveryLineOnceThroughADaemonRestart) {
  daemon_.PutJob("p", {{"jobId", "r"}, {"state", "RUNNING"}});
  daemon_.AddLog("r", "INFO", "master-replica-0", "listed 5", "", "2026-11-21T10:00:05.000000Z");
  daemon_.AddLog("r", "INFO", "worker-replica-0", "listed 1", "", "2026-11-21T10:00:01.000000Z");
  // After the listing and one follow read the daemon is away for three requests; meanwhile a
  // worker line older than the listed ones is stored. The job ends after two more reads.
  daemon_.FailLogRequests(
      2, 3,
      json{{"timestamp", "2026-11-21T10:00:02.000000Z"},
           {"severity", "INFO"},
           {"resource",
            {{"type", "ml_job"}, {"labels", {{"job_id", "r"}, {"task_name", "worker-replica-0"}}}}},
           {"jsonPayload", {{"message", "late 2"}}}});
  daemon_.EndJobAfterLogReads("p", "r", 3, "SUCCEEDED");
  CliResult r = Run({"jobs", "stream-logs", "r", "--polling-interval", "0.01"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "INFO\t2026-11-21 10:00:01 +0000\tworker-replica-0\t\tlisted 1\n"
            "INFO\t2026-11-21 10:00:05 +0000\tmaster-replica-0\t\tlisted 5\n"
            "INFO\t2026-11-21 10:00:02 +0000\tworker-replica-0\t\tlate 2\n");
  EXPECT_NE(r.err.find("Lost the connection to the daemon"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Reconnected"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainyard::cli
