// Study (study.h): ids, replay, resumed numbering, error codes, early-stopping advice.
#include "trainyard/tuning/study.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainyard::tuning {
namespace {

ParameterSpec Double(std::string name, double lo, double hi) {
  ParameterSpec s;
  s.name = std::move(name);
  s.type = ParameterType::kDouble;
  s.min_value = lo;
  s.max_value = hi;
  return s;
}

StudyConfig MixedConfig(Algorithm algorithm = Algorithm::kUnspecified) {
  StudyConfig c;
  c.goal = Goal::kMinimize;
  c.algorithm = algorithm;
  c.seed = 17;
  c.params.push_back(Double("x", -2, 2));
  ParameterSpec n;
  n.name = "n";
  n.type = ParameterType::kInteger;
  n.min_value = 1;
  n.max_value = 6;
  c.params.push_back(n);
  ParameterSpec k;
  k.name = "k";
  k.type = ParameterType::kCategorical;
  k.categorical_values = {"a", "b", "c"};
  c.params.push_back(k);
  ParameterSpec d;
  d.name = "d";
  d.type = ParameterType::kDiscrete;
  d.discrete_values = {16, 32, 64};
  c.params.push_back(d);
  return c;
}

double Objective(const Assignment& a) {
  return std::pow(a[0].number - 0.7, 2) + 0.1 * std::abs(a[1].number - 4) +
         (a[2].category == 1 ? 0 : 0.5) + std::abs(std::log2(a[3].number / 32));
}

std::unique_ptr<Study> MakeStudy(StudyConfig c) {
  auto s = Study::Create(std::move(c));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

TEST(StudyTest, CreateRefusesAnInvalidConfig) {
  StudyConfig c;
  c.params.push_back(Double("x", 1, 0));  // min > max
  auto s = Study::Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);

  StudyConfig grid = MixedConfig(Algorithm::kGridSearch);  // GRID_SEARCH with a DOUBLE
  EXPECT_EQ(Study::Create(grid).status().code(), StatusCode::kInvalidArgument);
}

TEST(StudyTest, SuggestNumbersTrialsAndMakesThemPending) {
  auto study = MakeStudy(MixedConfig());
  EXPECT_TRUE(study->Suggest(0).empty());
  std::vector<Trial> first = study->Suggest(3);
  ASSERT_EQ(first.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(first[i].id, i + 1);
    EXPECT_EQ(first[i].state, TrialState::kPending);
    EXPECT_EQ(first[i].params.size(), 4u);
  }
  std::vector<Trial> next = study->Suggest(2);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].id, 4);
  EXPECT_EQ(next[1].id, 5);
  EXPECT_EQ(study->trials().size(), 5u);
  for (size_t i = 0; i < study->trials().size(); ++i) {
    EXPECT_EQ(study->trials()[i].id, static_cast<int64_t>(i + 1));
  }
}

