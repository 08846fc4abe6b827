// ListJobs in an order (JobOrder, projects.jobs.list's orderBy), run against every JobStore:
// paging through every job in any order, page size and filter gives exactly a reference sort
// of all of them, computed here from the values the API shows (as gcloud's --sort-by compares
// them); ties keep creation order; tokens are refused with another order or filter.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store_test_util.h"
#include "test_filters.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"
#include "trainyard/store/job_store.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::store {
namespace {

using model::Job;
using model::JobState;
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

std::string ImplName(const ::testing::TestParamInfo<Impl>& param) { return param.param.name; }

const JobOrderKey kKeys[] = {JobOrderKey::kCreateTime, JobOrderKey::kStartTime,
                             JobOrderKey::kEndTime, JobOrderKey::kJobId, JobOrderKey::kState};

std::string KeyName(JobOrderKey key) {
  switch (key) {
    case JobOrderKey::kDefault:
      return "default";
    case JobOrderKey::kCreateTime:
      return "createTime";
    case JobOrderKey::kStartTime:
      return "startTime";
    case JobOrderKey::kEndTime:
      return "endTime";
    case JobOrderKey::kJobId:
      return "jobId";
    case JobOrderKey::kState:
      return "state";
  }
  return "?";
}

// The value as the API shows it, as gcloud's sort compares it: RFC 3339 at whole seconds, a
// state's name, "None" for what the JSON omits (a zero time, STATE_UNSPECIFIED).
std::string Shown(const Job& job, JobOrderKey key) {
  auto time = [](Timestamp t) { return t == 0 ? std::string("None") : FormatRfc3339(t); };
  switch (key) {
    case JobOrderKey::kDefault:
      return "";
    case JobOrderKey::kCreateTime:
      return time(job.create_time);
    case JobOrderKey::kStartTime:
      return time(job.start_time);
    case JobOrderKey::kEndTime:
      return time(job.end_time);
    case JobOrderKey::kJobId:
      return job.job_id;
    case JobOrderKey::kState:
      return job.state == JobState::kStateUnspecified ? "None" : model::JobStateName(job.state);
  }
  return "";
}

class JobOrderTest : public ::testing::TestWithParam<Impl> {
 protected:
  void SetUp() override {
    store_ = GetParam().open(dir_.path());
    ASSERT_NE(store_, nullptr);
  }

  void Create(Job job) {
    auto seq = store_->CreateJob(job);
    ASSERT_TRUE(seq.ok()) << seq.status().ToString();
    job.seq = *seq;
    all_.push_back(job);
  }

  // Every job of project "p" that `filter` keeps, in `order`, by walking all pages.
  std::vector<std::string> ListAll(JobOrder order, const model::Filter* filter, int page_size,
                                   const std::string& filter_text = "") {
    std::vector<std::string> ids;
    ListJobsRequest request{.project = "p",
                            .filter = filter,
                            .page_size = page_size,
                            .order = order,
                            .filter_text = filter_text};
    for (int n = 0; n < 100000; ++n) {
      auto response = store_->ListJobs(request);
      EXPECT_TRUE(response.ok()) << response.status().ToString();
      if (!response.ok()) break;
      EXPECT_LE(response->jobs.size(), static_cast<size_t>(page_size));
      for (const Job& job : response->jobs) ids.push_back(job.job_id);
      if (response->next_page_token.empty()) break;
      EXPECT_FALSE(response->jobs.empty()) << "a page with a next token must not be empty";
      request.page_token = response->next_page_token;
    }
    return ids;
  }

  // The reference: jobs in creation order (ascending) or newest first (descending), then a
  // stable sort by the shown value, which leaves ties in that order.
  std::vector<std::string> Expect(JobOrder order, const model::Filter* filter) const {
    std::vector<Job> jobs;
    for (const Job& j : all_) {
      if (j.project == "p" && (filter == nullptr || filter->Matches(j))) jobs.push_back(j);
    }
    if (order.key == JobOrderKey::kDefault || order.descending) {
      std::reverse(jobs.begin(), jobs.end());
    }
    if (order.key != JobOrderKey::kDefault) {
      std::stable_sort(jobs.begin(), jobs.end(), [&](const Job& a, const Job& b) {
        return order.descending ? Shown(b, order.key) < Shown(a, order.key)
                                : Shown(a, order.key) < Shown(b, order.key);
      });
    }
    std::vector<std::string> ids;
    for (const Job& j : jobs) ids.push_back(j.job_id);
    return ids;
  }

