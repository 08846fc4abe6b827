// The JobStore contract, run against every implementation (in-memory and SQLite).
#include "trainyard/store/job_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store_test_util.h"
#include "test_filters.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::store {
namespace {

using model::Job;
using model::JobState;
using model::LogEntry;
using testing::MakeJob;

struct Impl {
  std::string name;
  std::function<std::unique_ptr<JobStore>(const std::string& dir)> open;
};

std::unique_ptr<JobStore> OpenSqlite(const std::string& dir) {
  auto store = OpenSqliteJobStore({.path = dir + "/trainyard.db"});
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

class JobStoreContractTest : public ::testing::TestWithParam<Impl> {
 protected:
  void SetUp() override {
    store_ = GetParam().open(dir_.path());
    ASSERT_NE(store_, nullptr);
  }

  int64_t Create(const Job& job) {
    auto seq = store_->CreateJob(job);
    EXPECT_TRUE(seq.ok()) << seq.status().ToString();
    return seq.ok() ? seq.value() : 0;
  }

  // Every job id of `project` matching `filter`, newest first, by walking all pages.
  std::vector<std::string> ListAll(const std::string& project, const model::Filter* filter,
                                   int page_size, int* pages = nullptr) {
    std::vector<std::string> ids;
    ListJobsRequest request{.project = project, .filter = filter, .page_size = page_size};
    int n = 0;
    while (true) {
      auto response = store_->ListJobs(request);
      EXPECT_TRUE(response.ok()) << response.status().ToString();
      if (!response.ok()) break;
      ++n;
      EXPECT_LE(response->jobs.size(), static_cast<size_t>(page_size));
      for (const Job& job : response->jobs) ids.push_back(job.job_id);
      if (response->next_page_token.empty()) break;
      EXPECT_FALSE(response->jobs.empty()) << "a page with a next token must not be empty";
      request.page_token = response->next_page_token;
      if (n > 10000) break;
    }
    if (pages != nullptr) *pages = n;
    return ids;
  }

  testing::TempDir dir_;
  std::unique_ptr<JobStore> store_;
};

TEST_P(JobStoreContractTest, CreateAssignsIncreasingSeqs) {
  int64_t a = Create(MakeJob("p", "a"));
  int64_t b = Create(MakeJob("p", "b"));
  int64_t c = Create(MakeJob("q", "c"));
  EXPECT_GT(a, 0);
  EXPECT_GT(b, a);
  EXPECT_GT(c, b);
  EXPECT_EQ(store_->GetJob("p", "b")->seq, b);
}

TEST_P(JobStoreContractTest, GetReturnsEveryStoredField) {
  Job job = MakeJob("proj", "full");
  job.state = JobState::kRunning;
  job.spec.master.machine_type = "complex_model_m";
  job.spec.args = {"--epochs", "3", ""};
  job.spec.job_dir = "gs://b/dir";
  job.spec.runtime_version = "2.11";
  job.spec.python_version = "3.7";
  job.spec.scheduling.max_running_time = 7200 * kMicrosPerSecond;
  job.spec.scheduling.max_wait_time = 60 * kMicrosPerSecond;
  job.spec.scheduling.priority = 900;
  job.spec.has_hyperparameters = true;
  job.spec.master.image_uri = "gcr.io/p/image:latest";
  job.labels = {{"owner", "alice"}, {"team", "ml \"quoted\" ünïcode"}};
  job.etag = "abcdefghijk=";
  job.start_time = 1700000001000001;
  job.end_time = 1700000002000002;
  job.error_message = "The replica master 0 exited with a non-zero status of 1.";
  job.consumed_ml_units = 1.25;
  job.consumed_ml_units_set = true;
  job.training_output_json = R"({"completedTrialCount":"2"})";
  job.job_position = 17;  // not stored
  int64_t seq = Create(job);

  auto got = store_->GetJob("proj", "full");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->seq, seq);
  EXPECT_EQ(got->project, "proj");
  EXPECT_EQ(got->job_id, "full");
  EXPECT_EQ(got->state, JobState::kRunning);
  EXPECT_EQ(got->training_input_json, job.training_input_json);
  EXPECT_EQ(got->spec.scale_tier, "CUSTOM");
  EXPECT_EQ(got->spec.master.machine_type, "complex_model_m");
  EXPECT_EQ(got->spec.package_uris, job.spec.package_uris);
  EXPECT_EQ(got->spec.python_module, "trainer.task");
  EXPECT_EQ(got->spec.args, job.spec.args);
  EXPECT_EQ(got->spec.region, "us-central1");
  EXPECT_EQ(got->spec.job_dir, "gs://b/dir");
  EXPECT_EQ(got->spec.runtime_version, "2.11");
  EXPECT_EQ(got->spec.python_version, "3.7");
  EXPECT_EQ(got->spec.scheduling.max_running_time, job.spec.scheduling.max_running_time);
  EXPECT_EQ(got->spec.scheduling.max_wait_time, job.spec.scheduling.max_wait_time);
  EXPECT_EQ(got->spec.scheduling.priority, 900);
  EXPECT_TRUE(got->spec.has_hyperparameters);
  EXPECT_EQ(got->spec.master.image_uri, "gcr.io/p/image:latest");
  EXPECT_EQ(got->labels, job.labels);
  EXPECT_EQ(got->etag, job.etag);
  EXPECT_EQ(got->create_time, job.create_time);
  EXPECT_EQ(got->start_time, job.start_time);
  EXPECT_EQ(got->end_time, job.end_time);
  EXPECT_EQ(got->error_message, job.error_message);
  EXPECT_DOUBLE_EQ(got->consumed_ml_units, 1.25);
  EXPECT_TRUE(got->consumed_ml_units_set);
  EXPECT_EQ(got->training_output_json, job.training_output_json);
  EXPECT_EQ(got->job_position, 0);
}

TEST_P(JobStoreContractTest, DefaultSpecRoundTrips) {
  Job job;
  job.project = "p";
  job.job_id = "bare";
  Create(job);
  auto got = store_->GetJob("p", "bare");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->spec.scale_tier, "BASIC");
  EXPECT_FALSE(got->spec.scheduling.max_running_time.has_value());
  EXPECT_FALSE(got->spec.scheduling.max_wait_time.has_value());
  EXPECT_TRUE(got->labels.empty());
  EXPECT_FALSE(got->consumed_ml_units_set);
}

