// The grid and random designers, the median stopping rule and MixSeed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "designer.h"
#include "space.h"
#include "spec_builders.h"
#include "trainyard/tuning/study.h"

namespace trainyard::tuning {
namespace {

using namespace testing_support;  // NOLINT(google-build-using-namespace): spec builders

StudyConfig Config(std::vector<ParameterSpec> params, Algorithm algorithm, uint64_t seed = 0) {
  StudyConfig c;
  c.params = std::move(params);
  c.algorithm = algorithm;
  c.seed = seed;
  EXPECT_TRUE(ValidateStudyConfig(c).ok()) << ValidateStudyConfig(c).ToString();
  return c;
}

// A readable key of an assignment ("2|b|0.5"), for sets and messages.
std::string Key(const StudyConfig& c, const Assignment& a) {
  std::string k;
  for (size_t i = 0; i < a.size(); ++i) {
    if (i > 0) k += "|";
    k += FormatValue(c.params[i], a[i]);
  }
  return k;
}

std::vector<std::string> Keys(const StudyConfig& c, const std::vector<Assignment>& as) {
  std::vector<std::string> keys;
  for (const Assignment& a : as) keys.push_back(Key(c, a));
  return keys;
}

// Appends `as` as pending trials numbered after the last one.
void AddPending(const std::vector<Assignment>& as, std::vector<Trial>* trials) {
  for (const Assignment& a : as) {
    Trial t;
    t.id = trials->empty() ? 1 : trials->back().id + 1;
    t.params = a;
    trials->push_back(std::move(t));
  }
}

// 3 x 2 x 2 = 12 points.
StudyConfig SmallGrid(Algorithm algorithm = Algorithm::kGridSearch) {
  return Config({Integer("n", 1, 3), Categorical("c", {"b", "a"}), Discrete("d", {0.5, 2})},
                algorithm);
}

// ---- Grid --------------------------------------------------------------------------------------

TEST(GridDesignerTest, EnumeratesTheExactProductInOrderThenNothing) {
  StudyConfig c = SmallGrid();
  Space space(c);
  auto grid = MakeGridDesigner(c, space);
  std::vector<Assignment> all = grid->Suggest({}, 100);
  EXPECT_EQ(Keys(c, all),
            (std::vector<std::string>{"1|b|0.5", "1|b|2", "1|a|0.5", "1|a|2", "2|b|0.5", "2|b|2",
                                      "2|a|0.5", "2|a|2", "3|b|0.5", "3|b|2", "3|a|0.5", "3|a|2"}));
  std::vector<Trial> trials;
  AddPending(all, &trials);
  EXPECT_TRUE(grid->Suggest(trials, 5).empty());
  EXPECT_TRUE(grid->Suggest(trials, 1).empty());
}

TEST(GridDesignerTest, ContinuesAcrossCallsWithoutRepeats) {
  StudyConfig c = SmallGrid();
  Space space(c);
  auto grid = MakeGridDesigner(c, space);
  std::vector<Trial> trials;
  std::set<std::string> seen;
  for (int count : {1, 5, 2, 7}) {
    std::vector<Assignment> got = grid->Suggest(trials, count);
    for (const std::string& k : Keys(c, got)) EXPECT_TRUE(seen.insert(k).second) << k;
    AddPending(got, &trials);
  }
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_EQ(trials.size(), 12u);
  EXPECT_EQ(Key(c, trials.back().params), "3|a|2");
}

TEST(GridDesignerTest, SkipsPointsTakenByKnownTrialsInAnyState) {
  StudyConfig c = SmallGrid();
  Space space(c);
  auto grid = MakeGridDesigner(c, space);
  std::vector<Assignment> all = grid->Suggest({}, 12);
  std::vector<Trial> trials;
  AddPending({all[0], all[2], all[3]}, &trials);
  trials[0].state = TrialState::kCompleted;
  trials[0].value = 1.0;
  trials[1].state = TrialState::kFailed;
  EXPECT_EQ(Keys(c, grid->Suggest(trials, 3)),
            (std::vector<std::string>{"1|b|2", "2|b|0.5", "2|b|2"}));
  // A resumed study's trial taken from the end of the grid.
  AddPending({all[11]}, &trials);
  trials.back().id = 40;
  std::vector<Assignment> rest = grid->Suggest(trials, 100);
  EXPECT_EQ(rest.size(), 8u);
  EXPECT_EQ(Key(c, rest.back()), "3|a|0.5");
}

TEST(GridDesignerTest, ComparesAssignmentsExactly) {
  StudyConfig c = Config({Integer("n", 1, 3), Discrete("d", {0.1, 0.2})}, Algorithm::kGridSearch);
  Space space(c);
  auto grid = MakeGridDesigner(c, space);
  std::vector<Trial> trials;
  // Near misses are not grid points and take nothing.
  AddPending({{{1.0000001, -1}, {0.1, -1}}, {{1, -1}, {0.1 + 1e-12, -1}}}, &trials);
  EXPECT_EQ(Keys(c, grid->Suggest(trials, 1)), (std::vector<std::string>{"1|0.1"}));
  AddPending({{{1, -1}, {0.1, -1}}}, &trials);
  EXPECT_EQ(Keys(c, grid->Suggest(trials, 1)), (std::vector<std::string>{"1|0.2"}));
}

TEST(GridDesignerTest, WalksAHugeGridLazily) {
  // 10^12 points: materialising them would not finish.
  StudyConfig c = Config(
      {Integer("a", 0, 999), Integer("b", 0, 999), Integer("c", 0, 999), Integer("d", 0, 999)},
      Algorithm::kGridSearch);
  Space space(c);
  EXPECT_EQ(space.FiniteSize(), 1000000000000);
  auto grid = MakeGridDesigner(c, space);
  auto start = std::chrono::steady_clock::now();
  std::vector<Assignment> first = grid->Suggest({}, 2000);
  ASSERT_EQ(first.size(), 2000u);
  EXPECT_EQ(Key(c, first[0]), "0|0|0|0");
  EXPECT_EQ(Key(c, first[999]), "0|0|0|999");
  EXPECT_EQ(Key(c, first[1000]), "0|0|1|0");
  std::vector<Trial> trials;
  AddPending(first, &trials);
  EXPECT_EQ(Keys(c, grid->Suggest(trials, 2)), (std::vector<std::string>{"0|0|2|0", "0|0|2|1"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));

  // Larger than an int64 can count.
  StudyConfig huge =
      Config({Integer("a", 0, 999999), Integer("b", 0, 999999), Integer("c", 0, 999999),
              Categorical("d", {"x", "y"}), Integer("e", 0, 999999)},
             Algorithm::kGridSearch);
  Space huge_space(huge);
  EXPECT_EQ(huge_space.FiniteSize(), -1);
  auto huge_grid = MakeGridDesigner(huge, huge_space);
  EXPECT_EQ(Keys(huge, huge_grid->Suggest({}, 3)),
            (std::vector<std::string>{"0|0|0|x|0", "0|0|0|x|1", "0|0|0|x|2"}));
}

TEST(GridDesignerTest, SinglePointGrid) {
  StudyConfig c = Config({Integer("n", 4, 4)}, Algorithm::kGridSearch);
  Space space(c);
  auto grid = MakeGridDesigner(c, space);
  std::vector<Assignment> got = grid->Suggest({}, 3);
  EXPECT_EQ(Keys(c, got), (std::vector<std::string>{"4"}));
  std::vector<Trial> trials;
  AddPending(got, &trials);
  EXPECT_TRUE(grid->Suggest(trials, 3).empty());
  EXPECT_TRUE(grid->Suggest({}, 0).empty());
}

// ---- Random ------------------------------------------------------------------------------------

StudyConfig MixedSpace(uint64_t seed) {
  return Config({Double("lr", 1e-5, 1e-1, ScaleType::kLog), Integer("layers", 1, 8),
                 Categorical("opt", {"adam", "sgd", "rms"}),
                 Discrete("batch", {16, 32, 64, 128}, ScaleType::kLog),
                 Double("momentum", 0.5, 0.9999, ScaleType::kReverseLog)},
                Algorithm::kRandomSearch, seed);
}

TEST(RandomDesignerTest, IsAFunctionOfSeedAndTrials) {
  StudyConfig c = MixedSpace(17);
  Space space(c);
  std::vector<Assignment> a = MakeRandomDesigner(c, space)->Suggest({}, 5);
  std::vector<Assignment> b = MakeRandomDesigner(c, space)->Suggest({}, 5);
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(Keys(c, a), Keys(c, b));
  // The same designer asked twice answers the same.
  auto designer = MakeRandomDesigner(c, space);
  EXPECT_EQ(Keys(c, designer->Suggest({}, 5)), Keys(c, designer->Suggest({}, 5)));

  StudyConfig other = MixedSpace(18);
  Space other_space(other);
  EXPECT_NE(Keys(c, a), Keys(other, MakeRandomDesigner(other, other_space)->Suggest({}, 5)));

  // Different trial ids, different draws.
  std::vector<Trial> trials;
  AddPending(a, &trials);
  std::vector<Assignment> next = designer->Suggest(trials, 5);
  ASSERT_EQ(next.size(), 5u);
  EXPECT_NE(Keys(c, next), Keys(c, a));
}

TEST(RandomDesignerTest, ABatchDrawsWhatSingleCallsWould) {
  StudyConfig c = MixedSpace(5);
  Space space(c);
  auto designer = MakeRandomDesigner(c, space);
  std::vector<Assignment> batch = designer->Suggest({}, 4);
  std::vector<Trial> trials;
  for (int i = 0; i < 4; ++i) AddPending(designer->Suggest(trials, 1), &trials);
  ASSERT_EQ(trials.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Key(c, trials[i].params), Key(c, batch[i]));
}

TEST(RandomDesignerTest, DrawsFeasibleValuesUniformlyInTheScaledSpace) {
  StudyConfig c = MixedSpace(3);
  Space space(c);
  std::vector<Assignment> draws = MakeRandomDesigner(c, space)->Suggest({}, 4000);
  ASSERT_EQ(draws.size(), 4000u);
  int lr_below_1e3 = 0, momentum_above_079 = 0;
  std::vector<int> opt(3), batch(4);
  for (const Assignment& a : draws) {
    ASSERT_GE(a[0].number, 1e-5);
    ASSERT_LE(a[0].number, 1e-1);
    ASSERT_EQ(a[1].number, std::round(a[1].number));
    ASSERT_GE(a[1].number, 1);
    ASSERT_LE(a[1].number, 8);
    ASSERT_GE(a[2].category, 0);
    ASSERT_LT(a[2].category, 3);
    ++opt[static_cast<size_t>(a[2].category)];
    auto it = std::find(c.params[3].discrete_values.begin(), c.params[3].discrete_values.end(),
                        a[3].number);
    ASSERT_NE(it, c.params[3].discrete_values.end()) << a[3].number;
    ++batch[static_cast<size_t>(it - c.params[3].discrete_values.begin())];
    ASSERT_GE(a[4].number, 0.5);
    ASSERT_LE(a[4].number, 0.9999);
    lr_below_1e3 += a[0].number < 1e-3;
    momentum_above_079 += a[4].number > 1.4999 - std::sqrt(0.5 * 0.9999);
  }
  // Log scale: half the draws below the geometric midpoint (binomial sd ~32 of 4000).
  EXPECT_NEAR(lr_below_1e3, 2000, 200);
  EXPECT_NEAR(momentum_above_079, 2000, 200);
  for (int n : opt) EXPECT_NEAR(n, 4000 / 3, 200);
  // Log-scaled batch sizes: 32 and 64 own a third of the unit range each, 16 and 128 a sixth.
  EXPECT_NEAR(batch[0], 4000 / 6, 150);
  EXPECT_NEAR(batch[1], 4000 / 3, 150);
  EXPECT_NEAR(batch[2], 4000 / 3, 150);
  EXPECT_NEAR(batch[3], 4000 / 6, 150);
}

TEST(RandomDesignerTest, NeverRepeatsOnASmallFiniteSpaceAndStopsWhenExhausted) {
  StudyConfig c =
      Config({Integer("n", 1, 3), Categorical("c", {"x", "y"})}, Algorithm::kRandomSearch, 9);
  Space space(c);
  auto designer = MakeRandomDesigner(c, space);
  std::vector<Assignment> batch = designer->Suggest({}, 10);
  EXPECT_EQ(batch.size(), 6u);
  std::vector<std::string> keys = Keys(c, batch);
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), 6u);