  // 61 jobs with many ties: creation in 7 distinct seconds (sub-second parts not in creation
  // order; two before 1970), a third never started, a fifth never ended, 8 states.
  void CreateMixedJobs() {
    const Timestamp base = 1700000000000000;
    for (int i = 0; i < 60; ++i) {
      Job job = MakeJob("p", (i % 3 == 0   ? "zeta_"
                              : i % 3 == 1 ? "alpha_"
                                           : "Mid_") +
                                 std::to_string((i * 37) % 61));
      job.state = static_cast<JobState>(i % 8);
      job.create_time = i % 7 == 6 ? -1500000 + (i % 2) * 1000000
                                   : base + (i % 5) * kMicrosPerSecond + (59 - i) * 1000;
      job.start_time = i % 3 == 2 ? 0 : base + (i % 4) * 500000;
      job.end_time = i % 5 == 4 ? 0 : base + 100 * kMicrosPerSecond + (i % 6) * kMicrosPerSecond;
      job.labels = {{"team", "t" + std::to_string(i % 4)}};
      Create(job);
    }
    Create(MakeJob("q", "elsewhere"));
  }

  testing::TempDir dir_;
  std::unique_ptr<JobStore> store_;
  std::vector<Job> all_;  // in creation order
};

TEST_P(JobOrderTest, EveryOrderPagesLikeASortOfEverything) {
  CreateMixedJobs();
  auto failed = testing::StateIs(JobState::kFailed);
  auto zeta = testing::JobIdStartsWith("zeta_");
  auto team = testing::LabelIs("team", "t1");
  auto zeta_queued = testing::JobIdStartsWithAndStateIs("zeta_", JobState::kQueued);
  // createTime floors inside a second (sub-second parts differ) and before 1970.
  const Timestamp base = 1700000000000000;
  auto recent = testing::CreatedFrom(base + 2 * kMicrosPerSecond + 30000);
  auto since_1969 = testing::CreatedFrom(-1000000);
  const Timestamp floor = base + 3 * kMicrosPerSecond;
  auto recent_failed = testing::FuncFilter(
      [floor](const Job& j) { return j.create_time >= floor && j.state == JobState::kFailed; },
      JobState::kFailed, std::nullopt, floor);
  const std::vector<std::pair<const model::Filter*, std::string>> filters = {
      {nullptr, ""},
      {&failed, "state:FAILED"},
      {&zeta, "jobId:zeta_*"},
      {&team, "labels.team=t1"},
      {&zeta_queued, "jobId:zeta_* AND state:QUEUED"},
      {&recent, "createTime>=recent"},
      {&since_1969, "createTime>=-1s"},
      {&recent_failed, "createTime>=floor AND state:FAILED"}};
  for (JobOrderKey key : kKeys) {
    for (bool desc : {false, true}) {
      const JobOrder order{key, desc};
      for (const auto& [filter, text] : filters) {
        const std::vector<std::string> want = Expect(order, filter);
        for (int page_size : {1, 4, 100}) {
          EXPECT_EQ(ListAll(order, filter, page_size, text), want)
              << KeyName(key) << (desc ? " desc" : " asc") << ", filter \"" << text
              << "\", page size " << page_size;
        }
      }
    }
  }
  // The default order is unchanged: newest first.
  for (const auto& [filter, text] : filters) {
    for (int page_size : {1, 7, 100}) {
      EXPECT_EQ(ListAll({}, filter, page_size, text), Expect({}, filter))
          << "default order, filter \"" << text << "\", page size " << page_size;
    }
  }
}

TEST_P(JobOrderTest, TiesKeepCreationOrderInTheKeysDirection) {
  for (const char* id : {"c", "a", "d", "b"}) Create(MakeJob("p", id));  // same createTime
  EXPECT_EQ(ListAll({JobOrderKey::kCreateTime, false}, nullptr, 1),
            (std::vector<std::string>{"c", "a", "d", "b"}));
  EXPECT_EQ(ListAll({JobOrderKey::kCreateTime, true}, nullptr, 1),
            (std::vector<std::string>{"b", "d", "a", "c"}));
  EXPECT_EQ(ListAll({JobOrderKey::kState, true}, nullptr, 3),
            (std::vector<std::string>{"b", "d", "a", "c"}));
  EXPECT_EQ(ListAll({JobOrderKey::kJobId, false}, nullptr, 3),
            (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST_P(JobOrderTest, StatesSortByTheirNames) {
  const JobState states[] = {JobState::kQueued,    JobState::kRunning,         JobState::kSucceeded,
                             JobState::kFailed,    JobState::kCancelling,      JobState::kCancelled,
                             JobState::kPreparing, JobState::kStateUnspecified};
  for (JobState s : states) {
    Job job = MakeJob("p", model::JobStateName(s));
    job.state = s;
    Create(job);
  }
  // STATE_UNSPECIFIED is absent from the JSON, shown (and sorted) as "None".
  EXPECT_EQ(ListAll({JobOrderKey::kState, false}, nullptr, 3),
            (std::vector<std::string>{"CANCELLED", "CANCELLING", "FAILED", "STATE_UNSPECIFIED",
                                      "PREPARING", "QUEUED", "RUNNING", "SUCCEEDED"}));
}

TEST_P(JobOrderTest, UnsetTimesComeAfterEverySetTime) {
  Job started = MakeJob("p", "started");
  started.start_time = started.create_time + 5 * kMicrosPerSecond;
  Create(started);
  Create(MakeJob("p", "queued_1"));
  Job early = MakeJob("p", "early");
  early.start_time = 1;  // 1970-01-01T00:00:00Z
  Create(early);
  Create(MakeJob("p", "queued_2"));
  EXPECT_EQ(ListAll({JobOrderKey::kStartTime, false}, nullptr, 2),
            (std::vector<std::string>{"early", "started", "queued_1", "queued_2"}));
  EXPECT_EQ(ListAll({JobOrderKey::kStartTime, true}, nullptr, 2),
            (std::vector<std::string>{"queued_2", "queued_1", "started", "early"}));
}

TEST_P(JobOrderTest, ManyJobsSharingAPrefixPageInOrder) {
  // More jobs share "run_" than the SQLite store sorts in memory (it walks the order's index
  // instead); fewer share "run_1" (sorted in memory).
  for (int i = 0; i < 2100; ++i) {
    Job job = MakeJob("p", "run_" + std::to_string(i));
    job.state = i % 5 == 0 ? JobState::kSucceeded : JobState::kQueued;
    job.start_time = i % 3 == 0 ? 0 : job.create_time + ((i * 7919) % 1000) * kMicrosPerSecond;
    Create(job);
  }
  Create(MakeJob("p", "other"));
  auto run = testing::JobIdStartsWith("run_");
  auto run1 = testing::JobIdStartsWithAndStateIs("run_1", JobState::kSucceeded);
  for (bool desc : {false, true}) {
    for (JobOrderKey key : {JobOrderKey::kStartTime, JobOrderKey::kState, JobOrderKey::kJobId}) {
      const JobOrder order{key, desc};
      EXPECT_EQ(ListAll(order, &run, 100, "jobId:run_*"), Expect(order, &run)) << KeyName(key);
      EXPECT_EQ(ListAll(order, &run1, 30, "x"), Expect(order, &run1)) << KeyName(key);
    }
  }
}

TEST_P(JobOrderTest, AJobThatChangesBetweenPagesIsListedAtMostOnce) {
  for (int i = 0; i < 6; ++i) Create(MakeJob("p", "j" + std::to_string(i)));
  const JobOrder order{JobOrderKey::kStartTime, false};
  auto first = store_->ListJobs({.project = "p", .page_size = 3, .order = order});
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->jobs.size(), 3u);
  // j0 starts: it moves before the cursor (the unset times sort last), and is not seen again.
  Job moved = first->jobs[0];
  moved.start_time = moved.create_time + 1;
  ASSERT_TRUE(store_->UpdateJob(moved, std::nullopt).ok());
  auto rest = store_->ListJobs(
      {.project = "p", .page_size = 10, .page_token = first->next_page_token, .order = order});
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  std::vector<std::string> ids;
  for (const Job& j : rest->jobs) ids.push_back(j.job_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"j3", "j4", "j5"}));
}

TEST_P(JobOrderTest, TokensAreRefusedWithAnotherOrderOrFilter) {
  for (int i = 0; i < 5; ++i) Create(MakeJob("p", "j" + std::to_string(i)));
  auto token_of = [&](JobOrder order, const std::string& filter_text) {
    auto r = store_->ListJobs(
        {.project = "p", .page_size = 2, .order = order, .filter_text = filter_text});
    EXPECT_TRUE(r.ok());
    EXPECT_FALSE(r->next_page_token.empty());
    return r.ok() ? r->next_page_token : "";
  };
  const JobOrder by_id{JobOrderKey::kJobId, false};
  const JobOrder by_id_desc{JobOrderKey::kJobId, true};
  const JobOrder by_start{JobOrderKey::kStartTime, false};
  const std::string plain = token_of({}, "");
  const std::string id_token = token_of(by_id, "");
  const std::string filtered = token_of(by_id, "jobId:j*");
  const std::string filtered_default = token_of({}, "jobId:j*");
  struct Case {
    std::string token;
    JobOrder order;
    std::string filter_text;
  };
  const Case elsewhere[] = {
      {plain, by_id, ""},         {plain, {}, "jobId:j*"},
      {id_token, {}, ""},         {id_token, by_id_desc, ""},
      {id_token, by_start, ""},   {id_token, by_id, "jobId:j*"},
      {filtered, by_id, ""},      {filtered, by_id, "jobId:j"},
      {filtered_default, {}, ""}, {filtered_default, by_id, "jobId:j*"},
  };
  for (const Case& c : elsewhere) {
    auto r = store_->ListJobs(
        {.project = "p", .page_token = c.token, .order = c.order, .filter_text = c.filter_text});
    ASSERT_FALSE(r.ok()) << c.token << " " << KeyName(c.order.key) << " " << c.filter_text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("another orderBy or filter"), std::string::npos)
        << r.status().message();
    ASSERT_EQ(r.status().violations().size(), 1u);
    EXPECT_EQ(r.status().violations()[0].field, "pageToken");
  }
  // Each is good with what made it.
  EXPECT_TRUE(store_->ListJobs({.project = "p", .page_token = id_token, .order = by_id}).ok());
  EXPECT_TRUE(
      store_->ListJobs({.project = "p", .page_token = filtered_default, .filter_text = "jobId:j*"})
          .ok());
  // Damaged or forged tokens: base64 of "o", "ojaXXXXXXXXXXXXXXXX:1:j1" (not hex is fine, but
  // wrong length), a non-canonical seq, an unknown key, a state rank out of range, a seq of 0.
  const std::string bad[] = {
      "garbage",
      "bw==",
      Base64Encode("oja0000000000000000:01:j1"),
      Base64Encode("oxa0000000000000000:1:j1"),
      Base64Encode("ota0000000000000000:1:9"),
      Base64Encode("ota0000000000000000:0:1"),
      Base64Encode("oca0000000000000000:1:x"),
      Base64Encode("ona0000000000000000:1:"),
      Base64Encode("onb0000000000000000:1:"),
      Base64Encode("oca0000000000000000"),
  };
  for (const std::string& token : bad) {
    auto r = store_->ListJobs({.project = "p", .page_token = token, .order = by_id});
    ASSERT_FALSE(r.ok()) << token;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), "Invalid page token");
    ASSERT_EQ(r.status().violations().size(), 1u);
    EXPECT_EQ(r.status().violations()[0].field, "pageToken");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Impls, JobOrderTest,
    ::testing::Values(Impl{"InMemory", [](const std::string&) { return NewInMemoryJobStore(); }},
                      Impl{"Sqlite", OpenSqlite}),
    ImplName);

}  // namespace
}  // namespace trainyard::store
