#include "printers.h"

#include <gtest/gtest.h>

namespace trainyard::cli {
namespace {

std::string Yaml(const std::string& json, YamlOptions o = {}) {
  auto r = JsonToYaml(json, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

TEST(YamlPrinterTest, PrintsAJobLikeGcloudDescribe) {
  const char* job = R"({
    "jobId": "census_1", "state": "SUCCEEDED", "createTime": "2026-11-21T10:00:00Z",
    "etag": "fhCHZ7hsq10=", "labels": {"team": "ml"},
    "trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-4",
      "args": ["--train-steps", "1000", "--verbosity=DEBUG"],
      "packageUris": ["gs://b/census_1/abc/trainer-0.0.tar.gz"],
      "pythonModule": "trainer.task", "region": "us-central1", "runtimeVersion": "2.11",
      "pythonVersion": "3.7", "workerCount": "2", "workerType": "n1-standard-4",
      "masterConfig": {"acceleratorConfig": {"count": "1", "type": "NVIDIA_TESLA_T4"}}},
    "trainingOutput": {"consumedMLUnits": 0.04}})";
  EXPECT_EQ(Yaml(job),
            "createTime: '2026-11-21T10:00:00Z'\n"
            "etag: fhCHZ7hsq10=\n"
            "jobId: census_1\n"
            "labels:\n"
            "  team: ml\n"
            "state: SUCCEEDED\n"
            "trainingInput:\n"
            "  args:\n"
            "  - --train-steps\n"
            "  - '1000'\n"
            "  - --verbosity=DEBUG\n"
            "  masterConfig:\n"
            "    acceleratorConfig:\n"
            "      count: 1\n"
            "      type: NVIDIA_TESLA_T4\n"
            "  masterType: n1-standard-4\n"
            "  packageUris:\n"
            "  - gs://b/census_1/abc/trainer-0.0.tar.gz\n"
            "  pythonModule: trainer.task\n"
            "  pythonVersion: '3.7'\n"
            "  region: us-central1\n"
            "  runtimeVersion: '2.11'\n"
            "  scaleTier: CUSTOM\n"
            "  workerCount: 2\n"
            "  workerType: n1-standard-4\n"
            "trainingOutput:\n"
            "  consumedMLUnits: 0.04\n");
}

TEST(YamlPrinterTest, PrintsTrialsAsMappingsInsideSequences) {
  const char* json = R"({"trainingOutput": {"completedTrialCount": "2", "trials": [
      {"trialId": "1", "hyperparameters": {"lr": "0.40692436410083732"},
       "finalMetric": {"trainingStep": "1000", "objectiveValue": 0.92}}]}})";
  EXPECT_EQ(Yaml(json),
            "trainingOutput:\n"
            "  completedTrialCount: 2\n"
            "  trials:\n"
            "  - finalMetric:\n"
            "      objectiveValue: 0.92\n"
            "      trainingStep: 1000\n"
            "    hyperparameters:\n"
            "      lr: '0.40692436410083732'\n"
            "    trialId: '1'\n");
}

TEST(YamlPrinterTest, QuotesStringsThatReadBackAsOtherTypes) {
  EXPECT_EQ(Yaml(R"({"a": "true", "b": "null", "c": "", "d": "1e5", "e": "yes", "f": "~"})"),
            "a: 'true'\nb: 'null'\nc: ''\nd: '1e5'\ne: yes\nf: '~'\n");
}

