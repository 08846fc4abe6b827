// gcloud's filter language (filter.h) on job resources as the API returns them. The expected
// results follow gcloud's evaluation (tests/integration/test_gcloud_cli_parity.py compares the
// two on a real daemon).
#include "trainyard/resource/filter.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace trainyard::resource {
namespace {

// 2024-03-10T12:00:00Z
constexpr Timestamp kNow = 1710072000LL * kMicrosPerSecond;

class FilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
    jobs_ = {
        Json::parse(R"({"jobId":"census_1","state":"SUCCEEDED","createTime":"2024-03-10T10:00:00Z",
          "endTime":"2024-03-10T11:00:00Z","labels":{"owner":"alice","team":"ml"},
          "trainingInput":{"region":"us-central1","workerCount":"4","args":["--epochs","5"],
                           "scaleTier":"CUSTOM"},
          "trainingOutput":{"consumedMLUnits":0.5}})"),
        Json::parse(R"({"jobId":"census_2","state":"RUNNING","createTime":"2024-03-08T10:00:00Z",
          "labels":{"owner":"bob"},
          "trainingInput":{"region":"europe-west1","workerCount":"10"}})"),
        Json::parse(R"({"jobId":"mnist_Run","state":"QUEUED","createTime":"2024-03-10T11:59:00Z",
          "errorMessage":"",
          "trainingInput":{"region":"us-central1"}})"),
        Json::parse(R"({"jobId":"old_job","state":"FAILED","createTime":"2023-12-31T23:00:00Z",
          "endTime":"2024-01-01T00:00:00Z",
          "errorMessage":"The replica master 0 exited with a non-zero status of 1.",
          "trainingInput":{"region":"us-east1"}})"),
    };
  }

  // The ids of the jobs the filter keeps.
  std::string Ids(const std::string& expr) {
    auto f = Filter::Compile(expr, FilterOptions{kNow});
    EXPECT_TRUE(f.ok()) << expr << ": " << f.status().message();
    if (!f.ok()) return "<error>";
    std::string out;
    for (const Json& j : jobs_) {
      auto m = (*f)->Matches(j);
      EXPECT_TRUE(m.ok()) << expr << ": " << m.status().message();
      if (m.ok() && *m) out += (out.empty() ? "" : " ") + j["jobId"].get<std::string>();
    }
    return out;
  }

  std::string Error(const std::string& expr) {
    auto f = Filter::Compile(expr, FilterOptions{kNow});
    return f.ok() ? "" : f.status().message();
  }

  std::vector<Json> jobs_;
};

TEST_F(FilterTest, EmptyMatchesAll) {
  EXPECT_EQ(Ids(""), "census_1 census_2 mnist_Run old_job");
  EXPECT_EQ(Ids("   "), "census_1 census_2 mnist_Run old_job");
}

TEST_F(FilterTest, HasIsCaseInsensitiveSubstringPrefixSuffix) {
  EXPECT_EQ(Ids("jobId:census*"), "census_1 census_2");
  EXPECT_EQ(Ids("jobId:CENSUS*"), "census_1 census_2");
  EXPECT_EQ(Ids("jobId:sus"), "census_1 census_2");  // gcloud's current rule: substring
  EXPECT_EQ(Ids("jobId:*run"), "mnist_Run");
  EXPECT_EQ(Ids("jobId:c*1"), "census_1");
  EXPECT_EQ(Ids("errorMessage:*"), "old_job");  // present and non-empty
  EXPECT_EQ(Ids("labels:alice"), "census_1");   // a dict matches by key or value
  EXPECT_EQ(Ids("labels:team"), "census_1");
}

TEST_F(FilterTest, EqualityIsCaseInsensitiveAndWhole) {
  EXPECT_EQ(Ids("state=running"), "census_2");
  EXPECT_EQ(Ids("jobId=census"), "");
  EXPECT_EQ(Ids("jobId=census*"), "");  // '*' is literal for '='
  EXPECT_EQ(Ids("state!=RUNNING"), "census_1 mnist_Run old_job");
  EXPECT_EQ(Ids("labels.owner=alice"), "census_1");
  EXPECT_EQ(Ids("labels.owner!=alice"), "census_2 mnist_Run old_job");  // missing counts
}

