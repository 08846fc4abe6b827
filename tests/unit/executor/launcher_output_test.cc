#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "output.h"

namespace trainyard::launcher {
namespace {

std::vector<std::string> Split(const std::vector<std::string>& chunks, size_t max_line = 1 << 20) {
  LineAssembler a(max_line);
  std::vector<std::string> out;
  auto fn = [&](std::string_view l) { out.emplace_back(l); };
  for (const std::string& c : chunks) a.Feed(c, fn);
  a.Finish(fn);
  return out;
}

using Lines = std::vector<std::string>;

TEST(LineAssemblerTest, SplitsOnNewlinesAndKeepsEmptyLines) {
  EXPECT_EQ(Split({"a\nb\n\nc\n"}), (Lines{"a", "b", "", "c"}));
}

TEST(LineAssemblerTest, JoinsPartialLinesAcrossChunks) {
  EXPECT_EQ(Split({"hel", "lo\nwor", "ld\n"}), (Lines{"hello", "world"}));
}

TEST(LineAssemblerTest, EmitsTheUnterminatedLastLineAtFinish) {
  EXPECT_EQ(Split({"a\nno newline"}), (Lines{"a", "no newline"}));
}

TEST(LineAssemblerTest, TreatsCrLfAsOneLineEnd) {
  EXPECT_EQ(Split({"a\r\nb\r\n"}), (Lines{"a", "b"}));
  EXPECT_EQ(Split({"a\r", "\nb\n"}), (Lines{"a", "b"}));
}

TEST(LineAssemblerTest, SplitsProgressBarsOnCarriageReturns) {
  EXPECT_EQ(Split({"\r 10%", "\r 50%\r100%\n"}), (Lines{" 10%", " 50%", "100%"}));
}

TEST(LineAssemblerTest, CutsVeryLongLines) {
  Lines out = Split({std::string(10, 'x') + "\n"}, 4);
  EXPECT_EQ(out, (Lines{"xxxx", "xxxx", "xx"}));
  out = Split({std::string(6, 'y'), std::string(3, 'y') + "\n"}, 4);
  EXPECT_EQ(out, (Lines{"yyyy", "yyyy", "y"}));
}

TEST(LineAssemblerTest, CutsLongLinesAtUtf8Boundaries) {
  // "aaé" is 4 bytes; a cut at 3 would split the "é".
  Lines out = Split({"aa\xC3\xA9zz\n"}, 3);
  EXPECT_EQ(out, (Lines{"aa", "\xC3\xA9z", "z"}));
}

TEST(StderrTailTest, KeepsTheLastLinesInOrder) {
  StderrTail tail(3);
  for (const char* l : {"1", "2", "3", "4", "5"}) tail.Add(l);
  EXPECT_EQ(tail.Lines(), (Lines{"3", "4", "5"}));
  StderrTail few(3);
  few.Add("only");
  EXPECT_EQ(few.Lines(), (Lines{"only"}));
}

TEST(BuildErrorTailTest, KeepsAShortTracebackWhole) {
  Lines lines = {"some log",
                 "Traceback (most recent call last):", "  File \"/t/task.py\", line 3, in <module>",
                 "    main()", "ValueError: boom"};
  EXPECT_EQ(BuildErrorTail(lines),
            "Traceback (most recent call last):\n  File \"/t/task.py\", line 3, in <module>\n"
            "    main()\nValueError: boom");
}

TEST(BuildErrorTailTest, ElidesTheMiddleOfALongTraceback) {
  Lines lines = {"Traceback (most recent call last):"};
  for (int i = 0; i < 20; ++i) {
    lines.push_back("  File \"/t/task.py\", line " + std::to_string(i) + ", in f");
    lines.push_back("    f(n - 1)");
  }
  lines.push_back("RecursionError: deep");
  std::string tail = BuildErrorTail(lines);
  EXPECT_EQ(tail.rfind("Traceback (most recent call last):\n[...]\n", 0), 0u) << tail;
  EXPECT_NE(tail.find("line 19, in f"), std::string::npos);
  EXPECT_EQ(tail.find("line 0, in f"), std::string::npos);
  EXPECT_EQ(tail.substr(tail.size() - 20), "RecursionError: deep");
}

TEST(BuildErrorTailTest, UsesTheLastTraceback) {
  Lines lines = {"Traceback (most recent call last):",
                 "  File \"a\", line 1",
                 "KeyError: 1",
                 "During handling of the above exception, another exception occurred:",
                 "",
                 "Traceback (most recent call last):",
                 "  File \"b\", line 2",
                 "RuntimeError: second"};
  EXPECT_EQ(BuildErrorTail(lines),
            "Traceback (most recent call last):\n  File \"b\", line 2\nRuntimeError: second");
}

TEST(BuildErrorTailTest, FallsBackToTheLastLines) {
  Lines lines = {"1", "2", "3", "4", "5", "6", "fatal: out of memory", ""};
  EXPECT_EQ(BuildErrorTail(lines), "3\n4\n5\n6\nfatal: out of memory");
  EXPECT_EQ(BuildErrorTail({}), "");
}

}  // namespace
}  // namespace trainyard::launcher
