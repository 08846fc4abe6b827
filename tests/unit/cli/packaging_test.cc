#include "packaging.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

}  // namespace
}  // namespace trainyard::cli