TEST_F(FilterTest, OrListsAndLogic) {
  EXPECT_EQ(Ids("state:(RUNNING OR QUEUED)"), "census_2 mnist_Run");
  EXPECT_EQ(Ids("state:(RUNNING QUEUED)"), "census_2 mnist_Run");
  EXPECT_EQ(Ids("state=(running,failed)"), "census_2 old_job");
  EXPECT_EQ(Ids("state:RUNNING OR state:FAILED"), "census_2 old_job");
  EXPECT_EQ(Ids("jobId:census* AND state:SUCCEEDED"), "census_1");
  EXPECT_EQ(Ids("jobId:census* state:SUCCEEDED"), "census_1");  // adjacency is AND
  EXPECT_EQ(Ids("NOT state:SUCCEEDED"), "census_2 mnist_Run old_job");
  EXPECT_EQ(Ids("-state:SUCCEEDED"), "census_2 mnist_Run old_job");
  EXPECT_EQ(Ids("(state:RUNNING OR state:QUEUED) AND trainingInput.region:us-*"), "mnist_Run");
  EXPECT_EQ(Ids("NOT (state:RUNNING OR state:QUEUED)"), "census_1 old_job");
}

TEST_F(FilterTest, AndWithOrNeedsParentheses) {
  EXPECT_NE(Error("state:RUNNING AND jobId:c* OR state:QUEUED")
                .find("Parenthesis grouping is required when AND and OR are are combined"),
            std::string::npos);
  EXPECT_EQ(Error("(state:RUNNING AND jobId:c*) OR state:QUEUED"), "");
}

TEST_F(FilterTest, RegularExpressions) {
  EXPECT_EQ(Ids("jobId~^census_[0-9]$"), "census_1 census_2");
  EXPECT_EQ(Ids("jobId~run"), "");                 // case-sensitive
  EXPECT_EQ(Ids("jobId~'(?i)run'"), "mnist_Run");  // parentheses end a bare operand
  EXPECT_EQ(Ids("jobId!~^census"), "mnist_Run old_job");
  EXPECT_EQ(Ids("labels.owner~^$"), "mnist_Run old_job");  // missing is ""
  EXPECT_NE(Error("jobId~'(unclosed'").find("Filter expression RE pattern [(unclosed]"),
            std::string::npos);
}

TEST_F(FilterTest, NumbersCompareAsNumbers) {
  EXPECT_EQ(Ids("trainingInput.workerCount>4"), "census_2");  // "10" > "4" as numbers
  EXPECT_EQ(Ids("trainingInput.workerCount>=4"), "census_1 census_2");
  EXPECT_EQ(Ids("trainingInput.workerCount=4.0"), "census_1");
  EXPECT_EQ(Ids("trainingOutput.consumedMLUnits>0.1"), "census_1");
  // gcloud compares a missing value as "" when the operand is not a number it can use.
  EXPECT_EQ(Ids("trainingOutput.consumedMLUnits<1"), "census_1 census_2 mnist_Run old_job");
  EXPECT_EQ(Ids("trainingOutput.consumedMLUnits:0.5"), "census_1");
}

TEST_F(FilterTest, StringsCompareBytewiseAndMissingIsEmpty) {
  EXPECT_EQ(Ids("jobId<d"), "census_1 census_2");
  EXPECT_EQ(Ids("labels.owner<b"), "census_1 mnist_Run old_job");  // "" < "b"
}

TEST_F(FilterTest, TimesAbsoluteAndRelative) {
  EXPECT_EQ(Ids("createTime>-P1D"), "census_1 mnist_Run");
  EXPECT_EQ(Ids("createTime<-P1D"), "census_2 old_job");
  EXPECT_EQ(Ids("createTime>-PT5M"), "mnist_Run");
  EXPECT_EQ(Ids("createTime>-p1w"), "census_1 census_2 mnist_Run");
  EXPECT_EQ(Ids("createTime>=2024-03-10"), "census_1 mnist_Run");
  EXPECT_EQ(Ids("createTime<2024-01-01T00:00:00Z"), "old_job");
  EXPECT_EQ(Ids("createTime<\"2024-03-10 10:00:01\""), "census_1 census_2 old_job");
  EXPECT_EQ(Ids("createTime=2024-03-10T10:00:00Z"), "census_1");
  EXPECT_EQ(Ids("createTime:2024-03-10"), "census_1 mnist_Run");
  EXPECT_EQ(Ids("createTime>-P1M"), "census_1 census_2 mnist_Run");
  // Once a key's values are times, a job without one matches no time comparison.
  EXPECT_EQ(Ids("endTime<-P1D"), "old_job");
}