TEST_P(JobStoreContractTest, CreateRejectsDuplicateJobIdWithAlreadyExists) {
  Create(MakeJob("p", "dup"));
  auto again = store_->CreateJob(MakeJob("p", "dup"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(again.status().message(), "Job projects/p/jobs/dup already exists");
}

TEST_P(JobStoreContractTest, SameJobIdInAnotherProjectIsAllowed) {
  Create(MakeJob("p", "x"));
  EXPECT_TRUE(store_->CreateJob(MakeJob("q", "x")).ok());
}

TEST_P(JobStoreContractTest, GetMissingJobIsNotFound) {
  Create(MakeJob("p", "x"));
  auto got = store_->GetJob("p", "y");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(got.status().message(), "Job projects/p/jobs/y not found");
  EXPECT_EQ(store_->GetJob("q", "x").status().code(), StatusCode::kNotFound);
}

TEST_P(JobStoreContractTest, UpdateReplacesMutableFieldsOnly) {
  Job job = MakeJob("p", "u");
  int64_t seq = Create(job);
  Job update = job;
  update.state = JobState::kFailed;
  update.start_time = 5;
  update.end_time = 6;
  update.error_message = "boom";
  update.labels = {{"color", "blue"}};
  update.etag = "newetag";
  update.consumed_ml_units = 3.5;
  update.consumed_ml_units_set = true;
  update.training_output_json = R"({"isHyperparameterTuningJob":true})";
  // Immutable fields are ignored by UpdateJob.
  update.training_input_json = "{}";
  update.spec.python_module = "other";
  update.create_time = 1;
  ASSERT_TRUE(store_->UpdateJob(update, std::nullopt).ok());

  auto got = store_->GetJob("p", "u");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->seq, seq);
  EXPECT_EQ(got->state, JobState::kFailed);
  EXPECT_EQ(got->start_time, 5);
  EXPECT_EQ(got->end_time, 6);
  EXPECT_EQ(got->error_message, "boom");
  EXPECT_EQ(got->labels, update.labels);
  EXPECT_EQ(got->etag, "newetag");
  EXPECT_DOUBLE_EQ(got->consumed_ml_units, 3.5);
  EXPECT_TRUE(got->consumed_ml_units_set);
  EXPECT_EQ(got->training_output_json, update.training_output_json);
  EXPECT_EQ(got->training_input_json, job.training_input_json);
  EXPECT_EQ(got->spec.python_module, "trainer.task");
  EXPECT_EQ(got->create_time, job.create_time);
  auto history = store_->GetStateHistory("p", "u");
  ASSERT_TRUE(history.ok());
  EXPECT_TRUE(history->empty());
}

TEST_P(JobStoreContractTest, UpdateMissingJobIsNotFoundAndWritesNoHistory) {
  Job ghost = MakeJob("p", "ghost");
  Status s = store_->UpdateJob(ghost, StateChange{JobState::kQueued, JobState::kPreparing, 1, ""});
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "Job projects/p/jobs/ghost not found");
  Create(ghost);
  auto history = store_->GetStateHistory("p", "ghost");
  ASSERT_TRUE(history.ok());
  EXPECT_TRUE(history->empty());
}

TEST_P(JobStoreContractTest, UpdateAppendsStateHistoryInOrder) {
  Job job = MakeJob("p", "h");
  Create(job);
  Create(MakeJob("p", "other"));
  job.state = JobState::kPreparing;
  ASSERT_TRUE(
      store_->UpdateJob(job, StateChange{JobState::kQueued, JobState::kPreparing, 10, "admitted"})
          .ok());
  job.state = JobState::kRunning;
  ASSERT_TRUE(
      store_->UpdateJob(job, StateChange{JobState::kPreparing, JobState::kRunning, 20, ""}).ok());
  ASSERT_TRUE(store_->UpdateJob(job, std::nullopt).ok());
  Job other = MakeJob("p", "other");
  other.state = JobState::kCancelled;
  ASSERT_TRUE(
      store_->UpdateJob(other, StateChange{JobState::kQueued, JobState::kCancelled, 15, "x"}).ok());

  auto history = store_->GetStateHistory("p", "h");
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].from, JobState::kQueued);
  EXPECT_EQ((*history)[0].to, JobState::kPreparing);
  EXPECT_EQ((*history)[0].time, 10);
  EXPECT_EQ((*history)[0].reason, "admitted");
  EXPECT_EQ((*history)[1].from, JobState::kPreparing);
  EXPECT_EQ((*history)[1].to, JobState::kRunning);
  EXPECT_EQ((*history)[1].time, 20);
  EXPECT_EQ((*history)[1].reason, "");
}