  // One at a time, against the known trials.
  std::vector<Trial> trials;
  for (int i = 0; i < 6; ++i) {
    std::vector<Assignment> one = designer->Suggest(trials, 1);
    ASSERT_EQ(one.size(), 1u) << i;
    AddPending(one, &trials);
  }
  std::set<std::string> seen;
  for (const Trial& t : trials) EXPECT_TRUE(seen.insert(Key(c, t.params)).second);
  EXPECT_TRUE(designer->Suggest(trials, 1).empty());
  EXPECT_TRUE(designer->Suggest(trials, 4).empty());
}

TEST(RandomDesignerTest, FindsTheLastFreePoint) {
  StudyConfig c = Config({Integer("a", 0, 9), Discrete("d", {1, 2, 4})}, Algorithm::kRandomSearch);
  Space space(c);
  auto grid = MakeGridDesigner(c, space);
  std::vector<Assignment> all = grid->Suggest({}, 30);
  ASSERT_EQ(all.size(), 30u);
  std::vector<Trial> trials;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i != 17) AddPending({all[i]}, &trials);
  }
  auto designer = MakeRandomDesigner(c, space);
  for (int round = 0; round < 5; ++round) {
    std::vector<Assignment> got = designer->Suggest(trials, 3);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(Key(c, got[0]), Key(c, all[17]));
    trials.back().id += 1;  // another draw
  }
}

