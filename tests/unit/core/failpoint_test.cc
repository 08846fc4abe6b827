// The failpoint facility (docs/faults.md): parsing TRAINYARD_FAILPOINTS and what each action does.
#include "trainyard/core/failpoint.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>

namespace trainyard::failpoint {
namespace {

class FailpointTest : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(Configure("").ok()); }
};

TEST_F(FailpointTest, ParsesEveryAction) {
  auto points = Parse(" a.b=kill, c_d=abort ,e-f=sleep(250)@3,g=off,,h=kill@2");
  ASSERT_TRUE(points.ok()) << points.status().ToString();
  ASSERT_EQ(points->size(), 5u);
  EXPECT_EQ((*points)[0].name, "a.b");
  EXPECT_EQ((*points)[0].action, Action::kKill);
  EXPECT_EQ((*points)[0].from_hit, 1);
  EXPECT_EQ((*points)[1].action, Action::kAbort);
  EXPECT_EQ((*points)[2].action, Action::kSleep);
  EXPECT_EQ((*points)[2].sleep_ms, 250);
  EXPECT_EQ((*points)[2].from_hit, 3);
  EXPECT_EQ((*points)[3].action, Action::kOff);
  EXPECT_EQ((*points)[4].name, "h");
  EXPECT_EQ((*points)[4].from_hit, 2);
}

TEST_F(FailpointTest, EmptyArmsNothing) {
  auto points = Parse("");
  ASSERT_TRUE(points.ok());
  EXPECT_TRUE(points->empty());
  ASSERT_TRUE(Configure("").ok());
  EXPECT_EQ(Describe(), "");
  TY_FAILPOINT("anything");  // nothing armed: returns
}

TEST_F(FailpointTest, RefusesMalformedEntriesNamingThem) {
  struct Case {
    const char* spec;
    const char* says;
  };
  for (const Case& c : {Case{"justaname", "\"justaname\" is not name=action"},
                        Case{"a b=kill", "\"a b\" is not a failpoint name"},
                        Case{"=kill", "\"\" is not a failpoint name"},
                        Case{"x=explode", "failpoint x: unknown action \"explode\""},
                        Case{"x=sleep(ten)", "failpoint x: \"sleep(ten)\" needs milliseconds"},
                        Case{"x=sleep()", "failpoint x: unknown action \"sleep()\""},
                        Case{"x=kill@0", "\"0\" after '@' is not a hit number"},
                        Case{"x=kill@", "\"\" after '@' is not a hit number"}}) {
    auto points = Parse(c.spec);
    ASSERT_FALSE(points.ok()) << c.spec;
    EXPECT_EQ(points.status().code(), StatusCode::kInvalidArgument) << c.spec;
    EXPECT_NE(points.status().message().find(c.says), std::string::npos)
        << c.spec << ": " << points.status().message();
  }
}

TEST_F(FailpointTest, AMalformedConfigurationKeepsThePreviousOne) {
  ASSERT_TRUE(Configure("p=sleep(0)").ok());
  EXPECT_FALSE(Configure("p=bogus").ok());
  EXPECT_EQ(Describe(), "p=sleep(0)");
}

TEST_F(FailpointTest, DescribeListsTheArmedPoints) {
  ASSERT_TRUE(Configure("a=kill,b=sleep(5)@2,c=off").ok());
  EXPECT_EQ(Describe(), "a=kill,b=sleep(5)@2,c=off");
}

TEST_F(FailpointTest, SleepReturnsAndOtherNamesAreUntouched) {
  ASSERT_TRUE(Configure("slow=sleep(0),dead=kill").ok());
  TY_FAILPOINT("slow");
  TY_FAILPOINT("slow");
  TY_FAILPOINT("unrelated");  // only "dead" would kill this process
}

TEST_F(FailpointTest, KillIsSigkillLikeKillDashNine) {
  ASSERT_TRUE(Configure("here=kill").ok());
  EXPECT_EXIT(TY_FAILPOINT("here"), ::testing::KilledBySignal(SIGKILL), "");
}

TEST_F(FailpointTest, KillFiresOnTheNthHit) {
  ASSERT_TRUE(Configure("third=kill@3").ok());
  EXPECT_EXIT(
      {
        TY_FAILPOINT("third");
        TY_FAILPOINT("third");
        fprintf(stderr, "survived two\n");
        TY_FAILPOINT("third");
        fprintf(stderr, "survived three\n");
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "survived two\n$");
}

TEST_F(FailpointTest, AbortAborts) {
  ASSERT_TRUE(Configure("boom=abort").ok());
  EXPECT_DEATH(TY_FAILPOINT("boom"), "");
}

TEST_F(FailpointTest, OffDoesNothing) {
  ASSERT_TRUE(Configure("quiet=off").ok());
  TY_FAILPOINT("quiet");
}

}  // namespace
}  // namespace trainyard::failpoint
