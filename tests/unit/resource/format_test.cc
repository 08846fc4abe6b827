// gcloud's --format projections and printers (format.h) and --sort-by.
#include "trainyard/resource/format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace trainyard::resource {
namespace {

class FormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "America/New_York", 1);
    tzset();
    jobs_ = {Json::parse(R"({"jobId":"census_1","state":"SUCCEEDED",
                 "createTime":"2024-03-10T10:00:00Z","labels":{"owner":"alice","team":"ml"},
                 "trainingInput":{"args":["--epochs","5"],"workerCount":"4"},
                 "trainingOutput":{"consumedMLUnits":0.5}})"),
             Json::parse(R"({"jobId":"a_much_longer_job","state":"RUNNING",
                 "createTime":"2024-03-08T10:00:00Z",
                 "trainingInput":{"workerCount":"10"}})")};
  }

  std::string Out(const std::string& text) {
    auto f = ParseFormat(text);
    EXPECT_TRUE(f.ok()) << text << ": " << f.status().message();
    return f.ok() ? Render(*f, jobs_) : "<error>";
  }

  std::vector<Json> jobs_;
};

TEST_F(FormatTest, TableWithTransformsAndLabels) {
  EXPECT_EQ(Out("table(jobId,state,createTime.date())"),
            "JOB_ID             STATE      CREATE_TIME\n"
            "census_1           SUCCEEDED  2024-03-10T10:00:00\n"
            "a_much_longer_job  RUNNING    2024-03-08T10:00:00\n");
  // tz=LOCAL: New York is UTC-4 on 2024-03-10 (after the change) and UTC-5 on 03-08.
  EXPECT_EQ(Out("table(jobId.basename(), state:label=STATUS, "
                "createTime.date(tz=LOCAL):label=CREATED)"),
            "JOB_ID             STATUS     CREATED\n"
            "census_1           SUCCEEDED  2024-03-10T06:00:00\n"
            "a_much_longer_job  RUNNING    2024-03-08T05:00:00\n");
  EXPECT_EQ(Out("table[no-heading](jobId, createTime.date('%Y-%m-%d', tz=UTC))"),
            "census_1           2024-03-10\n"
            "a_much_longer_job  2024-03-08\n");
}

TEST_F(FormatTest, TableAlignSortAndEmptyLastColumn) {
  EXPECT_EQ(Out("table(trainingInput.workerCount:align=right:sort=1, labels.owner)"),
            "WORKER_COUNT  OWNER\n"
            "          10\n"  // the values are strings: "10" < "4"
            "           4  alice\n");
  EXPECT_EQ(Out("table(jobId:sort=1:reverse)"), "JOB_ID\ncensus_1\na_much_longer_job\n");
}

TEST_F(FormatTest, BoxTableWithTitle) {
  std::string box = Out("table[box](jobId,state)");
  EXPECT_EQ(box,
            "┌───────────────────┬───────────┐\n"
            "│       JOB_ID      │   STATE   │\n"
            "├───────────────────┼───────────┤\n"
            "│ census_1          │ SUCCEEDED │\n"
            "│ a_much_longer_job │ RUNNING   │\n"
            "└───────────────────┴───────────┘\n");
}

TEST_F(FormatTest, ValueCsvGet) {
  EXPECT_EQ(Out("value(jobId,labels,trainingInput.args)"),
            "census_1\towner=alice;team=ml\t--epochs;5\n"
            "a_much_longer_job\t\t\n");
  EXPECT_EQ(Out("value[separator=','](jobId,state)"),
            "census_1,SUCCEEDED\na_much_longer_job,RUNNING\n");
  EXPECT_EQ(Out("get(jobId)"), "census_1\na_much_longer_job\n");
  EXPECT_EQ(Out("csv(jobId,state,trainingOutput.consumedMLUnits)"),
            "job_id,state,consumed_mlunits\n"  // gcloud's snake case of "MLUnits"

            "census_1,SUCCEEDED,0.5\n"
            "a_much_longer_job,RUNNING,\n");
  EXPECT_EQ(Out("csv[no-heading](jobId,trainingInput.args)"),
            "census_1,--epochs;5\na_much_longer_job,\n");
}

TEST_F(FormatTest, CsvQuotesWhenNeeded) {
  jobs_ = {Json::parse(R"({"jobId":"j","errorMessage":"a, \"b\""})")};
  EXPECT_EQ(Out("csv[no-heading](jobId,errorMessage)"), "j,\"a, \"\"b\"\"\"\n");
}