TEST(RandomDesignerTest, FindsTheLastFreePointOfALargeSpace) {
  // Too large to enumerate, and so crowded that redrawing fails.
  StudyConfig c = Config({Integer("n", 1, 70000)}, Algorithm::kRandomSearch, 4);
  Space space(c);
  std::vector<Trial> trials;
  for (int v = 1; v <= 70000; ++v) {
    if (v != 12345) AddPending({{{static_cast<double>(v), -1}}}, &trials);
  }
  std::vector<Assignment> got = MakeRandomDesigner(c, space)->Suggest(trials, 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0][0].number, 12345);
}

TEST(RandomDesignerTest, ContinuousSpacesAreNeverExhausted) {
  StudyConfig c = Config({Double("x", 0, 1), Categorical("c", {"only"})}, Algorithm::kRandomSearch);
  Space space(c);
  auto designer = MakeRandomDesigner(c, space);
  std::vector<Trial> trials;
  AddPending(designer->Suggest(trials, 50), &trials);
  EXPECT_EQ(trials.size(), 50u);
  EXPECT_EQ(designer->Suggest(trials, 50).size(), 50u);
}

// ---- Median stopping rule ----------------------------------------------------------------------

// A finished trial that reported `values` at steps 1, 2, ...
Trial Completed(int64_t id, std::vector<double> values, int64_t first_step = 1) {
  Trial t;
  t.id = id;
  t.state = TrialState::kCompleted;
  for (size_t i = 0; i < values.size(); ++i) {
    t.measurements.push_back({first_step + static_cast<int64_t>(i), values[i]});
  }
  if (!values.empty()) t.value = values.back();
  return t;
}

Trial Running(int64_t id, std::vector<double> values) {
  Trial t = Completed(id, std::move(values));
  t.state = TrialState::kPending;
  t.value.reset();
  return t;
}

std::vector<Trial> FlatReferences(int n, double value, int steps = 10) {
  std::vector<Trial> trials;
  for (int i = 0; i < n; ++i) trials.push_back(Completed(i + 1, std::vector<double>(steps, value)));
  return trials;
}

TEST(MedianRuleTest, NeedsFiveCompletedTrialsWithMeasurements) {
  std::vector<Trial> trials = FlatReferences(4, 1.0);
  Trial bad = Running(100, {0, 0, 0, 0, 0, 0});
  EXPECT_FALSE(MedianRuleSaysStop(bad, trials, Goal::kMaximize));
  // Failed, pending and measurement-less trials do not count.
  Trial failed = Completed(5, {1, 1, 1, 1, 1, 1});
  failed.state = TrialState::kFailed;
  Trial pending = Running(6, {1, 1, 1, 1, 1, 1});
  Trial silent = Completed(7, {});
  silent.value = 1.0;
  trials.insert(trials.end(), {failed, pending, silent});
  EXPECT_FALSE(MedianRuleSaysStop(bad, trials, Goal::kMaximize));
  trials.push_back(Completed(8, std::vector<double>(10, 1.0)));
  EXPECT_TRUE(MedianRuleSaysStop(bad, trials, Goal::kMaximize));
}

