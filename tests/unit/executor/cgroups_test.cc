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

// ResolveMemoryGroup on the texts of real hosts: where a launcher under Slurm finds the memory
// group Slurm's task/cgroup put it in.
constexpr const char* kHostMounts =
    "25 30 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
    "40 25 0:30 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
    "41 40 0:31 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate\n"
    "47 40 0:35 / /sys/fs/cgroup/cpu rw shared:9 - cgroup cgroup rw,cpu\n"
    "51 40 0:39 / /sys/fs/cgroup/memory rw shared:13 - cgroup cgroup rw,memory\n";

TEST(ResolveMemoryGroupTest, CgroupV1TaskGroup) {
  const char* cgroup =
      "6:freezer:/slurm/uid_0/job_5/step_0\n"
      "4:memory:/slurm/uid_0/job_5/step_0/task_0\n"
      "1:cpu:/\n"
      "0::/\n";
  auto g = cgroup_v1::ResolveMemoryGroup(cgroup, kHostMounts);
  ASSERT_TRUE(g.has_value());
  EXPECT_FALSE(g->v2);
  EXPECT_EQ(g->dir, "/sys/fs/cgroup/memory/slurm/uid_0/job_5/step_0/task_0");
  EXPECT_EQ(g->mount_point, "/sys/fs/cgroup/memory");
}

TEST(ResolveMemoryGroupTest, CgroupNamespaceUsesTheMountRootedInIt) {
  // Inside a cgroup namespace (the dev cluster's slurmd): the host's mount shows a root above
  // the namespace's ("/../.."), a mount made inside it is rooted at "/"; a path with a blank.
  const char* cgroup = "4:memory:/slurm_n1/uid_0/job_1/step_0/task_0\n0::/\n";
  const std::string mounts =
      std::string(kHostMounts)
          .replace(std::string(kHostMounts).find("51 40 0:39 / "), 13, "51 40 0:39 /../.. ") +
      "64 43 0:39 / /tmp/my\\040cluster/cgroup/memory rw,relatime - cgroup "
      "cgroup-memory rw,memory\n";
  auto g = cgroup_v1::ResolveMemoryGroup(cgroup, mounts);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->dir, "/tmp/my cluster/cgroup/memory/slurm_n1/uid_0/job_1/step_0/task_0");
  EXPECT_EQ(g->mount_point, "/tmp/my cluster/cgroup/memory");
}

TEST(ResolveMemoryGroupTest, MountOfASubtree) {
  // A container that sees only its own part of the hierarchy, mounted at the usual place.
  const char* cgroup = "4:memory:/kubepods/pod1/slurm/uid_0/job_2/step_1/task_0\n";
  const char* mounts =
      "51 40 0:39 /kubepods/pod1 /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n"
      "52 40 0:39 /other /mnt/other ro - cgroup cgroup rw,memory\n";
  auto g = cgroup_v1::ResolveMemoryGroup(cgroup, mounts);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->dir, "/sys/fs/cgroup/memory/slurm/uid_0/job_2/step_1/task_0");
}

TEST(ResolveMemoryGroupTest, CgroupV2) {
  const char* cgroup = "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n";
  const char* mounts =
      "30 25 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
  auto g = cgroup_v1::ResolveMemoryGroup(cgroup, mounts);
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(g->v2);
  EXPECT_EQ(g->dir, "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_0/user/task_0");
  EXPECT_EQ(g->mount_point, "/sys/fs/cgroup");
}

TEST(ResolveMemoryGroupTest, HybridHostPrefersTheMemoryController) {
  // cgroup v1 memory plus a cgroup2 mount that holds no memory controller: v1 it is.
  const char* cgroup = "4:memory:/slurm/uid_0/job_5/step_0/task_0\n0::/\n";
  auto g = cgroup_v1::ResolveMemoryGroup(cgroup, kHostMounts);
  ASSERT_TRUE(g.has_value());
  EXPECT_FALSE(g->v2);
}

TEST(ResolveMemoryGroupTest, NothingWithoutAMountHoldingTheGroup) {
  EXPECT_FALSE(cgroup_v1::ResolveMemoryGroup("4:memory:/a/b\n", "").has_value());
  // Only another controller's hierarchy is mounted.
  EXPECT_FALSE(cgroup_v1::ResolveMemoryGroup(
                   "4:memory:/a/b\n", "47 40 0:35 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n")
                   .has_value());
  // The mount's root does not contain the group ("/ab" is no parent of "/abc").
  EXPECT_FALSE(cgroup_v1::ResolveMemoryGroup(
                   "4:memory:/abc/d\n",
                   "51 40 0:39 /ab /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")
                   .has_value());
  // Garbage.
  EXPECT_FALSE(cgroup_v1::ResolveMemoryGroup("nonsense", "more nonsense - x").has_value());
}

TEST(ResolveMemoryGroupTest, OomKillsAndLimitFromTheGroupFiles) {
  // The files a v1 group has, in a plain directory tree (the reading is what is tested).
  TempDir tmp;
  const std::string mount = tmp.path() + "/memory";
  const std::string job = mount + "/slurm/uid_0/job_5";
  const std::string task = job + "/step_0/task_0";
  fs::create_directories(task);
  WriteText(mount + "/memory.limit_in_bytes", "1000\n");  // the host's root: not counted
  WriteText(job + "/memory.limit_in_bytes", "314572800\n");
  WriteText(job + "/step_0/memory.limit_in_bytes", "157286400\n");
  WriteText(task + "/memory.limit_in_bytes", "9223372036854771712\n");
  WriteText(task + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  cgroup_v1::MemoryGroup g{task, false, mount};
  EXPECT_EQ(cgroup_v1::ReadGroupOomKills(g), 2);
  EXPECT_EQ(cgroup_v1::ReadGroupMemoryLimit(g), 157286400);

  // v2: memory.events and memory.max ("max" is no limit).
  const std::string v2 = tmp.path() + "/unified/job_7/step_0/user/task_0";
  fs::create_directories(v2);
  WriteText(v2 + "/memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n");
  WriteText(v2 + "/memory.max", "max\n");
  WriteText(tmp.path() + "/unified/job_7/memory.max", "104857600\n");
  cgroup_v1::MemoryGroup g2{v2, true, tmp.path() + "/unified"};
  EXPECT_EQ(cgroup_v1::ReadGroupOomKills(g2), 1);
  EXPECT_EQ(cgroup_v1::ReadGroupMemoryLimit(g2), 104857600);

  cgroup_v1::MemoryGroup none{tmp.path() + "/missing", false, tmp.path()};
  EXPECT_FALSE(cgroup_v1::ReadGroupOomKills(none).has_value());
  EXPECT_EQ(cgroup_v1::ReadGroupMemoryLimit(none), 0);
}

}  // namespace
}  // namespace trainyard::executor