TEST(YamlPrinterTest, QuotesStringsWithIndicators) {
  EXPECT_EQ(Yaml(R"({"a": "x: y", "b": "#c", "c": "- d", "d": "a #b", "e": " lead", "f": "@x"})"),
            "a: 'x: y'\nb: '#c'\nc: '- d'\nd: 'a #b'\ne: ' lead'\nf: '@x'\n");
  EXPECT_EQ(Yaml(R"({"a": "it's: here", "b": "tab\there"})"),
            "a: \"it's: here\"\nb: \"tab\\there\"\n");
}

TEST(YamlPrinterTest, PrintsMultilineStringsAsLiteralBlocks) {
  EXPECT_EQ(Yaml(R"({"errorMessage": "The replica master 0 exited.\nTraceback: x", "z": 1})"),
            "errorMessage: |-\n"
            "  The replica master 0 exited.\n"
            "  Traceback: x\n"
            "z: 1\n");
  EXPECT_EQ(Yaml(R"({"m": "a\n\nb\n"})"), "m: |\n  a\n\n  b\n");
}

TEST(YamlPrinterTest, FoldsLongScalarsAtEightyColumns) {
  std::string words;
  for (int i = 0; i < 20; ++i) words += "word ";
  words += "end";
  EXPECT_EQ(Yaml("{\"a\": \"" + words + "\"}"),
            "a: word word word word word word word word word word word word word word word word\n"
            "  word word word word end\n");
  EXPECT_EQ(
      Yaml(
          R"({"errorMessage": "The replica master 0 exited with a non-zero status of 1. Termination reason: Error."})"),
      "errorMessage: 'The replica master 0 exited with a non-zero status of 1. Termination\n"
      "  reason: Error.'\n");
}

TEST(YamlPrinterTest, EmptyContainersAndScalars) {
  EXPECT_EQ(Yaml(R"({"a": {}, "b": [], "c": null, "d": true, "e": 3, "f": 2.5})"),
            "a: {}\nb: []\nc: null\nd: true\ne: 3\nf: 2.5\n");
}

TEST(YamlPrinterTest, KeepsDocumentOrderWhenAsked) {
  YamlOptions o;
  o.sort_keys = false;
  EXPECT_EQ(Yaml(R"({"jobId": "j", "state": "QUEUED", "startTime": "2026-11-21T10:00:00"})", o),
            "jobId: j\nstate: QUEUED\nstartTime: '2026-11-21T10:00:00'\n");
}

TEST(YamlPrinterTest, RejectsInvalidJson) { EXPECT_FALSE(JsonToYaml("{").ok()); }

TEST(FloatFormatTest, MatchesGcloudTransformFloat) {
  EXPECT_EQ(FormatGcloudFloat(0.04), "0.04");
  EXPECT_EQ(FormatGcloudFloat(1.0), "1.0");
  EXPECT_EQ(FormatGcloudFloat(0.0), "0.0");
  EXPECT_EQ(FormatGcloudFloat(100.0), "100.0");
  EXPECT_EQ(FormatGcloudFloat(0.1 + 0.2), "0.3");
  EXPECT_EQ(FormatGcloudFloat(1234567.0), "1234567.0");
  EXPECT_EQ(FormatGcloudFloat(123456.7), "123456.7");
  EXPECT_EQ(FormatGcloudFloat(1e9), "1e+09");
  EXPECT_EQ(FormatGcloudFloat(1e-5), "1e-05");
  EXPECT_EQ(FormatGcloudFloat(0.00012345678), "0.000123457");
  EXPECT_EQ(FormatGcloudFloat(-2.5), "-2.5");
  EXPECT_EQ(FormatGcloudFloat(2.0000001), "2.0");
}

TEST(TablePrinterTest, AlignsColumnsTwoSpacesApart) {
  EXPECT_EQ(FormatTable({"JOB_ID", "STATUS", "CREATED"},
                        {{"census_training_1", "SUCCEEDED", "2026-11-21T10:00:00"},
                         {"j2", "QUEUED", "2026-11-21T11:00:00"}}),
            "JOB_ID             STATUS     CREATED\n"
            "census_training_1  SUCCEEDED  2026-11-21T10:00:00\n"
            "j2                 QUEUED     2026-11-21T11:00:00\n");
}

TEST(TablePrinterTest, PrintsNothingForNoRows) { EXPECT_EQ(FormatTable({"A"}, {}), ""); }

TEST(TablePrinterTest, DoesNotPadTheLastColumn) {
  EXPECT_EQ(FormatTable({"A", "B"}, {{"x", ""}}), "A  B\nx\n");
}

TEST(BoxTableTest, DrawsTitleHeadingsAndMultilineCells) {
  EXPECT_EQ(FormatBoxTable("T", {"ID", "HP"}, {{"1", "a=1\nb=2"}}),
            "┌──────────┐\n"
            "│    T     │\n"
            "├────┬─────┤\n"
            "│ ID │  HP │\n"
            "├────┼─────┤\n"
            "│ 1  │ a=1 │\n"
            "│    │ b=2 │\n"
            "└────┴─────┘\n");
}

}  // namespace
}  // namespace trainyard::cli