TEST(MedianRuleTest, TrialsStoppedEarlyAreNotReferences) {
  std::vector<Trial> trials = FlatReferences(4, 1.0);
  Trial stopped = Completed(5, {1, 1, 1, 1, 1});
  stopped.stopped_early = true;
  trials.push_back(stopped);
  EXPECT_FALSE(MedianRuleSaysStop(Running(100, {0, 0, 0, 0, 0}), trials, Goal::kMaximize));
  trials.push_back(Completed(6, {1, 1, 1, 1, 1}));
  EXPECT_TRUE(MedianRuleSaysStop(Running(100, {0, 0, 0, 0, 0}), trials, Goal::kMaximize));
}

TEST(MedianRuleTest, NoDecisionBeforeTheSecondMeasurement) {
  std::vector<Trial> trials = FlatReferences(6, 1.0);
  EXPECT_FALSE(MedianRuleSaysStop(Running(100, {}), trials, Goal::kMaximize));
  EXPECT_FALSE(MedianRuleSaysStop(Running(100, {0}), trials, Goal::kMaximize));
  EXPECT_TRUE(MedianRuleSaysStop(Running(100, {0, 0}), trials, Goal::kMaximize));
}

TEST(MedianRuleTest, StopsOnlyWhenStrictlyWorseThanThe45thPercentileFromTheBest) {
  // Six references: values 1..6 (maximised), median 3.5; 45 % of the way from the best (6) to
  // the worst (1) in order statistics lies 3.75.
  std::vector<Trial> trials;
  for (int i = 1; i <= 6; ++i) {
    trials.push_back(Completed(i, std::vector<double>(10, static_cast<double>(i))));
  }
  StopVerdict why;
  EXPECT_TRUE(MedianRuleSaysStop(Running(100, {3.5, 3.5}), trials, Goal::kMaximize, &why));
  EXPECT_NEAR(why.reference, 3.75, 1e-12);
  EXPECT_TRUE(MedianRuleSaysStop(Running(100, {3.7, 3.7}), trials, Goal::kMaximize));
  EXPECT_FALSE(MedianRuleSaysStop(Running(100, {3.8, 3.8}), trials, Goal::kMaximize));
  // The best value so far counts, not the latest.
  EXPECT_FALSE(MedianRuleSaysStop(Running(100, {0, 4, 0, 0, 0}), trials, Goal::kMaximize));
}

TEST(MedianRuleTest, MinimizeFlipsTheComparison) {
  std::vector<Trial> trials;
  for (int i = 1; i <= 5; ++i) {
    trials.push_back(Completed(i, std::vector<double>(10, static_cast<double>(i))));
  }
  // Values 1..5: the rule's reference is 2.8 minimising, 3.2 maximising (median 3).
  EXPECT_TRUE(MedianRuleSaysStop(Running(100, {2.9, 2.9, 2.9, 2.9, 2.9}), trials, Goal::kMinimize));
  EXPECT_FALSE(
      MedianRuleSaysStop(Running(100, {2.7, 2.7, 2.7, 2.7, 2.7}), trials, Goal::kMinimize));
  EXPECT_FALSE(MedianRuleSaysStop(Running(100, {9, 9, 2.7, 9, 9}), trials, Goal::kMinimize));
  EXPECT_FALSE(
      MedianRuleSaysStop(Running(100, {3.3, 3.3, 3.3, 3.3, 3.3}), trials, Goal::kMaximize));
  EXPECT_TRUE(MedianRuleSaysStop(Running(100, {3.1, 3.1, 3.1, 3.1, 3.1}), trials, Goal::kMaximize));
}