TEST_F(FilterTest, TimeOperandThatIsNoTimeIsAnError) {
  auto f = Filter::Compile("createTime>yesterday", FilterOptions{kNow});
  ASSERT_TRUE(f.ok());
  auto m = (*f)->Matches(jobs_[0]);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("yesterday"), std::string::npos);
}

TEST_F(FilterTest, NestedKeysIndicesSlicesAndSnakeCase) {
  EXPECT_EQ(Ids("trainingInput.args[0]=--epochs"), "census_1");
  EXPECT_EQ(Ids("trainingInput.args[-1]=5"), "census_1");
  EXPECT_EQ(Ids("trainingInput.args:epochs"), "census_1");
  EXPECT_EQ(Ids("training_input.region=us-east1"), "old_job");
  EXPECT_EQ(Ids("trainingInput.scale_tier=custom"), "census_1");
}

TEST_F(FilterTest, Transforms) {
  EXPECT_EQ(Ids("jobId.len()>8"), "mnist_Run");
  EXPECT_EQ(Ids("createTime.date('%Y')=2023"), "old_job");
  EXPECT_EQ(Ids("labels.len()=2"), "census_1");
  EXPECT_NE(Error("jobId.nosuch()=x").find("Unknown transform function nosuch"), std::string::npos);
}

TEST_F(FilterTest, GlobalRestriction) {
  EXPECT_EQ(Ids("europe"), "census_2");
  EXPECT_EQ(Ids("ALICE"), "census_1");
  EXPECT_EQ(Ids("-census"), "mnist_Run old_job");
}

TEST_F(FilterTest, QuotedOperandsAndEscapes) {
  EXPECT_EQ(Ids("errorMessage:\"non-zero status\""), "old_job");
  EXPECT_EQ(Ids("errorMessage:'master 0'"), "old_job");
  EXPECT_EQ(Ids("errorMessage=\"\""), "census_1 census_2 mnist_Run");
}

TEST_F(FilterTest, SyntaxErrorsNameThePlace) {
  EXPECT_EQ(Error("state:"), "Term operand expected [state: *HERE*].");
  EXPECT_NE(Error("state:RUNNING AND").find("Term expected"), std::string::npos);
  EXPECT_NE(Error("(state:RUNNING").find("expected"), std::string::npos);
  EXPECT_NE(Error("state:RUNNING)").find("Unexpected tokens"), std::string::npos);
  EXPECT_NE(Error("state=>RUNNING").find("Malformed operator"), std::string::npos);
  EXPECT_NE(Error("state:AND").find("Logical operator not expected"), std::string::npos);
  EXPECT_NE(Error("jobId:a*b*").find("At most one * expected"), std::string::npos);
  EXPECT_NE(Error("state:\"RUNNING").find("Unterminated"), std::string::npos);
}

TEST_F(FilterTest, DeepNestingIsRefusedNotACrash) {
  std::string deep(5000, '(');
  EXPECT_NE(Error(deep + "a:b"), "");
  std::string chain = "a:b";
  for (int i = 0; i < 5000; ++i) chain += " a:b";
  EXPECT_NE(Error(chain), "");
}

TEST_F(FilterTest, MissingKeysAreReported) {
  auto f = Filter::Compile("labels.nosuch:x OR state:RUNNING", FilterOptions{kNow});
  ASSERT_TRUE(f.ok());
  for (const Json& j : jobs_) ASSERT_TRUE((*f)->Matches(j).ok());
  EXPECT_EQ((*f)->MissingKeys(), std::vector<std::string>{"labels.nosuch"});
}

TEST_F(FilterTest, ChangingRuleWarnsOnce) {
  auto f = Filter::Compile("jobId:sus", FilterOptions{kNow});
  ASSERT_TRUE(f.ok());
  for (const Json& j : jobs_) ASSERT_TRUE((*f)->Matches(j).ok());
  ASSERT_EQ((*f)->Warnings().size(), 1u);
  EXPECT_NE((*f)->Warnings()[0].find("jobId:sus currently matches but will not match"),
            std::string::npos);
}

}  // namespace
}  // namespace trainyard::resource
