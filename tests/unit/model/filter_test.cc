#include "trainyard/model/filter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>

namespace trainyard::model {
namespace {

// CPU time this thread has used: what the code under test cost, however busy the machine is
// (a wall-clock threshold fails on a loaded machine that preempts the test).
std::chrono::nanoseconds ThreadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

Timestamp At(const char* rfc3339) { return *ParseRfc3339(rfc3339); }

Job MakeJob(std::string id, JobState state, const char* created,
            std::map<std::string, std::string> labels = {}) {
  Job job;
  job.job_id = std::move(id);
  job.state = state;
  job.create_time = At(created);
  job.labels = std::move(labels);
  job.spec.region = "us-central1";
  job.spec.python_module = "trainer.task";
  job.spec.runtime_version = "2.11";
  return job;
}

std::unique_ptr<Filter> Compile(std::string_view text) {
  auto f = ParseFilter(text);
  EXPECT_TRUE(f.ok()) << text << ": " << f.status().ToString();
  return f.ok() ? std::move(f).value() : nullptr;
}

bool M(std::string_view text, const Job& job) {
  auto f = Compile(text);
  return f != nullptr && f->Matches(job);
}

class FilterTest : public ::testing::Test {
 protected:
  Job census_ = MakeJob("census_1", JobState::kSucceeded, "2024-03-01T10:00:00Z",
                        {{"owner", "alice"}, {"team", "ml"}});
  Job rnn_failed_ = MakeJob("rnn_7", JobState::kFailed, "2023-12-31T23:59:59Z", {{"owner", "bob"}});
  Job rnn_running_ = MakeJob("rnn_8", JobState::kRunning, "2024-01-01T00:00:00.5Z");
};

TEST_F(FilterTest, EmptyFilterMatchesEverything) {
  for (const char* text : {"", "   ", "\t\n"}) {
    auto f = Compile(text);
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->Matches(census_));
    EXPECT_FALSE(f->RequiredState().has_value());
    EXPECT_FALSE(f->RequiredJobIdPrefix().has_value());
  }
}

TEST_F(FilterTest, HasWithTrailingStarIsPrefixMatch) {
  EXPECT_TRUE(M("jobId:census*", census_));
  EXPECT_FALSE(M("jobId:census*", rnn_failed_));
  EXPECT_FALSE(M("jobId:census", census_));  // without * it is equality
  EXPECT_TRUE(M("jobId:census_1", census_));
  EXPECT_TRUE(M("jobId:*", census_));
  EXPECT_TRUE(M("jobId:*_1", census_));  // other wildcards glob
  EXPECT_FALSE(M("jobId:*_2", census_));
  EXPECT_TRUE(M("job_id=\"census_1\"", census_));
}

TEST_F(FilterTest, ConjunctionOfPrefixAndState) {
  auto f = Compile("jobId:rnn* AND state:FAILED");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->Matches(rnn_failed_));
  EXPECT_FALSE(f->Matches(rnn_running_));
  EXPECT_FALSE(f->Matches(census_));
  EXPECT_EQ(f->RequiredState(), JobState::kFailed);
  EXPECT_EQ(f->RequiredJobIdPrefix(), "rnn");
}

TEST_F(FilterTest, StateComparisons) {
  EXPECT_TRUE(M("state=RUNNING", rnn_running_));
  EXPECT_TRUE(M("state!=QUEUED", rnn_running_));
  EXPECT_FALSE(M("state!=RUNNING", rnn_running_));
  EXPECT_TRUE(M("state:running", rnn_running_));  // state names are case-insensitive
  EXPECT_TRUE(M("state:*", rnn_running_));
  EXPECT_FALSE(ParseFilter("state:DONE").ok());
  EXPECT_FALSE(ParseFilter("state<RUNNING").ok());
}

TEST_F(FilterTest, LabelComparisons) {
  EXPECT_TRUE(M("labels.owner=alice", census_));
  EXPECT_FALSE(M("labels.owner=alice", rnn_failed_));
  EXPECT_FALSE(M("labels.owner=alice", rnn_running_));  // no label
  EXPECT_TRUE(M("labels.owner:*", census_));
  EXPECT_FALSE(M("labels.owner:*", rnn_running_));
  EXPECT_TRUE(M("labels.owner!=alice", rnn_running_));
  EXPECT_TRUE(M("labels:team", census_));
  EXPECT_FALSE(M("labels:team", rnn_failed_));
  EXPECT_TRUE(M("-labels:team", rnn_failed_));
  EXPECT_TRUE(M("labels.owner:al*", census_));
  EXPECT_FALSE(ParseFilter("labels=x").ok());
}