TEST(MedianRuleTest, ComparesWithTheReferencesValuesAtTheStep) {
  // References climb 0, 1, 2, ... at steps 1, 2, 3, ...: at step 5 each reports 4 (their running
  // average would be 2, a more lenient reference).
  std::vector<Trial> trials;
  for (int i = 1; i <= 5; ++i) trials.push_back(Completed(i, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_TRUE(MedianRuleSaysStop(Running(100, {2.5, 2.5, 2.5, 2.5, 2.5}), trials, Goal::kMaximize));
  EXPECT_FALSE(
      MedianRuleSaysStop(Running(100, {4.5, 4.5, 4.5, 4.5, 4.5}), trials, Goal::kMaximize));
  // Reported at steps 5..9: compared with the references' 8 at step 9.
  Trial later = Running(100, {7.9, 7.9, 7.9, 7.9, 7.9});
  for (size_t i = 0; i < later.measurements.size(); ++i) {
    later.measurements[i].step = static_cast<int64_t>(i) + 5;
  }
  EXPECT_TRUE(MedianRuleSaysStop(later, trials, Goal::kMaximize));
  later.measurements.back().value = 8.1;
  EXPECT_FALSE(MedianRuleSaysStop(later, trials, Goal::kMaximize));
  // Between two of a reference's reports, its latest one counts.
  std::vector<Trial> sparse;
  for (int i = 1; i <= 5; ++i) {
    Trial t = Completed(i, {});
    t.measurements = {{2, 1.0}, {10, 5.0}};
    sparse.push_back(t);
  }
  EXPECT_TRUE(MedianRuleSaysStop(Running(100, {0.9, 0.9, 0.9, 0.9, 0.9}), sparse, Goal::kMaximize));
  EXPECT_FALSE(MedianRuleSaysStop(Running(100, {1, 1, 1, 1, 1}), sparse, Goal::kMaximize));
}

TEST(MedianRuleTest, SkipsReferencesWithoutMeasurementsByTheStep) {
  // Five references that only start reporting at step 100: nothing to compare with at step 5.
  std::vector<Trial> trials;
  for (int i = 1; i <= 5; ++i) trials.push_back(Completed(i, {10, 10, 10}, 100));
  EXPECT_FALSE(MedianRuleSaysStop(Running(100, {0, 0, 0, 0, 0}), trials, Goal::kMaximize));
  // One reference that reported early is the whole reference set.
  trials.push_back(Completed(6, {1, 1, 1, 1, 1}));
  EXPECT_TRUE(MedianRuleSaysStop(Running(100, {0, 0, 0, 0, 0}), trials, Goal::kMaximize));
  EXPECT_FALSE(MedianRuleSaysStop(Running(100, {1, 1, 1, 1, 1}), trials, Goal::kMaximize));
}

// Six references at levels 0..5 whose reports alternate +-0.5 around their level (+ at odd
// steps): every second difference is 2 in size.
std::vector<Trial> JitteryReferences() {
  std::vector<Trial> trials;
  for (int i = 0; i < 6; ++i) {
    std::vector<double> v;
    for (int s = 1; s <= 10; ++s) v.push_back(i + (s % 2 == 1 ? 0.5 : -0.5));
    trials.push_back(Completed(i + 1, v));
  }
  return trials;
}

TEST(MedianRuleTest, ReportNoiseIsTheReferencesRobustSecondDifference) {
  const Trial trial = Running(100, {1, 1});
  EXPECT_NEAR(ReportNoise(trial, JitteryReferences(), 2), 1.4826 * 2 / std::sqrt(6.0), 1e-12);
  EXPECT_NEAR(ReportNoise(trial, JitteryReferences(), 1), 1.4826 * 2 / std::sqrt(6.0), 1e-12);
  EXPECT_EQ(ReportNoise(trial, FlatReferences(6, 1.0), 2), 0.0);
  // Past every reference's second-to-last report: nothing to measure.
  EXPECT_EQ(ReportNoise(trial, JitteryReferences(), 10), 0.0);
  // Stopped, pending and too short references do not count.
  std::vector<Trial> others = {Running(1, {0, 5, 0}), Completed(2, {0, 5})};
  others.push_back(Completed(3, {0, 5, 0}));
  others.back().stopped_early = true;
  EXPECT_EQ(ReportNoise(trial, others, 2), 0.0);
}

TEST(MedianRuleTest, StopsOnlyBeyondTheReferenceByMoreThanTheReportNoise) {
  // At step 2 the references stood at -0.5..4.5: the 45th percentile from the best is 2.25, and
  // the report noise about 1.21.
  const std::vector<Trial> trials = JitteryReferences();
  EXPECT_FALSE(MedianRuleSaysStop(Running(100, {2.0, 2.0}), trials, Goal::kMaximize));
  EXPECT_FALSE(MedianRuleSaysStop(Running(100, {1.1, 1.1}), trials, Goal::kMaximize));
  StopVerdict why;
  EXPECT_TRUE(MedianRuleSaysStop(Running(100, {0.9, 0.9}), trials, Goal::kMaximize, &why));
  EXPECT_DOUBLE_EQ(why.reference, 2.25);
  // The same references without the jitter stop the first trial.
  std::vector<Trial> smooth;
  for (int i = 0; i < 6; ++i) smooth.push_back(Completed(i + 1, std::vector<double>(10, i - 0.5)));
  EXPECT_TRUE(MedianRuleSaysStop(Running(100, {2.0, 2.0}), smooth, Goal::kMaximize));
}

TEST(MedianRuleTest, IgnoresTheTrialItself) {
  std::vector<Trial> trials = FlatReferences(5, 1.0);
  Trial self = Running(3, {0, 0, 0, 0, 0});
  trials[2] = self;
  trials[2].state = TrialState::kCompleted;
  EXPECT_FALSE(MedianRuleSaysStop(self, trials, Goal::kMaximize));  // only four others
}

// ---- Predicted-final rule ----------------------------------------------------------------------

// Six references (maximise) whose curves climb linearly from `start` to `start` + 9 over ten
// steps, `start` = 0, 1, ..., 5 (perfectly predictable finals 9..14), plus `noise` on the finals.
std::vector<Trial> ClimbingReferences(double noise = 0) {
  std::vector<Trial> trials;
  for (int i = 0; i < 6; ++i) {
    std::vector<double> v;
    for (int s = 0; s < 10; ++s) v.push_back(i + s);
    v.back() += (i % 2 == 0 ? noise : -noise);
    trials.push_back(Completed(i + 1, v));
  }
  return trials;
}

TEST(PredictedFinalRuleTest, StopsATrialThatCannotReachTheBestFinal) {
  const std::vector<Trial> trials = ClimbingReferences();
  // At step 5 the references stood at 4..9 and finished at 9..14. A trial at 8.5 (better than
  // the median, 6.5) is predicted to finish at 13.5 < 14: stopped by this rule, not the median's.
  const Trial good = Running(100, {4.5, 5.5, 6.5, 7.5, 8.5});
  EXPECT_FALSE(MedianRuleSaysStop(good, trials, Goal::kMaximize));
  StopVerdict why;
  EXPECT_TRUE(PredictedFinalSaysStop(good, trials, Goal::kMaximize, &why));
  EXPECT_EQ(why.rule, StopRule::kPredictedFinal);
  EXPECT_EQ(why.step, 5);
  EXPECT_EQ(why.reference_trials, 6);
  EXPECT_DOUBLE_EQ(why.reference, 14.0);
  EXPECT_NEAR(why.best, 13.5, 1e-9);  // exact fit: no interval
  // One ahead of the best reference: it may win.
  EXPECT_FALSE(PredictedFinalSaysStop(Running(100, {6, 7, 8, 9, 10}), trials, Goal::kMaximize));
  EXPECT_TRUE(StoppingRulesSayStop(good, trials, Goal::kMaximize));
}

TEST(PredictedFinalRuleTest, SpikesInTheLatestReportsDoNotStop) {
  // One ahead of the best reference, then one bad report (a bad batch): the median of its last
  // three reports (8) still says it may win; their mean (-1) would have stopped it.
  const std::vector<Trial> trials = ClimbingReferences();
  EXPECT_FALSE(PredictedFinalSaysStop(Running(100, {6, 7, 8, 9, -20}), trials, Goal::kMaximize));
  // Two ahead, then two bad reports: the median of the last three is bad too, but the trial is
  // judged on its best smoothed value so far (9, at steps 4 and 5), which may still win.
  EXPECT_FALSE(
      PredictedFinalSaysStop(Running(100, {7, 8, 9, 10, -20, -20}), trials, Goal::kMaximize));
  // Its best smoothed value so far (7) cannot reach the best final: stopped.
  EXPECT_TRUE(PredictedFinalSaysStop(Running(100, {6, 7, 8, -20, -20}), trials, Goal::kMaximize));
}

TEST(PredictedFinalRuleTest, UncertainPredictionsDoNotStop) {
  // Finals scattered by +-0.3 around the line: the interval at 13.5 covers the best final, 14.3.
  const std::vector<Trial> noisy = ClimbingReferences(0.3);
  EXPECT_FALSE(
      PredictedFinalSaysStop(Running(100, {4.5, 5.5, 6.5, 7.5, 8.5}), noisy, Goal::kMaximize));
  // Predicted to end near 8: stopped.
  EXPECT_TRUE(PredictedFinalSaysStop(Running(100, {2, 2, 2, 2, 2}), noisy, Goal::kMaximize));
  // Scattered by +-2: no prediction is sure enough (the median rule still stops laggards).
  const std::vector<Trial> noisier = ClimbingReferences(2.0);
  EXPECT_FALSE(PredictedFinalSaysStop(Running(100, {2, 2, 2, 2, 2}), noisier, Goal::kMaximize));
  EXPECT_TRUE(StoppingRulesSayStop(Running(100, {2, 2, 2, 2, 2}), noisier, Goal::kMaximize));
}

TEST(PredictedFinalRuleTest, NeedsReferencesReportsAndSpread) {
  std::vector<Trial> trials = ClimbingReferences();
  EXPECT_FALSE(PredictedFinalSaysStop(Running(100, {-9}), trials, Goal::kMaximize));  // 1 report
  trials.resize(4);
  EXPECT_FALSE(PredictedFinalSaysStop(Running(100, {-9, -9, -9, -9, -9}), trials, Goal::kMaximize));
  // References that all stood at the same value say nothing about the order at the end.
  EXPECT_FALSE(PredictedFinalSaysStop(Running(100, {-9, -9, -9, -9, -9}), FlatReferences(6, 1.0),
                                      Goal::kMaximize));
}

TEST(PredictedFinalRuleTest, MinimizeFlipsTheComparison) {
  std::vector<Trial> trials = ClimbingReferences();
  for (Trial& t : trials) {
    for (Measurement& m : t.measurements) m.value = -m.value;
    t.value = -*t.value;
  }
  StopVerdict why;
  EXPECT_TRUE(PredictedFinalSaysStop(Running(100, {-4.5, -5.5, -6.5, -7.5, -8.5}), trials,
                                     Goal::kMinimize, &why));
  EXPECT_DOUBLE_EQ(why.reference, -14.0);
  EXPECT_NEAR(why.best, -13.5, 1e-9);
  EXPECT_FALSE(
      PredictedFinalSaysStop(Running(100, {-6, -7, -8, -9, -10}), trials, Goal::kMinimize));
}

// ---- Imputed final values ----------------------------------------------------------------------

TEST(ImputedFinalValueTest, MapsTheStandingAtTheLastStepOntoTheFinals) {
  const std::vector<Trial> trials = ClimbingReferences();  // finals 9..14, at step 5: 4..9
  Trial stopped = Completed(100, {0, 0, 0, 0, 0});
  stopped.stopped_early = true;
  // Worse than every reference at step 5: the worst final.
  EXPECT_DOUBLE_EQ(*ImputedFinalValue(stopped, trials, Goal::kMaximize), 9.0);
  // Smoothed over its last three reports, 6.5: beaten by two of the six references (7 and 8 at
  // step 5, smoothed), so 2/6 of the way from the best final to the worst.
  stopped.measurements = {{1, 0}, {2, 0}, {3, 6.5}, {4, 6.5}, {5, 6.5}};
  EXPECT_NEAR(*ImputedFinalValue(stopped, trials, Goal::kMaximize), 14.0 - 5.0 / 3.0, 1e-12);
  // Better than all: the best final.
  stopped.measurements = {{5, 50}};
  EXPECT_DOUBLE_EQ(*ImputedFinalValue(stopped, trials, Goal::kMaximize), 14.0);
  // Minimisation: a small value is good.
  stopped.measurements = {{5, -50}};
  EXPECT_DOUBLE_EQ(*ImputedFinalValue(stopped, trials, Goal::kMinimize), 9.0);
}

TEST(ImputedFinalValueTest, NeedsThreeReferencesAndReports) {
  std::vector<Trial> trials = ClimbingReferences();
  Trial silent = Completed(100, {});
  EXPECT_FALSE(ImputedFinalValue(silent, trials, Goal::kMaximize).has_value());
  trials.resize(2);
  EXPECT_FALSE(ImputedFinalValue(Completed(100, {1}), trials, Goal::kMaximize).has_value());
  trials.push_back(Completed(3, {5, 15}));
  EXPECT_DOUBLE_EQ(*ImputedFinalValue(Completed(100, {-1}), trials, Goal::kMaximize), 9.0);
}

TEST(ImputedFinalValueTest, ShrinksTheStandingWhenEarlyOrderDoesNotPredictTheEnd) {
  // Crossing curves: the references that stood best at step 5 finished worst (rank correlation
  // -1). A trial below all of them at step 5 says nothing about its end: the median final.
  std::vector<Trial> crossing;
  for (int i = 0; i < 5; ++i) {
    std::vector<double> v(5, static_cast<double>(i));  // standing 0..4 at steps 1..5
    v.push_back(10.0 - i);                             // finals 10..6, in the reverse order
    crossing.push_back(Completed(i + 1, v));
  }
  Trial stopped = Completed(100, {-1, -1, -1, -1, -1});
  stopped.stopped_early = true;
  EXPECT_DOUBLE_EQ(*ImputedFinalValue(stopped, crossing, Goal::kMaximize), 8.0);
  // Half the order kept (rank correlation 0.5): half-way from the worst final to the median.
  std::vector<Trial> half;
  const double finals[] = {6, 8, 7, 10, 9};  // standing 0..4 at step 5
  for (int i = 0; i < 5; ++i) {
    std::vector<double> v(5, static_cast<double>(i));
    v.push_back(finals[i]);
    half.push_back(Completed(i + 1, v));
  }
  EXPECT_NEAR(RankCorrelation({0, 1, 2, 3, 4}, {6, 8, 7, 10, 9}), 0.8, 1e-12);
  // rho 0.8: standing 0 of 5 -> 2.5 - 0.8 * 2.5 = 0.5 -> position 0.4 between the finals 6 and 7.
  EXPECT_NEAR(*ImputedFinalValue(stopped, half, Goal::kMaximize), 6.4, 1e-12);
}

TEST(RankCorrelationTest, IsSpearmansWithMeanRanksForTies) {
  EXPECT_DOUBLE_EQ(RankCorrelation({1, 2, 3}, {10, 20, 30}), 1.0);
  EXPECT_DOUBLE_EQ(RankCorrelation({1, 2, 3}, {3, 2, 1}), -1.0);
  EXPECT_DOUBLE_EQ(RankCorrelation({1, 2, 3}, {5, 5, 5}), 0.0);  // constant: no information
  EXPECT_DOUBLE_EQ(RankCorrelation({1}, {2}), 0.0);
  EXPECT_NEAR(RankCorrelation({1, 2, 2, 3}, {1, 2, 3, 4}), 0.9486832980505138, 1e-12);
}

// ---- Trials near the best one -------------------------------------------------------------------

// A finished trial at (x, y, category c) that reported `value` at steps 1..5.
Trial At(int64_t id, double x, double y, int c, double value) {
  Trial t = Completed(id, std::vector<double>(5, value));
  t.params = {{x, -1}, {y, -1}, {0, c}};
  return t;
}

TEST(NearTheBestTrialTest, ProtectsTrialsWithinAShareOfTheMedianDistanceToTheBest) {
  const StudyConfig c = Config({Double("x", 0, 1), Double("y", 0, 1), Categorical("c", {"a", "b"})},
                               Algorithm::kRandomSearch);
  const Space space(c);
  // The best (maximise) at the centre; four others 0.4 away along one axis each: a distance of
  // sqrt(0.16 / 3) = 0.231 (root mean square over three coordinates), so the radius is
  // kNearBestShare (0.45) times that, 0.104.
  std::vector<Trial> trials = {At(1, 0.9, 0.5, 0, 1), At(2, 0.5, 0.5, 0, 10), At(3, 0.1, 0.5, 0, 2),
                               At(4, 0.5, 0.9, 0, 3), At(5, 0.5, 0.1, 0, 4)};
  auto near = [&](double x, double y, int cat, Goal goal = Goal::kMaximize) {
    Trial t = Running(100, {0, 0, 0, 0, 0});
    t.params = {{x, -1}, {y, -1}, {0, cat}};
    return NearTheBestTrial(t, trials, space, goal);
  };
  EXPECT_TRUE(near(0.5, 0.5, 0));
  EXPECT_TRUE(near(0.6, 0.6, 0));   // 0.082
  EXPECT_TRUE(near(0.67, 0.5, 0));  // 0.098
  EXPECT_FALSE(near(0.7, 0.5, 0));  // 0.115
  EXPECT_FALSE(near(0.5, 0.5, 1));  // another category: 0.577
  EXPECT_FALSE(near(0.9, 0.5, 0));
  // Minimising, the best is trial 1 at (0.9, 0.5).
  EXPECT_TRUE(near(0.95, 0.5, 0, Goal::kMinimize));
  EXPECT_FALSE(near(0.5, 0.5, 0, Goal::kMinimize));
  // A trial stopped early is not a reference, so never the best, but it counts among the others.
  trials[1].stopped_early = true;  // the centre; the best is now trial 5 at (0.5, 0.1)
  EXPECT_FALSE(near(0.5, 0.5, 0));
  EXPECT_TRUE(near(0.5, 0.12, 0));
  // No finished reference: nothing is protected.
  EXPECT_FALSE(NearTheBestTrial(Running(100, {0}), {}, space, Goal::kMaximize));
}

// A maximising study over x in [0, 1] with five references at 0.1, 0.3, 0.5, 0.7 and 0.9 that
// reported 1, 2, 3, 4 and 5 at steps 1..10 and finished at finals[i].
std::unique_ptr<Study> StudyWithReferences(const std::vector<double>& finals) {
  StudyConfig c;
  c.goal = Goal::kMaximize;
  c.params = {Double("x", 0, 1)};
  c.early_stopping = true;
  auto study = Study::Create(c);
  EXPECT_TRUE(study.ok());
  for (int i = 0; i < 5; ++i) {
    const int64_t id = i + 1;
    EXPECT_TRUE((*study)->AddTrial(id, {{0.1 + 0.2 * i, -1}}).ok());
    for (int step = 1; step <= 10; ++step) (*study)->Report(id, step, 1.0 + i);
    EXPECT_TRUE((*study)->Complete(id, finals[static_cast<size_t>(i)]).ok());
  }
  return std::move(*study);
}

TEST(NearTheBestTrialTest, TheMedianRuleDoesNotStopATrialNearTheBest) {
  // Finals that the values at each step predict poorly (3, 1, 5, 2, 4): the predicted-final rule
  // cannot tell. The best is at 0.5 and the others lie 0.2, 0.2, 0.4 and 0.4 from it (a radius of
  // 0.45 x 0.4 = 0.18).
  std::unique_ptr<Study> study = StudyWithReferences({3, 1, 5, 2, 4});
  // Two trials far below the median rule's reference (3.2) at every report: the one near the best
  // runs on, the other is stopped.
  ASSERT_TRUE(study->AddTrial(6, {{0.45, -1}}).ok());
  ASSERT_TRUE(study->AddTrial(7, {{0.95, -1}}).ok());
  bool near_stopped = false, far_stopped = false;
  StopVerdict why;
  for (int step = 1; step <= 10; ++step) {
    near_stopped = near_stopped || study->Report(6, step, 0.0);
    far_stopped = far_stopped || study->Report(7, step, 0.0, &why);
  }
  EXPECT_FALSE(near_stopped);
  EXPECT_TRUE(far_stopped);
  EXPECT_EQ(why.rule, StopRule::kMedian);
  EXPECT_NEAR(why.reference, 3.2, 1e-12);
}

TEST(NearTheBestTrialTest, ATrialNearTheBestThatCannotBecomeTheBestIsStopped) {
  // Finals equal to the values the references stood at: a trial at 0 near the best (0.85; the
  // best is at 0.9, a radius of 0.45 x 0.6 = 0.27) is predicted to end at 0, short of 5.
  std::unique_ptr<Study> study = StudyWithReferences({1, 2, 3, 4, 5});
  ASSERT_TRUE(study->AddTrial(6, {{0.85, -1}}).ok());
  StopVerdict why;
  EXPECT_FALSE(study->Report(6, 1, 0.0));  // one report: no verdict yet
  EXPECT_TRUE(study->Report(6, 2, 0.0, &why));
  EXPECT_EQ(why.rule, StopRule::kPredictedFinal);
  EXPECT_EQ(why.step, 2);
  EXPECT_DOUBLE_EQ(why.reference, 5.0);
  EXPECT_NEAR(why.best, 0.0, 1e-9);  // exact fit: no interval
}

TEST(PredictFinalTest, IsTheRegressionOfTheFinalsOnTheValuesAtTheStep) {
  // The references stood at 1..5 and ended at 3, 1, 5, 2, 4: slope 0.3, so a trial standing at 0
  // is predicted to end at 3 - 0.3 * 3 = 2.1, with a standard error of
  // sqrt(9.1 / 3 * (1 + 1/5 + 9/10)) and an interval of 2 + 3/3 of them.
  std::vector<Trial> trials;
  const double finals[] = {3, 1, 5, 2, 4};
  for (int i = 0; i < 5; ++i) {
    Trial t = Completed(i + 1, std::vector<double>(10, 1.0 + i));
    t.value = finals[i];
    trials.push_back(t);
  }
  const std::optional<FinalPrediction> p =
      PredictFinal(Running(100, {0, 0, 0}), trials, Goal::kMaximize);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 3);
  EXPECT_NEAR(p->mean, 2.1, 1e-12);
  EXPECT_NEAR(p->spread, std::sqrt(9.1 / 3 * 2.1), 1e-12);
  EXPECT_NEAR(p->z, 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(p->best_final, 5.0);
  EXPECT_EQ(p->references, 5);
  // Minimising the same numbers: the best final is 1, and the trial's 0 is predicted at 2.1 too.
  const std::optional<FinalPrediction> q =
      PredictFinal(Running(100, {0, 0, 0}), trials, Goal::kMinimize);
  ASSERT_TRUE(q.has_value());
  EXPECT_NEAR(q->mean, 2.1, 1e-12);
  EXPECT_DOUBLE_EQ(q->best_final, 1.0);
  EXPECT_FALSE(PredictFinal(Running(100, {0}), trials, Goal::kMaximize).has_value());
}

// ---- MixSeed -----------------------------------------------------------------------------------

TEST(MixSeedTest, IsSplitMix64) {
  // splitmix64's first output from state 0.
  EXPECT_EQ(MixSeed(0, 0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(MixSeed(42, 7), MixSeed(42, 7));
  std::set<uint64_t> seen;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    for (uint64_t salt = 0; salt < 20; ++salt) seen.insert(MixSeed(seed, salt));
  }
  EXPECT_EQ(seen.size(), 400u);
}

}  // namespace
}  // namespace trainyard::tuning