TEST_P(JobStoreContractTest, StateHistoryOfMissingJobIsNotFound) {
  EXPECT_EQ(store_->GetStateHistory("p", "nope").status().code(), StatusCode::kNotFound);
}

TEST_P(JobStoreContractTest, ListPagesNewestFirst) {
  for (int i = 0; i < 25; ++i) Create(MakeJob("p", "job" + std::to_string(i)));
  Create(MakeJob("q", "elsewhere"));
  int pages = 0;
  std::vector<std::string> ids = ListAll("p", nullptr, 10, &pages);
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(ids.size(), 25u);
  for (int i = 0; i < 25; ++i) EXPECT_EQ(ids[i], "job" + std::to_string(24 - i));
}

TEST_P(JobStoreContractTest, ListHasNoNextTokenWhenLastPageIsFull) {
  for (int i = 0; i < 20; ++i) Create(MakeJob("p", "job" + std::to_string(i)));
  int pages = 0;
  EXPECT_EQ(ListAll("p", nullptr, 10, &pages).size(), 20u);
  EXPECT_EQ(pages, 2);
  auto filtered = testing::LabelIs("owner", "alice");
  EXPECT_EQ(ListAll("p", &filtered, 10, &pages).size(), 20u);
  EXPECT_EQ(pages, 2);
}

TEST_P(JobStoreContractTest, ListOfEmptyProjectIsEmpty) {
  Create(MakeJob("p", "a"));
  auto response = store_->ListJobs({.project = "empty"});
  ASSERT_TRUE(response.ok());
  EXPECT_TRUE(response->jobs.empty());
  EXPECT_TRUE(response->next_page_token.empty());
}

TEST_P(JobStoreContractTest, ListRejectsBadPageTokens) {
  Create(MakeJob("p", "a"));
  for (std::string token : {"garbage", "!!!!", "czA=" /* "s0" */, "eDEy" /* "x12" */,
                            "czEyYQ==" /* "s12a" */, "cy0x" /* "s-1" */}) {
    auto response = store_->ListJobs({.project = "p", .page_token = token});
    ASSERT_FALSE(response.ok()) << token;
    EXPECT_EQ(response.status().code(), StatusCode::kInvalidArgument) << token;
    EXPECT_EQ(response.status().message(), "Invalid page token");
  }
}

TEST_P(JobStoreContractTest, ListAppliesFilterAcrossPages) {
  // 60 jobs: states cycle QUEUED/RUNNING/FAILED, ids alternate "census"/"mnist", labels by i%4.
  std::vector<Job> all;
  for (int i = 0; i < 60; ++i) {
    Job job = MakeJob("p", (i % 2 ? "census_" : "mnist_") + std::to_string(i));
    job.state = i % 3 == 0   ? JobState::kQueued
                : i % 3 == 1 ? JobState::kRunning
                             : JobState::kFailed;
    job.labels = {{"team", "t" + std::to_string(i % 4)}};
    Create(job);
    all.push_back(job);
  }
  auto expect = [&](const model::Filter& filter) {
    std::vector<std::string> want;
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      if (filter.Matches(*it)) want.push_back(it->job_id);
    }
    return want;
  };
  std::vector<testing::FuncFilter> filters = {
      testing::StateIs(JobState::kFailed),
      testing::StateIs(JobState::kSucceeded),
      testing::JobIdStartsWith("census"),
      testing::JobIdStartsWith("census_1"),
      testing::JobIdStartsWith("nomatch"),
      testing::LabelIs("team", "t1"),
      testing::JobIdStartsWithAndStateIs("mnist", JobState::kQueued),
      // A declared hint narrows the scan; Matches still decides.
      testing::FuncFilter(
          [](const Job& j) { return j.state == JobState::kRunning && j.labels.at("team") == "t3"; },
          JobState::kRunning),
  };
  for (size_t i = 0; i < filters.size(); ++i) {
    for (int page_size : {1, 7, 100}) {
      EXPECT_EQ(ListAll("p", &filters[i], page_size), expect(filters[i]))
          << "filter " << i << " page size " << page_size;
    }
  }
}

TEST_P(JobStoreContractTest, ListWithUnselectivePrefixMatchesBruteForce) {
  // More jobs share the prefix than the SQLite store sorts through the job_id index.
  const int n = 2100;
  for (int i = 0; i < n; ++i) {
    Job job = MakeJob("p", "run_" + std::to_string(i));
    if (i % 5 == 0) job.state = JobState::kSucceeded;
    Create(job);
  }
  Create(MakeJob("p", "other"));
  auto prefix = testing::JobIdStartsWith("run_");
  auto first = store_->ListJobs({.project = "p", .filter = &prefix, .page_size = 3});
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->jobs.size(), 3u);
  EXPECT_EQ(first->jobs[0].job_id, "run_" + std::to_string(n - 1));
  EXPECT_EQ(first->jobs[2].job_id, "run_" + std::to_string(n - 3));
  auto both = testing::JobIdStartsWithAndStateIs("run_1", JobState::kSucceeded);
  std::vector<std::string> want;
  for (int i = n - 1; i >= 0; --i) {
    std::string id = "run_" + std::to_string(i);
    if (i % 5 == 0 && id.rfind("run_1", 0) == 0) want.push_back(id);
  }
  EXPECT_EQ(ListAll("p", &both, 50), want);
  EXPECT_EQ(ListAll("p", &prefix, 100).size(), static_cast<size_t>(n));
}