TEST_F(FilterTest, TimeComparisons) {
  EXPECT_TRUE(M("createTime>\"2024-01-01T00:00:00Z\"", census_));
  EXPECT_FALSE(M("createTime>\"2024-01-01T00:00:00Z\"", rnn_failed_));
  // 00:00:00.5 shows as 00:00:00, so it is not after 00:00:00 at second granularity.
  EXPECT_FALSE(M("createTime>\"2024-01-01T00:00:00Z\"", rnn_running_));
  EXPECT_TRUE(M("createTime=2024-01-01T00:00:00Z", rnn_running_));
  EXPECT_TRUE(M("createTime>2024-01-01T00:00:00.1Z", rnn_running_));
  EXPECT_TRUE(M("createTime<2024-01-01", rnn_failed_));
  EXPECT_TRUE(M("createTime >= 2024-03-01T11:00:00+01:00", census_));
  EXPECT_TRUE(M("createTime<=\"2024-03-01T10:00:00Z\"", census_));
  EXPECT_FALSE(M("startTime<2030-01-01T00:00:00Z", census_));  // unset start time
  EXPECT_TRUE(M("startTime!=2030-01-01T00:00:00Z", census_));
  EXPECT_FALSE(M("startTime:*", census_));
  EXPECT_FALSE(M("endTime:*", census_));
  EXPECT_FALSE(ParseFilter("createTime>yesterday").ok());
}

TEST_F(FilterTest, NotAndMinus) {
  EXPECT_FALSE(M("NOT jobId:census*", census_));
  EXPECT_TRUE(M("NOT jobId:census*", rnn_failed_));
  EXPECT_TRUE(M("-jobId:census*", rnn_failed_));
  EXPECT_TRUE(M("NOT (state:FAILED OR state:RUNNING)", census_));
  EXPECT_FALSE(ParseFilter("- jobId:x").ok());
}

TEST_F(FilterTest, OrBindsTighterThanAnd) {
  // a AND b OR c  ==  a AND (b OR c)
  auto f = Compile("jobId:rnn* AND state:FAILED OR state:SUCCEEDED");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->Matches(rnn_failed_));
  EXPECT_FALSE(f->Matches(census_));  // would match if AND bound tighter
  EXPECT_FALSE(f->Matches(rnn_running_));
  EXPECT_FALSE(f->RequiredState().has_value());
  EXPECT_EQ(f->RequiredJobIdPrefix(), "rnn");
}

TEST_F(FilterTest, ParenthesesGroup) {
  auto f = Compile("(jobId:rnn* AND state:FAILED) OR state:SUCCEEDED");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->Matches(rnn_failed_));
  EXPECT_TRUE(f->Matches(census_));
  EXPECT_FALSE(f->Matches(rnn_running_));
  EXPECT_FALSE(f->RequiredJobIdPrefix().has_value());
}

TEST_F(FilterTest, JuxtapositionIsAnd) {
  auto f = Compile("labels.owner=bob state=FAILED");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->Matches(rnn_failed_));
  EXPECT_FALSE(f->Matches(census_));
  EXPECT_EQ(f->RequiredState(), JobState::kFailed);
}

TEST_F(FilterTest, QuotedValuesWithEscapes) {
  Job job = census_;
  job.error_message = "said \"no\" \\ twice";
  EXPECT_TRUE(M(R"(errorMessage="said \"no\" \\ twice")", job));
  EXPECT_TRUE(M(R"(errorMessage:"said*")", job));
  EXPECT_FALSE(M("errorMessage:*", census_));
  EXPECT_TRUE(M("labels.owner=\"alice\"", census_));
}

TEST_F(FilterTest, TrainingInputFields) {
  EXPECT_TRUE(M("trainingInput.region=us-central1", census_));
  EXPECT_TRUE(M("training_input.region:us-*", census_));
  EXPECT_TRUE(M("trainingInput.scaleTier=BASIC", census_));
  EXPECT_TRUE(M("trainingInput.scaleTier=basic", census_));
  EXPECT_TRUE(M("trainingInput.pythonModule=trainer.task", census_));
  EXPECT_TRUE(M("trainingInput.runtimeVersion>=2.1", census_));
  EXPECT_FALSE(M("trainingInput.runtimeVersion=1.15", census_));
}

TEST_F(FilterTest, RequiredStateAndPrefixComeOnlyFromTopLevelConjuncts) {
  auto f = Compile("state=QUEUED jobId=exact_id");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->RequiredState(), JobState::kQueued);
  EXPECT_EQ(f->RequiredJobIdPrefix(), "exact_id");
  auto g = Compile("NOT state=QUEUED");
  EXPECT_FALSE(g->RequiredState().has_value());
  auto h = Compile("state!=QUEUED AND jobId:*x");
  EXPECT_FALSE(h->RequiredState().has_value());
  EXPECT_FALSE(h->RequiredJobIdPrefix().has_value());
  auto k = Compile("(state=RUNNING AND jobId:ab*)");
  EXPECT_EQ(k->RequiredState(), JobState::kRunning);
  EXPECT_EQ(k->RequiredJobIdPrefix(), "ab");
}

