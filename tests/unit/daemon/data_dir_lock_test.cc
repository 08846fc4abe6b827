#include "data_dir_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace trainyard::daemon {
namespace {

class DataDirLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ty_lock_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Read(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::filesystem::path dir_;
};

TEST_F(DataDirLockTest, SecondLockOnTheSameDirIsRefusedNamingTheHolder) {
  auto first = DataDirLock::Acquire(dir_);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(Read(dir_ / kDataDirLockFile), std::to_string(::getpid()) + "\n");
  // flock belongs to the open file description: a second open in this process conflicts too.
  auto second = DataDirLock::Acquire(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("pid " + std::to_string(::getpid())), std::string::npos)
      << second.status().message();
  EXPECT_NE(second.status().message().find(dir_.string()), std::string::npos);
  auto holder = DataDirLockHolder(dir_);
  ASSERT_TRUE(holder.ok());
  ASSERT_TRUE(holder->has_value());
  EXPECT_EQ(**holder, ::getpid());
  // The refused attempt left the holder's pid in place.
  EXPECT_EQ(Read(dir_ / kDataDirLockFile), std::to_string(::getpid()) + "\n");

  first = Status(StatusCode::kCancelled, "released");  // destroys the lock
  holder = DataDirLockHolder(dir_);
  ASSERT_TRUE(holder.ok());
  EXPECT_FALSE(holder->has_value());
  auto again = DataDirLock::Acquire(dir_);
  EXPECT_TRUE(again.ok()) << again.status().message();
}

TEST_F(DataDirLockTest, NoLockFileMeansNoHolder) {
  std::filesystem::create_directories(dir_);
  auto holder = DataDirLockHolder(dir_);
  ASSERT_TRUE(holder.ok());
  EXPECT_FALSE(holder->has_value());
}

TEST_F(DataDirLockTest, HeldAcrossProcessesAndReleasedWhenTheHolderIsKilled) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    auto lock = DataDirLock::Acquire(dir_);
    char ok = lock.ok() ? 'y' : 'n';
    if (::write(ready[1], &ok, 1) != 1) ::_exit(2);
    for (;;) ::pause();  // holds the lock until SIGKILL
  }
  ::close(ready[1]);
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(ok, 'y');

  auto refused = DataDirLock::Acquire(dir_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("pid " + std::to_string(child)), std::string::npos)
      << refused.status().message();
  auto holder = DataDirLockHolder(dir_);
  ASSERT_TRUE(holder.ok() && holder->has_value());
  EXPECT_EQ(**holder, child);

  // A daemon that dies without cleaning up (kill -9) leaves no lock behind.
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  auto taken = DataDirLock::Acquire(dir_);
  EXPECT_TRUE(taken.ok()) << taken.status().message();
}

TEST_F(DataDirLockTest, ProgramsTheHolderExecsDoNotInheritTheLock) {
  // The exec'd program says "ready" on the pipe: it runs, so the exec (and the closing of the
  // close-on-exec descriptors) is complete.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    auto lock = DataDirLock::Acquire(dir_);
    if (!lock.ok()) ::_exit(3);
    if (::dup2(ready[1], 1) < 0) ::_exit(5);
    ::execl("/bin/sh", "sh", "-c", "echo ready; exec sleep 600", static_cast<char*>(nullptr));
    ::_exit(4);
  }
  ::close(ready[1]);
  char buf[6] = {};
  ASSERT_EQ(::read(ready[0], buf, 5), 5);
  EXPECT_STREQ(buf, "ready");
  // The child (now a replica-like program) still runs, but holds no lock.
  ASSERT_EQ(::kill(child, 0), 0);
  auto taken = DataDirLock::Acquire(dir_);
  EXPECT_TRUE(taken.ok()) << taken.status().message();
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the child exited " << WEXITSTATUS(status);
}

TEST_F(DataDirLockTest, PidfileIsWrittenAndRemovedOnRelease) {
  std::filesystem::create_directories(dir_);
  const auto pidfile = dir_ / "run" / "trainyardd.pid";
  std::filesystem::create_directories(pidfile.parent_path());
  {
    auto lock = DataDirLock::Acquire(dir_);
    ASSERT_TRUE(lock.ok());
    ASSERT_TRUE((*lock)->WritePidfile(pidfile).ok());
    EXPECT_EQ(Read(pidfile), std::to_string(::getpid()) + "\n");
  }
  EXPECT_FALSE(std::filesystem::exists(pidfile));
  // The lock file stays (removing it would race with the next daemon opening it), emptied.
  EXPECT_EQ(Read(dir_ / kDataDirLockFile), "");
}

TEST_F(DataDirLockTest, UnusableDataDirIsAClearError) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  auto lock = DataDirLock::Acquire(dir_ / "file");
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace trainyard::daemon