TEST_P(JobStoreContractTest, ListSeesUpdatesToFilteredFields) {
  Job job = MakeJob("p", "a");
  Create(job);
  auto failed = testing::StateIs(JobState::kFailed);
  EXPECT_TRUE(ListAll("p", &failed, 10).empty());
  job.state = JobState::kFailed;
  ASSERT_TRUE(store_->UpdateJob(job, std::nullopt).ok());
  EXPECT_EQ(ListAll("p", &failed, 10), std::vector<std::string>{"a"});
}

TEST_P(JobStoreContractTest, ListActiveJobsIsOldestFirstWithoutTerminalJobs) {
  const JobState states[] = {JobState::kQueued,    JobState::kSucceeded, JobState::kRunning,
                             JobState::kFailed,    JobState::kPreparing, JobState::kCancelled,
                             JobState::kCancelling};
  int i = 0;
  for (JobState s : states) {
    Job job = MakeJob(i % 2 ? "p" : "q", "j" + std::to_string(i));
    job.state = s;
    Create(job);
    ++i;
  }
  auto active = store_->ListActiveJobs();
  ASSERT_TRUE(active.ok());
  std::vector<std::string> ids;
  for (const Job& job : *active) ids.push_back(job.job_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"j0", "j2", "j4", "j6"}));
}

TEST_P(JobStoreContractTest, CountJobsByStateOmitsEmptyStates) {
  auto empty = store_->CountJobsByState();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  for (int i = 0; i < 5; ++i) {
    Job job = MakeJob(i % 2 ? "p" : "q", "j" + std::to_string(i));
    job.state = i < 3 ? JobState::kQueued : JobState::kFailed;
    Create(job);
  }
  auto counts = store_->CountJobsByState();
  ASSERT_TRUE(counts.ok());
  std::vector<std::pair<JobState, int64_t>> want = {{JobState::kQueued, 3}, {JobState::kFailed, 2}};
  EXPECT_EQ(*counts, want);
}

LogEntry Line(const std::string& job, const std::string& task, Timestamp ts,
              const std::string& message, const std::string& project = "p") {
  LogEntry e;
  e.project = project;
  e.job_id = job;
  e.task_name = task;
  e.timestamp = ts;
  e.message = message;
  return e;
}

TEST_P(JobStoreContractTest, AppendLogsAssignsIncreasingInsertIds) {
  std::vector<LogEntry> first = {Line("a", "master-replica-0", 1, "one"),
                                 Line("b", "service", 2, "two")};
  ASSERT_TRUE(store_->AppendLogs(first).ok());
  std::vector<LogEntry> second = {Line("a", "master-replica-0", 3, "three")};
  ASSERT_TRUE(store_->AppendLogs(second).ok());
  EXPECT_GT(first[0].insert_id, 0);
  EXPECT_GT(first[1].insert_id, first[0].insert_id);
  EXPECT_GT(second[0].insert_id, first[1].insert_id);
  std::vector<LogEntry> none;
  EXPECT_TRUE(store_->AppendLogs(none).ok());
}

TEST_P(JobStoreContractTest, LargeAppendWritesBackTheIdsReadLogsReturns) {
  std::vector<LogEntry> batch;
  for (int i = 0; i < 150; ++i) {
    batch.push_back(Line(i % 2 ? "a" : "b", "master-replica-0", i, "line " + std::to_string(i)));
  }
  ASSERT_TRUE(store_->AppendLogs(batch).ok());
  auto got = store_->ReadLogs({.project = "p", .limit = 1000});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ((*got)[i].insert_id, batch[i].insert_id) << i;
    EXPECT_EQ((*got)[i].message, batch[i].message) << i;
    EXPECT_EQ((*got)[i].job_id, batch[i].job_id) << i;
  }
}

LogEntry FileLine(const std::string& task, int attempt, int64_t offset, const std::string& message,
                  const std::string& trial = "") {
  LogEntry e = Line("a", task, offset, message);
  e.trial_id = trial;
  e.source_attempt = attempt;
  e.source_offset = offset;
  return e;
}

std::vector<std::string> Messages(JobStore& store) {
  std::vector<std::string> out;
  auto got = store.ReadLogs({.project = "p", .job_id = "a", .limit = 1000});
  EXPECT_TRUE(got.ok());
  for (const LogEntry& e : *got) out.push_back(e.message);
  return out;
}

// A daemon killed after the store committed a replica's lines but before the executor recorded
// how far it had read delivers them again after the restart, with more: only the new ones are
// stored (issue 17, found by test_faults.py's executor.logs.after_commit failpoint).
TEST_P(JobStoreContractTest, LinesDeliveredAgainFromALogFileAreStoredOnce) {
  std::vector<LogEntry> first = {FileLine("master-replica-0", 0, 10, "one"),
                                 FileLine("master-replica-0", 0, 20, "two")};
  ASSERT_TRUE(store_->AppendLogs(first).ok());
  std::vector<LogEntry> again = {FileLine("master-replica-0", 0, 10, "one"),
                                 FileLine("master-replica-0", 0, 20, "two"),
                                 FileLine("master-replica-0", 0, 30, "three"),
                                 Line("a", "service", 31, "service lines are never dropped"),
                                 Line("a", "service", 31, "service lines are never dropped")};
  ASSERT_TRUE(store_->AppendLogs(again).ok());
  EXPECT_EQ(again[2].insert_id, first[1].insert_id + 1);  // ids only for what was stored
  EXPECT_GT(again[4].insert_id, again[3].insert_id);
  std::vector<LogEntry> whole_batch_again = {FileLine("master-replica-0", 0, 30, "three")};
  ASSERT_TRUE(store_->AppendLogs(whole_batch_again).ok());
  EXPECT_EQ(Messages(*store_),
            (std::vector<std::string>{"one", "two", "three", "service lines are never dropped",
                                      "service lines are never dropped"}));
}