TEST_F(FilterTest, CreateTimeFloorIsTheLargestLowerBoundOfATopLevelConjunct) {
  const Timestamp t2024 = *ParseRfc3339("2024-01-01T00:00:00Z");
  const Timestamp t2025 = *ParseRfc3339("2025-06-01T12:00:00.5Z");
  EXPECT_EQ(Compile("createTime>2024-01-01")->CreateTimeFloor(), t2024);
  EXPECT_EQ(Compile("createTime>=\"2024-01-01T00:00:00Z\"")->CreateTimeFloor(), t2024);
  EXPECT_EQ(Compile("create_time=2024-01-01 state:FAILED")->CreateTimeFloor(), t2024);
  EXPECT_EQ(Compile("createTime>2024-01-01 createTime>=2025-06-01T12:00:00.5Z")->CreateTimeFloor(),
            t2025);
  // Upper bounds, negations, disjunctions, presence and other times give none.
  for (const char* text :
       {"createTime<2024-01-01", "createTime!=2024-01-01", "NOT createTime>2024-01-01",
        "createTime>2024-01-01 OR state:FAILED", "createTime:*", "startTime>2024-01-01"}) {
    EXPECT_FALSE(Compile(text)->CreateTimeFloor().has_value()) << text;
  }
}

TEST_F(FilterTest, RejectsSyntaxErrors) {
  for (const char* text :
       {"jobId:", "jobId", "(jobId:a", "jobId:a)", "()", "jobId:a AND", "AND jobId:a", "jobId:a OR",
        "errorMessage=\"open", "jobId::a", "NOT", ":a", "jobId ~ a"}) {
    auto f = ParseFilter(text);
    ASSERT_FALSE(f.ok()) << text;
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(f.status().message().find("position"), std::string::npos) << text;
  }
}

TEST_F(FilterTest, RejectsUnknownFieldsByName) {
  auto f = ParseFilter("owner=alice");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("\"owner\""), std::string::npos);
  EXPECT_NE(f.status().message().find("labels.KEY"), std::string::npos);
  auto g = ParseFilter("state:FAILED AND bogus:1");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("position 18"), std::string::npos) << g.status().message();
}

TEST_F(FilterTest, SurvivesDeepNesting) {
  std::string deep(5000, '(');
  EXPECT_FALSE(ParseFilter(deep + "jobId:a" + std::string(5000, ')')).ok());
  std::string ok(50, '(');
  EXPECT_TRUE(M(ok + "jobId:census*" + std::string(50, ')'), census_));
}

TEST_F(FilterTest, MatchesAHundredThousandJobsQuickly) {
  std::vector<Job> jobs;
  jobs.reserve(100000);
  for (int i = 0; i < 100000; ++i) {
    jobs.push_back(MakeJob("job_" + std::to_string(i),
                           i % 3 ? JobState::kSucceeded : JobState::kFailed, "2024-01-01T00:00:00Z",
                           {{"owner", i % 2 ? "alice" : "bob"}}));
  }
  auto f = Compile(
      "jobId:job_1* AND (state:FAILED OR labels.owner=alice) "
      "createTime>=2023-06-01T00:00:00Z");
  ASSERT_NE(f, nullptr);
  auto t0 = ThreadCpuTime();
  int n = 0;
  for (const Job& j : jobs) n += f->Matches(j) ? 1 : 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(ThreadCpuTime() - t0).count();
  EXPECT_GT(n, 0);
  EXPECT_LT(ms, 200) << "CPU ms for 100,000 jobs";
}

}  // namespace
}  // namespace trainyard::model
