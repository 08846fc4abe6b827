#include "hp_metrics.h"

#include <gtest/gtest.h>

namespace trainyard::scheduler {
namespace {

TEST(HpMetricsTest, ReadsHypertuneLinesWithStringValues) {
  const std::string text =
      R"({"checkpoint_path": "", "global_step": "1000", "my tag": "0.987", "timestamp": 1525851440.5, "trial": "1"})"
      "\n"
      R"({"checkpoint_path": "", "global_step": "1100", "my tag": "0.99", "timestamp": 1525851441.5, "trial": "1"})"
      "\n";
  auto records = ParseMetricFile(text, "my tag");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].step, 1000);
  EXPECT_DOUBLE_EQ(records[0].value, 0.987);
  EXPECT_DOUBLE_EQ(records[1].timestamp, 1525851441.5);
  auto last = LatestRecord(records);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->step, 1100);
}

TEST(HpMetricsTest, SkipsOtherTagsBrokenLinesAndNonNumbers) {
  const std::string text =
      "{\"other\": \"1\", \"timestamp\": 1}\n"
      "{\"loss\": \"0.5\", \"timestamp\": 2, \"global_step\": \"3\"\n"  // cut mid-write
      "not json at all loss\n"
      "{\"loss\": \"nan\", \"timestamp\": 3}\n"
      "{\"loss\": \"abc\", \"timestamp\": 4}\n"
      "{\"loss\": 0.25, \"timestamp\": 5, \"global_step\": 7}\n"
      "{\"loss\": \"0.5\"}";  // no newline at the end, no step, no timestamp
  auto records = ParseMetricFile(text, "loss");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_DOUBLE_EQ(records[0].value, 0.25);
  EXPECT_EQ(records[0].step, 7);
  EXPECT_EQ(records[1].step, 0);
  EXPECT_FALSE(LatestRecord({}).has_value());
}

TEST(HpMetricsTest, TagsJsonEscapesAreFound) {
  // json.dumps escapes non-ASCII: the tag "précision" is written as "pr\u00e9cision".
  const std::string text = "{\"pr\\u00e9cision\": \"0.5\", \"timestamp\": 1}\n";
  auto records = ParseMetricFile(text,
                                 "pr\xc3\xa9"
                                 "cision");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_DOUBLE_EQ(records[0].value, 0.5);
}

TEST(HpMetricsTest, NonFiniteTimestampsAndHugeStepsAreHarmless) {
  const std::string text =
      "{\"m\": \"1\", \"timestamp\": \"nan\"}\n"
      "{\"m\": \"2\", \"timestamp\": \"inf\"}\n"
      "{\"m\": \"3\", \"timestamp\": 5, \"global_step\": \"1e30\"}\n";
  auto records = ParseMetricFile(text, "m");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_DOUBLE_EQ(records[0].value, 3);
  EXPECT_GT(records[0].step, int64_t{1} << 62);
}

TEST(HpMetricsTest, TiesOnTimestampGoToTheHighestStep) {
  std::vector<MetricRecord> r = {{5, 10, 0.1}, {5, 12, 0.2}, {5, 11, 0.3}, {4, 99, 0.4}};
  EXPECT_EQ(LatestRecord(r)->step, 12);
}

}  // namespace
}  // namespace trainyard::scheduler