TEST_P(JobStoreContractTest, ANewAttemptOrAnotherStreamStartsItsOwnLogFile) {
  std::vector<LogEntry> first = {FileLine("master-replica-0", 0, 100, "attempt 0")};
  ASSERT_TRUE(store_->AppendLogs(first).ok());
  // A restarted replica's log file starts again at offset 0; other replicas and trials have
  // files of their own; a line of an older attempt arriving late is not stored.
  std::vector<LogEntry> more = {FileLine("master-replica-0", 1, 10, "attempt 1"),
                                FileLine("worker-replica-0", 0, 10, "worker"),
                                FileLine("master-replica-0", 0, 10, "trial 2", "2"),
                                FileLine("master-replica-0", 0, 200, "stale attempt 0")};
  ASSERT_TRUE(store_->AppendLogs(more).ok());
  EXPECT_EQ(Messages(*store_),
            (std::vector<std::string>{"attempt 0", "attempt 1", "worker", "trial 2"}));
}

TEST_P(JobStoreContractTest, ReadLogsReturnsStoredFields) {
  LogEntry e = Line("a", "worker-replica-1", 1700000000123456, "hello\nworld ✓");
  e.severity = model::Severity::kWarning;
  e.trial_id = "3";
  std::vector<LogEntry> batch = {e};
  ASSERT_TRUE(store_->AppendLogs(batch).ok());
  auto got = store_->ReadLogs({.project = "p", .job_id = "a"});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  const LogEntry& r = (*got)[0];
  EXPECT_EQ(r.insert_id, batch[0].insert_id);
  EXPECT_EQ(r.project, "p");
  EXPECT_EQ(r.job_id, "a");
  EXPECT_EQ(r.timestamp, 1700000000123456);
  EXPECT_EQ(r.severity, model::Severity::kWarning);
  EXPECT_EQ(r.task_name, "worker-replica-1");
  EXPECT_EQ(r.trial_id, "3");
  EXPECT_EQ(r.message, "hello\nworld ✓");
}

TEST_P(JobStoreContractTest, ReadLogsHonoursEveryQueryField) {
  std::vector<LogEntry> batch;
  for (int i = 0; i < 30; ++i) {
    batch.push_back(Line(i % 3 == 0   ? "a"
                         : i % 3 == 1 ? "b"
                                      : "c",
                         i % 2 ? "master-replica-0" : "worker-replica-0", 100 + i,
                         "m" + std::to_string(i), i % 3 == 2 ? "other" : "p"));
  }
  ASSERT_TRUE(store_->AppendLogs(batch).ok());
  auto messages = [&](const LogQuery& q) {
    auto got = store_->ReadLogs(q);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    std::vector<std::string> out;
    if (!got.ok()) return out;
    int64_t last = 0;
    for (const LogEntry& e : *got) {
      EXPECT_GT(e.insert_id, last);
      last = e.insert_id;
      out.push_back(e.message);
    }
    return out;
  };
  auto want = [&](std::function<bool(int)> pred, size_t limit = 1000) {
    std::vector<std::string> out;
    for (int i = 0; i < 30 && out.size() < limit; ++i) {
      if (pred(i)) out.push_back("m" + std::to_string(i));
    }
    return out;
  };
  // One job.
  EXPECT_EQ(messages({.project = "p", .job_id = "a"}), want([](int i) { return i % 3 == 0; }));
  // Every job of the project.
  EXPECT_EQ(messages({.project = "p"}), want([](int i) { return i % 3 != 2; }));
  EXPECT_EQ(messages({.project = "other", .job_id = "a"}), want([](int) { return false; }));
  // Task.
  EXPECT_EQ(messages({.project = "p", .task_name = "master-replica-0"}),
            want([](int i) { return i % 3 != 2 && i % 2 == 1; }));
  // Cursor.
  EXPECT_EQ(messages({.project = "p", .job_id = "b", .after_insert_id = batch[10].insert_id}),
            want([](int i) { return i % 3 == 1 && i > 10; }));
  // Time window [110, 120).
  EXPECT_EQ(messages({.project = "p", .min_timestamp = 110, .max_timestamp = 120}),
            want([](int i) { return i % 3 != 2 && i >= 10 && i < 20; }));
  EXPECT_EQ(messages({.project = "p", .min_timestamp = 125}),
            want([](int i) { return i % 3 != 2 && i >= 25; }));
  EXPECT_EQ(messages({.project = "p", .max_timestamp = 103}),
            want([](int i) { return i % 3 != 2 && i < 3; }));
  // Limit.
  EXPECT_EQ(messages({.project = "p", .limit = 4}), want([](int i) { return i % 3 != 2; }, 4));
  EXPECT_EQ(messages({.project = "p", .job_id = "a", .limit = 2}),
            want([](int i) { return i % 3 == 0; }, 2));
  // Everything at once.
  EXPECT_EQ(messages({.project = "p",
                      .job_id = "a",
                      .task_name = "worker-replica-0",
                      .after_insert_id = batch[0].insert_id,
                      .min_timestamp = 101,
                      .max_timestamp = 128,
                      .limit = 3}),
            want([](int i) { return i % 3 == 0 && i % 2 == 0 && i > 0 && i < 28; }, 3));
}