TEST_F(FormatTest, ProjectObjectForJsonAndYaml) {
  auto f = ParseFormat("json(jobId,trainingInput.workerCount)");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(ProjectObject(*f, jobs_[0]).dump(),
            R"({"jobId":"census_1","trainingInput":{"workerCount":"4"}})");
  auto plain = ParseFormat("json");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(ProjectObject(*plain, jobs_[0]), jobs_[0]);
}

TEST_F(FormatTest, Errors) {
  EXPECT_FALSE(ParseFormat("flattened").ok());
  EXPECT_FALSE(ParseFormat("table").ok());  // needs columns
  EXPECT_FALSE(ParseFormat("table(jobId").ok());
  EXPECT_FALSE(ParseFormat("table(jobId:nosuch=1)").ok());
  EXPECT_FALSE(ParseFormat("table(jobId.nosuch())").ok());
  EXPECT_FALSE(ParseFormat("1table(jobId)").ok());
}

TEST_F(FormatTest, DuplicateLabelsAreDisambiguated) {
  auto f = ParseFormat("table(labels.owner, owner, trainingInput.workerCount)");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->columns[0].label, "OWNER");
  EXPECT_EQ(f->columns[1].label, "OWNER");  // nothing left to add
  EXPECT_EQ(f->columns[2].label, "WORKER_COUNT");
  auto g = ParseFormat("table(labels.owner, x.owner)");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->columns[1].label, "X_OWNER");
}

TEST_F(FormatTest, SortByUsesPythonStrOrder) {
  std::vector<Json> js = jobs_;
  // As text, "10" < "4" (gcloud compares str() of the values).
  ASSERT_TRUE(SortBy({"trainingInput.workerCount"}, &js).ok());
  EXPECT_EQ(js[0]["jobId"], "a_much_longer_job");
  ASSERT_TRUE(SortBy({"~jobId"}, &js).ok());
  EXPECT_EQ(js[0]["jobId"], "census_1");
  // A missing value sorts as "None".
  ASSERT_TRUE(SortBy({"labels.owner"}, &js).ok());
  EXPECT_EQ(js[0]["jobId"], "a_much_longer_job");  // "None" < "alice"
  EXPECT_FALSE(SortBy({"a..b"}, &js).ok());
  // gcloud cannot look into a map field: every job's labels.owner is None, the order stays.
  ASSERT_TRUE(SortBy({"jobId"}, &js).ok());
  ASSERT_TRUE(SortBy({"~labels.owner"}, &js, {"labels"}).ok());
  EXPECT_EQ(js[0]["jobId"], "a_much_longer_job");
}

TEST(ValueTest, PythonStr) {
  EXPECT_EQ(PyStr(Json(0.1)), "0.1");
  EXPECT_EQ(PyStr(Json(1.0)), "1.0");
  EXPECT_EQ(PyStr(Json(1e16)), "1e+16");
  EXPECT_EQ(PyStr(Json(1.5e-5)), "1.5e-05");
  EXPECT_EQ(PyStr(Json(true)), "True");
  EXPECT_EQ(PyStr(Json(nullptr)), "None");
  EXPECT_EQ(PyStr(Json::parse(R"({"a":"b","c":[1,"d"]})")), "{'a': 'b', 'c': [1, 'd']}");
}

TEST(ValueTest, RelativeAndAbsoluteTimes) {
  setenv("TZ", "UTC", 1);
  tzset();
  const Timestamp now = 1710072000LL * kMicrosPerSecond;  // 2024-03-10T12:00:00Z
  auto day = ParseDateTime("-P1D", now, true);
  ASSERT_TRUE(day);
  EXPECT_EQ(day->micros, now - 86400 * kMicrosPerSecond);
  auto month = ParseDateTime("-P1M", now, true);
  ASSERT_TRUE(month);
  EXPECT_EQ(FormatDateTime(month->micros, "%Y-%m-%dT%H:%M:%S", false), "2024-02-10T12:00:00");
  auto ahead = ParseDateTime("PT1H30M", now, true);
  ASSERT_TRUE(ahead);
  EXPECT_EQ(ahead->micros, now + 5400 * kMicrosPerSecond);
  auto abs = ParseDateTime("2024-01-02T03:04:05.5+01:00", now, true);
  ASSERT_TRUE(abs);
  EXPECT_EQ(FormatDateTime(abs->micros, "%Y-%m-%dT%H:%M:%S.%3f", false), "2024-01-02T02:04:05.500");
  EXPECT_FALSE(ParseDateTime("yesterday", now, true));
  EXPECT_FALSE(ParseDateTime("P", now, true) && false);
}

}  // namespace
}  // namespace trainyard::resource
