// The cgroup v1 helpers and ProbeCgroupV1. What needs a real, writable cgroup v1 hierarchy is
// skipped where /sys/fs/cgroup has none; the launcher's use of the groups is tested in
// local_executor_test.cc.
#include "trainyard/executor/cgroups.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cgroup_v1.h"
#include "test_util.h"
#include "trainyard/core/util.h"

namespace trainyard::executor {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCgroupRoot = "/sys/fs/cgroup";

using test_util::WriteText;

// A temporary directory for one test.
class TempDir : public test_util::TempDir {
 public:
  TempDir() : test_util::TempDir("ty_cgroup_test") {}
};

TEST(ProbeCgroupV1Test, MissingRootIsNotUsable) {
  TempDir tmp;
  const std::string root = tmp.path() + "/no-such-root";
  CgroupProbe probe = ProbeCgroupV1(root);
  EXPECT_FALSE(probe.usable);
  EXPECT_NE(probe.reason.find(root + "/memory"), std::string::npos) << probe.reason;
  EXPECT_FALSE(fs::exists(root));
}

TEST(ProbeCgroupV1Test, PlainDirectoriesAreNotUsable) {
  // What /sys/fs/cgroup looks like to a writer when only its tmpfs is there: mkdir and writes
  // "work" but enforce nothing.
  TempDir tmp;
  fs::create_directories(tmp.path() + "/memory");
  fs::create_directories(tmp.path() + "/cpu");
  WriteText(tmp.path() + "/memory/memory.limit_in_bytes", "9223372036854771712\n");
  CgroupProbe probe = ProbeCgroupV1(tmp.path());
  EXPECT_FALSE(probe.usable);
  EXPECT_NE(probe.reason.find("not a cgroup v1 mount"), std::string::npos) << probe.reason;
  EXPECT_TRUE(fs::is_empty(tmp.path() + "/cpu"));
}

TEST(ProbeCgroupV1Test, ProbesTheMachineAndLeavesNoGroupBehind) {
  CgroupProbe probe = ProbeCgroupV1(kCgroupRoot);
  EXPECT_EQ(probe.usable, probe.reason.empty()) << probe.reason;
  if (!probe.usable) GTEST_SKIP() << "no usable cgroup v1 here: " << probe.reason;
  const std::string prefix = "trainyard-probe-" + std::to_string(::getpid()) + "-";
  for (const char* controller : {cgroup_v1::kMemory, cgroup_v1::kCpu}) {
    const std::string parent =
        fs::path(cgroup_v1::GroupDir(kCgroupRoot, controller, "x")).parent_path().string();
    for (const auto& entry : fs::directory_iterator(parent)) {
      EXPECT_NE(entry.path().filename().string().rfind(prefix, 0), 0u) << entry.path();
    }
  }
}

TEST(CgroupV1Test, GroupDirIsUnderTheControllersMount) {
  const std::string dir = cgroup_v1::GroupDir("/sys/fs/cgroup", "memory", "trainyard/a.b");
  EXPECT_EQ(dir.rfind("/sys/fs/cgroup/memory/", 0), 0u) << dir;
  EXPECT_TRUE(EndsWith(dir, "/trainyard/a.b")) << dir;
  // A root without the caller's own cgroup path under it: the group is right under the mount.
  TempDir tmp;
  EXPECT_EQ(cgroup_v1::GroupDir(tmp.path(), "cpu", "t/x"), tmp.path() + "/cpu/t/x");
}

TEST(CgroupV1Test, ValidatesGroupNames) {
  EXPECT_TRUE(cgroup_v1::ValidateGroupName("trainyard/proj.job.worker-replica-0.1").ok());
  EXPECT_TRUE(cgroup_v1::ValidateGroupName("plain").ok());
  for (const char* bad : {"", "/abs", "a/../b", "..", "a//b", "a/", "./a"}) {
    EXPECT_FALSE(cgroup_v1::ValidateGroupName(bad).ok()) << bad;
  }
}

TEST(CgroupV1Test, ReadsTheOomKillCounter) {
  TempDir tmp;
  WriteText(tmp.path() + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
  EXPECT_EQ(cgroup_v1::ReadOomKillCount(tmp.path()), 3);
  // Kernels before 4.13 have no oom_kill field.
  WriteText(tmp.path() + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
  EXPECT_EQ(cgroup_v1::ReadOomKillCount(tmp.path()), std::nullopt);
  EXPECT_EQ(cgroup_v1::ReadOomKillCount(tmp.path() + "/gone"), std::nullopt);
  WriteText(tmp.path() + "/memory.failcnt", "591\n");
  EXPECT_EQ(cgroup_v1::ReadFailCount(tmp.path()), 591);
}

TEST(CgroupV1Test, ListsPids) {
  TempDir tmp;
  WriteText(tmp.path() + "/cgroup.procs", "12\n345\n");
  EXPECT_EQ(cgroup_v1::ListPids(tmp.path()), (std::vector<pid_t>{12, 345}));
  EXPECT_TRUE(cgroup_v1::ListPids(tmp.path() + "/gone").empty());
}

TEST(CgroupV1Test, WriteControlNeverCreatesAFile) {
  TempDir tmp;
  Status s = cgroup_v1::WriteControl(tmp.path(), "memory.limit_in_bytes", "1");
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_FALSE(fs::exists(tmp.path() + "/memory.limit_in_bytes"));
}

TEST(CgroupV1Test, DestroyingAMissingGroupIsFine) {
  TempDir tmp;
  EXPECT_TRUE(cgroup_v1::DestroyGroup(tmp.path() + "/gone", kMicrosPerSecond).ok());
}

TEST(CgroupV1Test, DestroyGroupKillsItsMembers) {
  if (!ProbeCgroupV1(kCgroupRoot).usable) GTEST_SKIP() << "no usable cgroup v1 here";
  const std::string dir = cgroup_v1::GroupDir(
      kCgroupRoot, cgroup_v1::kMemory, "trainyard-test/destroy-" + std::to_string(::getpid()));
  ASSERT_TRUE(cgroup_v1::CreateGroup(dir).ok());
  const std::string procs = dir + "/cgroup.procs";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(1);
    ::close(fd);
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  bool reaped = false;
  auto reap = [&] {
    if (!reaped && ::waitpid(pid, &status, WNOHANG) == pid) reaped = true;
  };
  // Whatever happens below, neither the child nor the group outlives the test.
  struct Cleanup {
    std::function<void()> fn;
    ~Cleanup() { fn(); }
  } cleanup{[&] {
    if (!reaped) ::kill(pid, SIGKILL);
    (void)cgroup_v1::DestroyGroup(dir, kMicrosPerSecond);
    if (!reaped) ::waitpid(pid, &status, 0);
  }};
  // The child is in the group once its pid shows up there (or it gave up and exited).
  for (int i = 0; i < 10000 && cgroup_v1::ListPids(dir).empty() && !reaped; ++i) {
    reap();
    ::usleep(1000);
  }
  ASSERT_FALSE(reaped) << "the child could not join " << dir;
  ASSERT_EQ(cgroup_v1::ListPids(dir), std::vector<pid_t>{pid});

  Status s = cgroup_v1::DestroyGroup(dir, 5 * kMicrosPerSecond, [&] {
    reap();
    ::usleep(1000);
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(fs::exists(dir));
  if (!reaped) {
    ::waitpid(pid, &status, 0);
    reaped = true;
  }
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
}

}  // namespace
}  // namespace trainyard::executor