TEST_P(JobStoreContractTest, ConcurrentCreatesAllSucceedWithDistinctSeqs) {
  const int kThreads = 8;
  const int kPerThread = 50;
  std::vector<std::vector<int64_t>> seqs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto seq =
            store_->CreateJob(MakeJob("p", "t" + std::to_string(t) + "_" + std::to_string(i)));
        EXPECT_TRUE(seq.ok()) << seq.status().ToString();
        if (seq.ok()) seqs[t].push_back(*seq);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<int64_t> distinct;
  for (const auto& v : seqs) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
    distinct.insert(v.begin(), v.end());
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(ListAll("p", nullptr, 100).size(), static_cast<size_t>(kThreads * kPerThread));
}

TEST_P(JobStoreContractTest, ConcurrentDuplicateCreatesHaveOneWinner) {
  const int kThreads = 8;
  std::atomic<int> ok{0};
  std::atomic<int> exists{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto seq = store_->CreateJob(MakeJob("p", "same" + std::to_string(i)));
        if (seq.ok()) {
          ++ok;
        } else if (seq.status().code() == StatusCode::kAlreadyExists) {
          ++exists;
        } else {
          ADD_FAILURE() << seq.status().ToString();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 20);
  EXPECT_EQ(exists.load(), 20 * (kThreads - 1));
}

TEST_P(JobStoreContractTest, ConcurrentLogAppendsKeepIdsUniqueAndOrdered) {
  const int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < 10; ++b) {
        std::vector<LogEntry> batch;
        for (int i = 0; i < 20; ++i) batch.push_back(Line("j" + std::to_string(t), "s", i, "x"));
        ASSERT_TRUE(store_->AppendLogs(batch).ok());
        for (size_t i = 1; i < batch.size(); ++i) {
          ASSERT_GT(batch[i].insert_id, batch[i - 1].insert_id);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  auto all = store_->ReadLogs({.project = "p", .limit = 100000});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), static_cast<size_t>(kThreads * 10 * 20));
  std::set<int64_t> ids;
  for (const LogEntry& e : *all) ids.insert(e.insert_id);
  EXPECT_EQ(ids.size(), all->size());
}

// Reads every line of `query` by following the cursor, `page` lines at a time.
std::vector<LogEntry> ReadAllPages(JobStore& store, LogQuery query, int page) {
  std::vector<LogEntry> out;
  query.limit = page;
  while (true) {
    auto got = store.ReadLogs(query);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok() || got->empty()) break;
    EXPECT_LE(got->size(), static_cast<size_t>(page));
    query.after_insert_id = got->back().insert_id;
    out.insert(out.end(), got->begin(), got->end());
  }
  return out;
}

std::vector<std::string> Messages(const std::vector<LogEntry>& entries) {
  std::vector<std::string> out;
  for (const LogEntry& e : entries) out.push_back(e.message);
  return out;
}

TEST_P(JobStoreContractTest, LogCursorAndLimitMayFallInsideABatch) {
  std::vector<LogEntry> batch;
  for (int i = 0; i < 100; ++i) batch.push_back(Line("a", "t", i, "m" + std::to_string(i)));
  ASSERT_TRUE(store_->AppendLogs(batch).ok());
  auto got = store_->ReadLogs(
      {.project = "p", .job_id = "a", .after_insert_id = batch[37].insert_id, .limit = 10});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ((*got)[i].insert_id, batch[38 + i].insert_id);
    EXPECT_EQ((*got)[i].message, batch[38 + i].message);
  }
  EXPECT_EQ(Messages(ReadAllPages(*store_, {.project = "p", .job_id = "a"}, 7)), Messages(batch));
  EXPECT_EQ(Messages(ReadAllPages(*store_, {.project = "p"}, 13)), Messages(batch));
  got = store_->ReadLogs({.project = "p", .after_insert_id = batch[99].insert_id});
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->empty());
}

TEST_P(JobStoreContractTest, LogTaskAndTimeFiltersApplyPerLine) {
  // Mixed tasks and out-of-order timestamps within each batch.
  std::vector<LogEntry> all;
  for (int b = 0; b < 4; ++b) {
    std::vector<LogEntry> batch;
    for (int i = 0; i < 50; ++i) {
      int n = b * 50 + i;
      batch.push_back(Line("a", (i / 5) % 3 == 0 ? "master-replica-0" : "worker-replica-0",
                           1000 + (n * 37) % 200, "m" + std::to_string(n)));
    }
    ASSERT_TRUE(store_->AppendLogs(batch).ok());
    all.insert(all.end(), batch.begin(), batch.end());
  }
  auto want = [&](const std::string& task, Timestamp min, Timestamp max, int64_t after,
                  size_t limit) {
    std::vector<std::string> out;
    for (const LogEntry& e : all) {
      if (out.size() == limit) break;
      if (e.insert_id <= after || (!task.empty() && e.task_name != task)) continue;
      if ((min != 0 && e.timestamp < min) || (max != 0 && e.timestamp >= max)) continue;
      out.push_back(e.message);
    }
    return out;
  };
  for (const std::string task : {"", "master-replica-0", "worker-replica-0", "none"}) {
    for (auto [min, max] : std::vector<std::pair<Timestamp, Timestamp>>{
             {0, 0}, {1050, 0}, {0, 1050}, {1100, 1110}, {1199, 1200}, {5000, 0}}) {
      for (int64_t after : {int64_t{0}, all[73].insert_id}) {
        for (int limit : {3, 1000}) {
          LogQuery q{.project = "p",
                     .job_id = "a",
                     .task_name = task,
                     .after_insert_id = after,
                     .min_timestamp = min,
                     .max_timestamp = max,
                     .limit = limit};
          auto got = store_->ReadLogs(q);
          ASSERT_TRUE(got.ok());
          EXPECT_EQ(Messages(*got), want(task, min, max, after, static_cast<size_t>(limit)))
              << task << " [" << min << ", " << max << ") after " << after << " limit " << limit;
          q.job_id = "";
          got = store_->ReadLogs(q);
          ASSERT_TRUE(got.ok());
          EXPECT_EQ(Messages(*got), want(task, min, max, after, static_cast<size_t>(limit)));
        }
      }
    }
  }
}

