#include "log_filter.h"

#include <gtest/gtest.h>

#include "trainyard/core/time.h"

namespace trainyard::api {
namespace {

model::LogEntry Entry(int64_t id, const std::string& task, const std::string& ts,
                      model::Severity sev = model::Severity::kInfo) {
  model::LogEntry e;
  e.insert_id = id;
  e.project = "p";
  e.job_id = "j1";
  e.task_name = task;
  e.timestamp = ParseRfc3339(ts).value();
  e.severity = sev;
  e.message = "line " + std::to_string(id);
  return e;
}

bool Matches(const std::string& filter, const model::LogEntry& e) {
  auto f = LogFilter::Parse(filter);
  EXPECT_TRUE(f.ok()) << filter << ": " << f.status().message();
  return f.ok() && f->Matches(e);
}

TEST(LogFilterTest, MatchesStreamLogsFilters) {
  auto e = Entry(7, "master-replica-0", "2026-01-01T10:00:00.5Z");
  EXPECT_TRUE(Matches(R"((resource.type="ml_job" OR resource.type="cloudml_job"))", e));
  EXPECT_TRUE(Matches(R"(resource.type="ml_job" AND resource.labels.job_id="j1")", e));
  EXPECT_FALSE(Matches(R"(resource.labels.job_id="j2")", e));
  EXPECT_TRUE(Matches(
      R"((resource.labels.task_name="master-replica-0" OR labels.task_name="master-replica-0"))",
      e));
  EXPECT_FALSE(Matches(R"(resource.labels.task_name="service")", e));
  EXPECT_TRUE(Matches(R"(timestamp>="1970-01-01T01:00:00.000000000Z")", e));
  EXPECT_TRUE(Matches(R"(timestamp<"2026-01-01T10:00:01.000000+00:00")", e));
  EXPECT_FALSE(Matches(R"(timestamp<"2026-01-01T10:00:00.500000Z")", e));
  EXPECT_FALSE(Matches(R"(timestamp>"2026-01-01T10:00:00.500000Z")", e));
}

TEST(LogFilterTest, CursorFormComparesInsertIdsNumerically) {
  const std::string t = "2026-01-01T10:00:00.500000Z";
  auto cursor = [&](const std::string& id) {
    return R"(((timestamp=")" + t + R"(" AND insertId>")" + id + R"(") OR timestamp>")" + t +
           R"("))";
  };
  auto e = Entry(10, "master-replica-0", t);
  EXPECT_TRUE(Matches(cursor(PaddedInsertId(9)), e));
  EXPECT_TRUE(Matches(cursor("9"), e));  // unpadded ids compare as numbers
  EXPECT_FALSE(Matches(cursor(PaddedInsertId(10)), e));
  EXPECT_TRUE(Matches(cursor(PaddedInsertId(99)), Entry(100, "m", "2026-01-01T10:00:01Z")));
}

TEST(LogFilterTest, SeverityLogicAndImplicitAnd) {
  auto warn = Entry(1, "master-replica-0", "2026-01-01T10:00:00Z", model::Severity::kWarning);
  auto info = Entry(2, "master-replica-0", "2026-01-01T10:00:00Z");
  EXPECT_TRUE(Matches("severity>=WARNING", warn));
  EXPECT_FALSE(Matches("severity>=warning", info));
  EXPECT_TRUE(Matches("NOT severity>=WARNING", info));
  EXPECT_TRUE(Matches("-severity=ERROR resource.labels.job_id=j1", info));
  EXPECT_FALSE(Matches("severity=INFO resource.labels.job_id=other", info));
  EXPECT_TRUE(Matches(R"(logName="projects/p/logs/master-replica-0")", info));
  EXPECT_TRUE(Matches(R"(jsonPayload.message:"LINE 2")", info));
  EXPECT_FALSE(Matches(R"(textPayload:*)", info));
  EXPECT_TRUE(Matches(R"(labels."ml.googleapis.com/task_name"="master-replica-0")", info));
  EXPECT_FALSE(Matches(R"(labels.trial_id:*)", info));
  EXPECT_FALSE(Matches(R"(no.such.field="x")", info));
  EXPECT_TRUE(Matches("", info));
}

TEST(LogFilterTest, RejectsMalformedFiltersNamingTheProblem) {
  for (const char* bad : {"(severity=INFO", "timestamp>=\"yesterday\"", "severity>=LOUD",
                          "free text", "resource.type=\"ml_job", "logName=~\"x\"", "a=b OR", ")"}) {
    auto f = LogFilter::Parse(bad);
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(f.status().message().find("filter"), std::string::npos) << bad;
  }
  std::string deep(200, '(');
  EXPECT_FALSE(LogFilter::Parse(deep + "a=b" + std::string(200, ')')).ok());
}

TEST(LogFilterTest, PushesDownWhatEveryMatchMustSatisfy) {
  auto f = LogFilter::Parse(
      R"((resource.type="ml_job" OR resource.type="cloudml_job") AND resource.labels.job_id="j1" )"
      R"(AND (resource.labels.task_name="t" OR labels.task_name="t") AND )"
      R"(((timestamp="2026-01-01T10:00:00Z" AND insertId>"00000000000000000005") OR )"
      R"(timestamp>"2026-01-01T10:00:00Z") AND timestamp<"2026-01-01T11:00:00Z")");
  ASSERT_TRUE(f.ok()) << f.status().message();
  store::LogQuery q;
  f->PushDown(&q);
  EXPECT_EQ(q.job_id, "j1");
  EXPECT_EQ(q.task_name, "t");
  EXPECT_EQ(q.min_timestamp, ParseRfc3339("2026-01-01T10:00:00Z").value());
  EXPECT_EQ(q.max_timestamp, ParseRfc3339("2026-01-01T11:00:00Z").value());
  EXPECT_EQ(q.after_insert_id, 0);  // the OR keeps entries after the timestamp with any id

  auto g = LogFilter::Parse(R"(resource.labels.task_name="a" OR resource.labels.task_name="b")");
  ASSERT_TRUE(g.ok());
  store::LogQuery q2;
  g->PushDown(&q2);
  EXPECT_EQ(q2.task_name, "");
  auto h = LogFilter::Parse(R"(insertId>"41" NOT resource.labels.job_id="x")");
  ASSERT_TRUE(h.ok());
  store::LogQuery q3;
  h->PushDown(&q3);
  EXPECT_EQ(q3.after_insert_id, 41);
  EXPECT_EQ(q3.job_id, "");
}

TEST(LogFilterTest, PadsInsertIdsToAFixedWidth) {
  EXPECT_EQ(PaddedInsertId(42), "00000000000000000042");
  EXPECT_LT(PaddedInsertId(9), PaddedInsertId(10));
}

}  // namespace
}  // namespace trainyard::api
