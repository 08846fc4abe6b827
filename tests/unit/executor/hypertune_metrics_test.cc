#include "hypertune_metrics.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace trainyard::executor {
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

TEST(HpMetricsTest, MetricTagsAreTheNumericKeysBesideHypertunesOwn) {
  const std::string text =
      R"({"checkpoint_path": "", "global_step": "10", "loss": "0.5", "timestamp": 1.5, "trial": "1"})"
      "\n"
      R"({"acc": 0.9, "note": "not a number", "global_step": "11", "timestamp": 2})"
      "\n"
      "not json\n"
      R"({"acc": "0.95", "loss": "nan", "timestamp": 3})"
      "\n"
      R"({"zeta": "1"})";
  EXPECT_EQ(MetricTagsInFile(text), (std::vector<std::string>{"acc", "loss", "zeta"}));
  EXPECT_TRUE(MetricTagsInFile("").empty());
  EXPECT_TRUE(MetricTagsInFile(R"({"timestamp": 1, "global_step": "3", "trial": "2"})").empty());
}

TEST(HpMetricsTest, MetricTagsAreBoundedInNumberAndLength) {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "{\"t" + std::to_string(100 + i) + "\": 1}\n";
  // A long tag with a two-byte character across the cut: cut before it, not inside it.
  const std::string long_tag = std::string(kMaxMetricTagBytes - 1, 'a') + "\xc3\xa9tail";
  const auto tags = MetricTagsInFile(text);
  ASSERT_EQ(tags.size(), kMaxMetricTags);
  EXPECT_EQ(tags.front(), "t100");
  const auto cut = MetricTagsInFile("{\"" + long_tag + "\": 2}\n");
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0], std::string(kMaxMetricTagBytes - 1, 'a') + "...");
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

TEST(HpMetricsTest, OnlyRegularFilesAreReadAndOnlyTheirLastMiB) {
  const std::string dir = ::testing::TempDir() + "/ty_metric_file_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(ReadMetricFile(dir + "/absent").has_value());
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_FALSE(ReadMetricFile(dir + "/fifo").has_value()) << "a FIFO must not block the reader";
  std::filesystem::create_symlink("/dev/zero", dir + "/link");
  EXPECT_FALSE(ReadMetricFile(dir + "/link").has_value());
  {
    std::ofstream big(dir + "/big");
    const std::string line(99, 'x');
    for (int i = 0; i < 20000; ++i) big << line << "\n";  // 2 MB
    big << "{\"m\": \"1\"}\n";
  }
  auto text = ReadMetricFile(dir + "/big");
  ASSERT_TRUE(text.has_value());
  EXPECT_LE(text->size(), size_t{1} << 20);
  EXPECT_EQ(text->substr(text->size() - 11), "{\"m\": \"1\"}\n");
  EXPECT_EQ(text->front(), 'x') << "the cut first line is dropped, whole lines remain";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainyard::executor
