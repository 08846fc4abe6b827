// Severity of trainer output lines: one test per log format (src/launcher/output.h).
#include <gtest/gtest.h>

#include "output.h"

namespace trainyard::launcher {
namespace {

using model::Severity;

// Both streams: a recognised format decides regardless of the stream.
void ExpectBoth(std::string_view line, Severity want) {
  EXPECT_EQ(ClassifyLine(line, false), want) << "stdout: " << line;
  EXPECT_EQ(ClassifyLine(line, true), want) << "stderr: " << line;
}

// Neither: the stream decides (stdout INFO, stderr ERROR; compat §11.1).
void ExpectStream(std::string_view line) {
  EXPECT_EQ(ClassifyLine(line, false), Severity::kInfo) << "stdout: " << line;
  EXPECT_EQ(ClassifyLine(line, true), Severity::kError) << "stderr: " << line;
}

TEST(ClassifyLineTest, WithoutAFormatTheStreamDecides) {
  ExpectStream("hello");
  ExpectStream("");
  ExpectStream("Epoch 1/10");
  ExpectStream("100/100 [==============================] - 1s 5ms/step - loss: 0.1");
  ExpectStream("  File \"/x/task.py\", line 3, in <module>");
  ExpectStream("ValueError: bad");
  ExpectStream("Traceback (most recent call last):");
}

TEST(ClassifyLineTest, PythonLoggingDefaultFormat) {
  ExpectBoth("INFO:root:step 1", Severity::kInfo);
  ExpectBoth("WARNING:tensorflow:careful", Severity::kWarning);
  ExpectBoth("DEBUG:x:y", Severity::kDebug);
  ExpectBoth("ERROR:root:bad", Severity::kError);
  ExpectBoth("CRITICAL:root:dead", Severity::kCritical);
}

TEST(ClassifyLineTest, PythonLoggingWithAsctime) {
  ExpectBoth("2024-01-01 12:00:00,123 INFO starting", Severity::kInfo);
  ExpectBoth("2024-01-01 12:00:00,123 WARNING low memory", Severity::kWarning);
  ExpectBoth("2024-01-01 12:00:00,123 - root - INFO - epoch 1", Severity::kInfo);
  ExpectBoth("2024-01-01 12:00:00,123 - my.module - ERROR - failed", Severity::kError);
  ExpectBoth("2024-01-01 12:00:00,123:DEBUG:root:x", Severity::kDebug);
  ExpectBoth("2024-01-01 12:00:00 INFO     padded levelname", Severity::kInfo);
  ExpectBoth("2024-01-01T12:00:00.123Z WARN something", Severity::kWarning);
  ExpectBoth("2024-01-01T12:00:00+01:00 ERROR something", Severity::kError);
  ExpectBoth("2024-01-01 12:00:00,123 | INFO | x", Severity::kInfo);
  // Hydra / Lightning: "[time][logger][LEVEL] - msg".
  ExpectBoth("[2024-01-01 12:00:00,123][root][INFO] - hello", Severity::kInfo);
  ExpectBoth("[2024-01-01 12:00:00,123] WARNING x", Severity::kWarning);
  ExpectBoth("2024-01-01 12:00:00,123 [ERROR] x", Severity::kError);
}

TEST(ClassifyLineTest, AbslAndGlog) {
  ExpectBoth("I1124 12:00:00.123456 140 file.py:12] info", Severity::kInfo);
  ExpectBoth("W1124 12:00:00.123456 140 file.py:12] w", Severity::kWarning);
  ExpectBoth("E1124 12:00:00.123456 140 file.py:12] e", Severity::kError);
  ExpectBoth("F1124 12:00:00.123456 140 file.py:12] f", Severity::kCritical);
  // TensorFlow's C++ logging.
  ExpectBoth("2023-01-02 12:34:56.123456: W tensorflow/x.cc:1] w", Severity::kWarning);
  ExpectBoth("2023-01-02 12:34:56.123456: I tensorflow/x.cc:1] i", Severity::kInfo);
  ExpectBoth("2023-01-02 12:34:56.123456: E tensorflow/x.cc:1] e", Severity::kError);
}

TEST(ClassifyLineTest, BracketedLevels) {
  ExpectBoth("[INFO] hello", Severity::kInfo);
  ExpectBoth("[WARNING] x", Severity::kWarning);
  ExpectBoth("[ error ] x", Severity::kError);
  ExpectBoth("[debug] x", Severity::kDebug);
  ExpectStream("[1/3] building");
  ExpectStream("[notalevel] x");
}

TEST(ClassifyLineTest, LevelWordFirst) {
  ExpectBoth("WARNING something", Severity::kWarning);
  ExpectBoth("WARN: close", Severity::kWarning);
  ExpectBoth("ERROR: x", Severity::kError);
  ExpectBoth("INFO - x", Severity::kInfo);
  ExpectBoth("FATAL x", Severity::kCritical);
  ExpectBoth("NOTICE x", Severity::kNotice);
  ExpectBoth("TRACE x", Severity::kDebug);
  ExpectBoth("INFO", Severity::kInfo);
}

TEST(ClassifyLineTest, LookalikesAreNotLevels) {
  ExpectStream("Information follows");
  ExpectStream("I1121 is a number");
  ExpectStream("INFOS x");
  ExpectStream("ERRORS: 3");
  ExpectStream("Error: lowercase words are text");
  ExpectStream("Warning: so are these");
  ExpectStream("EPOCH 3");
  ExpectStream("2024-01-01 results are in");
  ExpectStream("2024-01-01 12:00:00,123 loss=0.5 INFO later in the line");
  ExpectStream("2024-01-01 12:00:00 step 3, loss 0.5, ERROR rate 2%");
}

TEST(ClassifyLineTest, JsonLines) {
  ExpectBoth(R"({"severity": "WARNING", "message": "x"})", Severity::kWarning);
  ExpectBoth(R"({"message":"x","severity":"error"})", Severity::kError);
  ExpectBoth(R"({"level":"info","msg":"x"})", Severity::kInfo);
  ExpectBoth(R"({"levelname": "DEBUG", "message": "x"})", Severity::kDebug);
  ExpectBoth(R"({"level":"warn"})", Severity::kWarning);
  ExpectStream(R"({"message": "no level"})");
  ExpectStream(R"({"level": 30})");
  ExpectStream(R"({"severity": "LOUD"})");
}

}  // namespace
}  // namespace trainyard::launcher