TEST_P(JobStoreContractTest, ProjectWideLogReadsInterleaveJobsByInsertId) {
  std::vector<LogEntry> want;
  for (int b = 0; b < 12; ++b) {
    std::vector<LogEntry> batch;
    for (int i = 0; i < 9; ++i) {
      const std::string job = "j" + std::to_string((b + i / 3) % 4);
      batch.push_back(Line(job, "t", b * 10 + i, job + ":" + std::to_string(b * 10 + i),
                           b % 3 == 2 ? "other" : "p"));
    }
    ASSERT_TRUE(store_->AppendLogs(batch).ok());
    for (const LogEntry& e : batch) {
      if (e.project == "p") want.push_back(e);
    }
  }
  std::vector<LogEntry> got = ReadAllPages(*store_, {.project = "p"}, 5);
  EXPECT_EQ(Messages(got), Messages(want));
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].insert_id, want[i].insert_id);
    EXPECT_EQ(got[i].job_id, want[i].job_id);
  }
  std::vector<LogEntry> want_j1;
  for (const LogEntry& e : want) {
    if (e.job_id == "j1") want_j1.push_back(e);
  }
  EXPECT_EQ(Messages(ReadAllPages(*store_, {.project = "p", .job_id = "j1"}, 4)),
            Messages(want_j1));
}

TEST_P(JobStoreContractTest, ConcurrentLogAppendsAreEachReadExactlyOnce) {
  const int kThreads = 6;
  const int kBatches = 25;
  std::vector<std::thread> threads;
  std::vector<std::vector<LogEntry>> appended(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<LogEntry> batch;
        for (int i = 0; i < 40; ++i) {
          batch.push_back(
              Line("j" + std::to_string(t % 3), i % 10 < 6 ? "a" : "b", i,
                   std::to_string(t) + "/" + std::to_string(b) + "/" + std::to_string(i)));
        }
        ASSERT_TRUE(store_->AppendLogs(batch).ok());
        appended[t].insert(appended[t].end(), batch.begin(), batch.end());
      }
    });
  }
  for (auto& th : threads) th.join();
  std::map<int64_t, std::string> want;
  for (const auto& lines : appended) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) {
        EXPECT_GT(lines[i].insert_id, lines[i - 1].insert_id);
      }
      EXPECT_TRUE(want.emplace(lines[i].insert_id, lines[i].message).second)
          << "duplicate insert id " << lines[i].insert_id;
    }
  }
  std::vector<LogEntry> got = ReadAllPages(*store_, {.project = "p"}, 333);
  ASSERT_EQ(got.size(), want.size());
  auto it = want.begin();
  for (size_t i = 0; i < got.size(); ++i, ++it) {
    EXPECT_EQ(got[i].insert_id, it->first);
    EXPECT_EQ(got[i].message, it->second);
  }
}

std::string ImplName(const ::testing::TestParamInfo<Impl>& param) { return param.param.name; }

// Reads every line of `query` in a timestamp order by resuming after the position of the last
// line read, `page` lines at a time (what the Logging API's page tokens do).
std::vector<LogEntry> ReadAllByTime(JobStore& store, LogQuery query, int page) {
  std::vector<LogEntry> out;
  query.limit = page;
  while (true) {
    auto got = store.ReadLogs(query);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok() || got->empty()) break;
    EXPECT_LE(got->size(), static_cast<size_t>(page));
    query.position = LogPosition{got->back().timestamp, got->back().insert_id};
    out.insert(out.end(), got->begin(), got->end());
    if (out.size() > 100000) break;  // a position that does not advance
  }
  return out;
}

std::vector<int64_t> Ids(const std::vector<LogEntry>& entries) {
  std::vector<int64_t> out;
  for (const LogEntry& e : entries) out.push_back(e.insert_id);
  return out;
}

