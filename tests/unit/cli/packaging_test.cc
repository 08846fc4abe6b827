#include "packaging.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "trainyard/core/util.h"

namespace trainyard::cli {
namespace {

namespace fs = std::filesystem;

TEST(PackagingTest, GeneratesSetupPyIncludingSubpackages) {
  EXPECT_EQ(GenerateSetupPy("trainer"),
            "from setuptools import find_packages, setup\n\n"
            "setup(name='trainer', version='0.0', packages=find_packages(include=['trainer', "
            "'trainer.*']))\n");
}

TEST(PackagingTest, RuntimePythonComesFromEnvironment) {
  setenv("TRAINYARD_PYTHON", "/opt/py/bin/python", 1);
  EXPECT_EQ(RuntimePython(), "/opt/py/bin/python");
  unsetenv("TRAINYARD_PYTHON");
  EXPECT_EQ(RuntimePython(), "/usr/bin/python3");
}

TEST(PackagingTest, RefusesDirectoryWithoutInitPy) {
  TempDir tmp;
  ASSERT_TRUE(tmp.ok());
  fs::create_directories(tmp.path() + "/src/trainer");
  auto r = BuildPackages(tmp.path() + "/src/trainer", "/usr/bin/python3", tmp.path() + "/out",
                         tmp.path() + "/work");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not contain an `__init__.py` file"), std::string::npos);
}

class SdistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
    ASSERT_TRUE(tmp_.ok());
    src_ = tmp_.path() + "/src";
    fs::create_directories(src_ + "/trainer/sub");
    ASSERT_TRUE(WriteFileAtomic(src_ + "/trainer/__init__.py", "").ok());
    ASSERT_TRUE(WriteFileAtomic(src_ + "/trainer/task.py", "print('hi')\n").ok());
    ASSERT_TRUE(WriteFileAtomic(src_ + "/trainer/sub/__init__.py", "").ok());
  }
  TempDir tmp_;
  std::string src_;
};

TEST_F(SdistTest, BuildsWithGeneratedSetupPyWithoutTouchingTheSource) {
  auto r = BuildPackages(src_ + "/trainer", "/usr/bin/python3", tmp_.path() + "/out",
                         tmp_.path() + "/work");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(fs::path((*r)[0]).filename(), "trainer-0.0.tar.gz");
  EXPECT_FALSE(fs::exists(src_ + "/setup.py"));
  EXPECT_FALSE(fs::exists(src_ + "/trainer.egg-info"));
}

TEST_F(SdistTest, UsesTheParentsSetupPy) {
  ASSERT_TRUE(WriteFileAtomic(src_ + "/setup.py",
                              "from setuptools import setup\n"
                              "setup(name='mytrainer', version='1.2', packages=['trainer'])\n")
                  .ok());
  auto r = BuildPackages(src_ + "/trainer", "/usr/bin/python3", tmp_.path() + "/out",
                         tmp_.path() + "/work");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(fs::path((*r)[0]).filename(), "mytrainer-1.2.tar.gz");
}

TEST_F(SdistTest, ReportsSetupToolsFailureWithItsOutput) {
  ASSERT_TRUE(WriteFileAtomic(src_ + "/setup.py", "raise SystemExit('broken setup')\n").ok());
  auto r = BuildPackages(src_ + "/trainer", "/usr/bin/python3", tmp_.path() + "/out",
                         tmp_.path() + "/work");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Packaging of user Python code failed with message:"),
            std::string::npos);
  EXPECT_NE(r.status().message().find("broken setup"), std::string::npos);
}

// Same files -> same bytes: builds in different scratch directories, with the sources touched in
// between, give identical archives (so the same sha256, and the daemon's cached environment).
TEST_F(SdistTest, SdistsAreReproducible) {
  ASSERT_TRUE(WriteFileAtomic(src_ + "/setup.py",
                              "from setuptools import setup\nsetup(name='trainer', "
                              "version='0.1', packages=['trainer', 'trainer.sub'])\n")
                  .ok());
  auto first = BuildPackages(src_ + "/trainer", "/usr/bin/python3", tmp_.path() + "/out1",
                             tmp_.path() + "/work1");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const auto later = fs::last_write_time(src_ + "/trainer/task.py") + std::chrono::seconds(5);
  fs::last_write_time(src_ + "/trainer/task.py", later);
  sleep(1);  // a different second for every timestamp the build writes
  auto second = BuildPackages(src_ + "/trainer", "/usr/bin/python3", tmp_.path() + "/out2",
                              tmp_.path() + "/work2");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_EQ(first->size(), 1u);
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ(Sha256FileHex((*first)[0]).value(), Sha256FileHex((*second)[0]).value());
  // A changed file changes the archive.
  ASSERT_TRUE(WriteFileAtomic(src_ + "/trainer/task.py", "print('changed')\n").ok());
  auto third = BuildPackages(src_ + "/trainer", "/usr/bin/python3", tmp_.path() + "/out3",
                             tmp_.path() + "/work3");
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_NE(Sha256FileHex((*first)[0]).value(), Sha256FileHex((*third)[0]).value());
}

TEST_F(SdistTest, ModuleMustExistInThePackagePath) {
  const std::string pkg = src_ + "/trainer";
  EXPECT_TRUE(CheckModuleInPackage(pkg, "trainer.task", false).ok());
  ASSERT_TRUE(WriteFileAtomic(src_ + "/trainer/sub/mod.py", "").ok());
  EXPECT_TRUE(CheckModuleInPackage(pkg, "trainer.sub.mod", false).ok());
  Status typo = CheckModuleInPackage(pkg, "trainer.tsak", false);
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.message().find("does not exist in --package-path"), std::string::npos)
      << typo.message();
  EXPECT_NE(typo.message().find("trainer/tsak.py"), std::string::npos) << typo.message();
  // Another top-level package: only --packages could bring it.
  EXPECT_FALSE(CheckModuleInPackage(pkg, "other.task", false).ok());
  EXPECT_TRUE(CheckModuleInPackage(pkg, "other.task", true).ok());
  // python -m on a package needs its __main__.py.
  EXPECT_FALSE(CheckModuleInPackage(pkg, "trainer", false).ok());
  ASSERT_TRUE(WriteFileAtomic(src_ + "/trainer/__main__.py", "").ok());
  EXPECT_TRUE(CheckModuleInPackage(pkg, "trainer", false).ok());
  EXPECT_FALSE(CheckModuleInPackage(pkg, "trainer..task", false).ok());
}

}  // namespace
}  // namespace trainyard::cli