TEST(StudyTest, CompleteRecordsValuesAndFailures) {
  auto study = MakeStudy(MixedConfig());
  std::vector<Trial> t = study->Suggest(4);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_TRUE(study->Complete(1, 0.5).ok());
  EXPECT_TRUE(study->Complete(2, std::nullopt).ok());
  EXPECT_TRUE(study->Complete(3, std::numeric_limits<double>::quiet_NaN()).ok());
  EXPECT_TRUE(study->Complete(4, 0.25, /*stopped_early=*/true).ok());
  const std::vector<Trial>& trials = study->trials();
  EXPECT_EQ(trials[0].state, TrialState::kCompleted);
  EXPECT_EQ(trials[0].value, 0.5);
  EXPECT_EQ(trials[1].state, TrialState::kFailed);
  EXPECT_FALSE(trials[1].value.has_value());
  EXPECT_EQ(trials[2].state, TrialState::kFailed);  // no measurement
  EXPECT_TRUE(trials[3].stopped_early);

  EXPECT_EQ(study->Complete(1, 0.1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(study->Complete(2, 0.1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(study->Complete(99, 0.1).code(), StatusCode::kNotFound);
}

TEST(StudyTest, AddTrialKeepsTheFiniteMeasurements) {
  auto study = MakeStudy(MixedConfig());
  Assignment ok = {{0.5, -1}, {3, -1}, {0, 2}, {64, -1}};
  ASSERT_TRUE(
      study->AddTrial(7, ok, {{1, 0.5}, {2, std::numeric_limits<double>::infinity()}, {3, 0.25}})
          .ok());
  ASSERT_EQ(study->trials().size(), 1u);
  const std::vector<Measurement>& m = study->trials()[0].measurements;
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].step, 1);
  EXPECT_EQ(m[1].step, 3);
  EXPECT_EQ(m[1].value, 0.25);
}

TEST(StudyTest, AddTrialValidatesIdsAndAssignments) {
  auto study = MakeStudy(MixedConfig());
  Assignment ok = {{0.5, -1}, {3, -1}, {0, 2}, {64, -1}};
  EXPECT_TRUE(study->AddTrial(7, ok).ok());
  EXPECT_EQ(study->AddTrial(7, ok).code(), StatusCode::kInvalidArgument);  // id known
  EXPECT_EQ(study->AddTrial(0, ok).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(study->AddTrial(-3, ok).code(), StatusCode::kInvalidArgument);

  auto bad = [&](Assignment a) { return study->AddTrial(100, std::move(a)).code(); };
  EXPECT_EQ(bad({{0.5, -1}, {3, -1}, {0, 2}}), StatusCode::kInvalidArgument);  // too few
  EXPECT_EQ(bad({{2.5, -1}, {3, -1}, {0, 2}, {64, -1}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({{0.5, -1}, {3.5, -1}, {0, 2}, {64, -1}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({{0.5, -1}, {7, -1}, {0, 2}, {64, -1}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({{0.5, -1}, {3, -1}, {0, 3}, {64, -1}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({{0.5, -1}, {3, -1}, {0, 2}, {48, -1}}), StatusCode::kInvalidArgument);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(bad({{nan, -1}, {3, -1}, {0, 2}, {64, -1}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(study->trials().size(), 1u);

  // Kept sorted by id; replayed trials are pending until completed.
  EXPECT_TRUE(study->AddTrial(2, ok).ok());
  ASSERT_EQ(study->trials().size(), 2u);
  EXPECT_EQ(study->trials()[0].id, 2);
  EXPECT_EQ(study->trials()[1].id, 7);
  EXPECT_EQ(study->trials()[0].state, TrialState::kPending);
}

TEST(StudyTest, ResumedStudyNumbersAfterTheHighestId) {
  auto study = MakeStudy(MixedConfig());
  Assignment a = {{0.5, -1}, {3, -1}, {0, 2}, {64, -1}};
  ASSERT_TRUE(study->AddTrial(9, a).ok());
  a[0].number = -1;
  ASSERT_TRUE(study->AddTrial(5, a).ok());
  ASSERT_TRUE(study->Complete(9, 1.0).ok());
  std::vector<Trial> next = study->Suggest(2);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].id, 10);
  EXPECT_EQ(next[1].id, 11);
}

// A study driven live and one rebuilt from its stored trials suggest the same next trials.
void ExpectReplayMatches(Algorithm algorithm) {
  StudyConfig config = MixedConfig(algorithm);
  if (algorithm == Algorithm::kGridSearch) config.params.erase(config.params.begin());
  auto live = MakeStudy(config);
  for (int round = 0; round < 4; ++round) {
    for (const Trial& t : live->Suggest(2)) {
      if (t.id % 5 == 0) {
        ASSERT_TRUE(live->Complete(t.id, std::nullopt).ok());  // a failure
      } else {
        double v = algorithm == Algorithm::kGridSearch ? t.params[0].category : Objective(t.params);
        ASSERT_TRUE(live->Complete(t.id, v).ok());
      }
    }
  }
  std::vector<Trial> pending = live->Suggest(1);  // stays pending across the "restart"

  auto replay = MakeStudy(config);
  for (const Trial& t : live->trials()) {
    ASSERT_TRUE(replay->AddTrial(t.id, t.params).ok());
    if (t.state != TrialState::kPending) {
      ASSERT_TRUE(replay->Complete(t.id, t.value).ok());
    }
  }
  std::vector<Trial> a = live->Suggest(3);
  std::vector<Trial> b = replay->Suggest(3);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    ASSERT_EQ(a[i].params.size(), b[i].params.size());
    for (size_t j = 0; j < a[i].params.size(); ++j) {
      EXPECT_EQ(a[i].params[j].number, b[i].params[j].number);
      EXPECT_EQ(a[i].params[j].category, b[i].params[j].category);
    }
  }
}

TEST(StudyTest, ReplayGivesTheSameSuggestionsGp) { ExpectReplayMatches(Algorithm::kUnspecified); }
TEST(StudyTest, ReplayGivesTheSameSuggestionsRandom) {
  ExpectReplayMatches(Algorithm::kRandomSearch);
}
TEST(StudyTest, ReplayGivesTheSameSuggestionsGrid) { ExpectReplayMatches(Algorithm::kGridSearch); }

TEST(StudyTest, SuggestionsNeverRepeatAKnownAssignment) {
  StudyConfig c;
  c.goal = Goal::kMaximize;
  ParameterSpec n;
  n.name = "n";
  n.type = ParameterType::kInteger;
  n.min_value = 0;
  n.max_value = 4;
  c.params.push_back(n);
  auto study = MakeStudy(c);
  ASSERT_TRUE(study->AddTrial(1, {{2, -1}}).ok());
  std::vector<Trial> all = study->Suggest(10);
  EXPECT_EQ(all.size(), 4u);  // 5 values, one already known
  for (const Trial& t : all) EXPECT_NE(t.params[0].number, 2);
  EXPECT_TRUE(study->Suggest(1).empty());
}

TEST(StudyTest, ReportAdvisesStoppingOnlyWhenEnabled) {
  for (bool enabled : {false, true}) {
    StudyConfig c;
    c.goal = Goal::kMinimize;
    c.params.push_back(Double("x", 0, 1));
    c.early_stopping = enabled;
    auto study = MakeStudy(c);
    std::vector<Trial> t = study->Suggest(6);
    ASSERT_EQ(t.size(), 6u);
    for (int id = 1; id <= 5; ++id) {
      for (int step = 1; step <= 10; ++step) EXPECT_FALSE(study->Report(id, step, 1.0));
      ASSERT_TRUE(study->Complete(id, 1.0).ok());
    }
    EXPECT_EQ(study->StoppingReferenceCount(), 5);
    bool stop = false;
    StopVerdict why;
    for (int step = 1; step <= 10 && !stop; ++step) stop = study->Report(6, step, 5.0, &why);
    EXPECT_EQ(stop, enabled);
    if (enabled) {
      // At its 5th report (kMedianRuleMinReports), 5.0 against the references' median 1.0.
      EXPECT_EQ(why.step, kMedianRuleMinReports);
      EXPECT_EQ(why.best, 5.0);
      EXPECT_EQ(why.reference, 1.0);
      EXPECT_EQ(why.reference_trials, 5);
    }
    EXPECT_FALSE(study->trials()[5].measurements.empty());
    // Unknown and finished trials: never.
    EXPECT_FALSE(study->Report(42, 1, 5.0));
    EXPECT_FALSE(study->Report(1, 11, 50.0));
  }
}

}  // namespace
}  // namespace trainyard::tuning