// Three replicas of one job print concurrently; each replica's lines reach the store in
// batches of its own, so a batch often holds lines older than lines of another replica stored
// before it (and equal timestamps across replicas). A timestamp-ordered read, resumed after
// the last position at any page size and in either direction, returns every line exactly once
// in (timestamp, insert id) order, with every filter applied.
TEST_P(JobStoreContractTest, TimestampOrderIsOneOrderAcrossPagesAndLateBatches) {
  std::mt19937 rng(7);
  std::vector<LogEntry> all;
  const Timestamp t0 = 1700000000000000;
  const std::vector<std::string> tasks = {"master-replica-0", "worker-replica-0",
                                          "worker-replica-1"};
  std::vector<Timestamp> clock(tasks.size(), t0);
  std::vector<std::vector<LogEntry>> pending(tasks.size());
  int n = 0;
  for (int round = 0; round < 120; ++round) {
    for (size_t t = 0; t < tasks.size(); ++t) {
      const int lines = static_cast<int>(rng() % 12);
      for (int i = 0; i < lines; ++i) {
        // Steps of 0 (equal timestamps), microseconds, or up to 3 s (longer than a chunk).
        const int kind = static_cast<int>(rng() % 10);
        clock[t] += kind < 3 ? 0 : kind < 9 ? static_cast<Timestamp>(rng() % 2000) : 3'000'000;
        pending[t].push_back(Line("j", tasks[t], clock[t], "n" + std::to_string(n++)));
      }
      // Replicas deliver when they like: some hold several rounds of lines back.
      if (rng() % 3 == 0 || round == 119) {
        ASSERT_TRUE(store_->AppendLogs(pending[t]).ok());
        all.insert(all.end(), pending[t].begin(), pending[t].end());
        pending[t].clear();
      }
    }
    if (round % 40 == 0) {
      std::vector<LogEntry> other = {Line("k", "master-replica-0", clock[0], "other job")};
      ASSERT_TRUE(store_->AppendLogs(other).ok());
    }
  }
  ASSERT_GT(all.size(), 1000u);
  auto asc = [](const LogEntry& a, const LogEntry& b) {
    return LogPosition{a.timestamp, a.insert_id} < LogPosition{b.timestamp, b.insert_id};
  };
  std::vector<LogEntry> sorted = all;
  std::sort(sorted.begin(), sorted.end(), asc);
  // The test's premise: the ingestion order is not the timestamp order.
  ASSERT_NE(Ids(sorted), Ids(all));
  auto want = [&](const std::function<bool(const LogEntry&)>& pred, bool descending) {
    std::vector<int64_t> out;
    for (const LogEntry& e : sorted) {
      if (pred(e)) out.push_back(e.insert_id);
    }
    if (descending) std::reverse(out.begin(), out.end());
    return out;
  };
  auto any = [](const LogEntry&) { return true; };
  for (bool descending : {false, true}) {
    const LogOrder order = descending ? LogOrder::kTimestampDesc : LogOrder::kTimestampAsc;
    for (int page : {1, 7, 100, 1000, 5000}) {
      EXPECT_EQ(Ids(ReadAllByTime(*store_, {.project = "p", .job_id = "j", .order = order}, page)),
                want(any, descending))
          << "page " << page << (descending ? " desc" : " asc");
    }
    // A project-wide read interleaves the other job's lines at their times.
    std::vector<LogEntry> project = ReadAllByTime(*store_, {.project = "p", .order = order}, 64);
    EXPECT_EQ(project.size(), all.size() + 3);
    EXPECT_TRUE(std::is_sorted(
        project.begin(), project.end(),
        [&](const LogEntry& a, const LogEntry& b) { return descending ? asc(b, a) : asc(a, b); }));
    // Task, time window, snapshot and id filters.
    const Timestamp lo = sorted[sorted.size() / 4].timestamp;
    const Timestamp hi = sorted[sorted.size() / 2].timestamp;
    const int64_t snapshot = all[all.size() / 2].insert_id;
    const int64_t after = all[all.size() / 8].insert_id;
    EXPECT_EQ(Ids(ReadAllByTime(*store_,
                                {.project = "p",
                                 .job_id = "j",
                                 .task_name = "worker-replica-1",
                                 .min_timestamp = lo,
                                 .max_timestamp = hi,
                                 .order = order},
                                9)),
              want(
                  [&](const LogEntry& e) {
                    return e.task_name == "worker-replica-1" && e.timestamp >= lo &&
                           e.timestamp < hi;
                  },
                  descending));
    EXPECT_EQ(
        Ids(ReadAllByTime(*store_,
                          {.project = "p",
                           .job_id = "j",
                           .after_insert_id = after,
                           .max_insert_id = snapshot,
                           .order = order},
                          50)),
        want([&](const LogEntry& e) { return e.insert_id > after && e.insert_id <= snapshot; },
             descending));
    // Starting from a position taken from the middle (gcloud's lower bound, or a page token).
    const LogEntry& mid = sorted[sorted.size() / 3];
    auto from_mid = store_->ReadLogs({.project = "p",
                                      .job_id = "j",
                                      .order = order,
                                      .position = LogPosition{mid.timestamp, mid.insert_id},
                                      .limit = 100000});
    ASSERT_TRUE(from_mid.ok());
    EXPECT_EQ(Ids(*from_mid), want(
                                  [&](const LogEntry& e) {
                                    const LogPosition p{e.timestamp, e.insert_id};
                                    const LogPosition m{mid.timestamp, mid.insert_id};
                                    return descending ? p < m : p > m;
                                  },
                                  descending));
  }
}

TEST_P(JobStoreContractTest, LastLogInsertIdIsTheHighestIdStored) {
  auto none = store_->LastLogInsertId();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0);
  std::vector<LogEntry> batch = {Line("a", "t", 5, "x"), Line("b", "t", 1, "y")};
  ASSERT_TRUE(store_->AppendLogs(batch).ok());
  auto last = store_->LastLogInsertId();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, batch[1].insert_id);
  // A snapshot read sees exactly the lines up to it.
  std::vector<LogEntry> later = {Line("a", "t", 0, "z")};
  ASSERT_TRUE(store_->AppendLogs(later).ok());
  auto snap =
      store_->ReadLogs({.project = "p", .max_insert_id = *last, .order = LogOrder::kTimestampAsc});
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(Messages(*snap), (std::vector<std::string>{"y", "x"}));
}

INSTANTIATE_TEST_SUITE_P(
    Impls, JobStoreContractTest,
    ::testing::Values(Impl{"InMemory", [](const std::string&) { return NewInMemoryJobStore(); }},
                      Impl{"Sqlite", OpenSqlite}),
    ImplName);

}  // namespace
}  // namespace trainyard::store
