#include "log_format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "time_format.h"

namespace trainyard::cli {
namespace {

class LogFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    saved_ = tz ? tz : "";
    had_tz_ = tz != nullptr;
    // A POSIX rule (no tzdata needed): UK time, +0100 in summer.
    setenv("TZ", "GMT0BST,M3.5.0/1,M10.5.0", 1);
    tzset();
  }
  void TearDown() override {
    if (had_tz_) {
      setenv("TZ", saved_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }
  std::string saved_;
  bool had_tz_ = false;
};

client::LogEntry Entry(std::string message, std::string trial = "") {
  client::LogEntry e;
  e.insert_id = "7";
  e.timestamp = "2018-04-11T16:03:18.123456Z";
  e.severity = "INFO";
  e.task_name = "master-replica-0";
  e.trial_id = std::move(trial);
  e.message = std::move(message);
  return e;
}

TEST_F(LogFormatTest, FormatsLikeGcloudValuePrinterInLocalTime) {
  auto lines = FormatLogEntry(Entry("Copying gs://b/x"), false);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "INFO\t2018-04-11 17:03:18 +0100\tmaster-replica-0\t\tCopying gs://b/x\n");
}

TEST_F(LogFormatTest, PrintsTrialColumnWhenPresent) {
  auto lines = FormatLogEntry(Entry("m", "3"), false);
  EXPECT_EQ(lines[0], "INFO\t2018-04-11 17:03:18 +0100\tmaster-replica-0\t3\tm\n");
}

TEST_F(LogFormatTest, SplitsMultilineMessagesUnlessAllowed) {
  auto lines = FormatLogEntry(Entry("Traceback:\n  File x\r\nError"), false);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "INFO\t2018-04-11 17:03:18 +0100\tmaster-replica-0\t\t  File x\n");
  auto whole = FormatLogEntry(Entry("a\nb"), true);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0], "INFO\t2018-04-11 17:03:18 +0100\tmaster-replica-0\t\ta\nb\n");
}

TEST_F(LogFormatTest, EmptyMessageStillPrintsALine) {
  auto lines = FormatLogEntry(Entry(""), false);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "INFO\t2018-04-11 17:03:18 +0100\tmaster-replica-0\t\t\n");
}

TEST_F(LogFormatTest, SplitsLinesLikePython) {
  EXPECT_EQ(SplitMessageLines("a\n"), std::vector<std::string>{"a"});
  EXPECT_EQ(SplitMessageLines("a\n\nb"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(SplitMessageLines("a\rb\fc"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(SplitMessageLines("a\xe2\x80\xa8"
                              "b"),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(SplitMessageLines(""), std::vector<std::string>{""});
}

TEST_F(LogFormatTest, RendersListDatesInLocalTime) {
  EXPECT_EQ(LocalDateTime("2019-01-10T12:00:00Z"), "2019-01-10T12:00:00");
  EXPECT_EQ(LocalDateTime("2019-07-10T12:00:00Z"), "2019-07-10T13:00:00");
  EXPECT_EQ(LocalDateTime("not a time"), "not a time");
}

}  // namespace
}  // namespace trainyard::cli
