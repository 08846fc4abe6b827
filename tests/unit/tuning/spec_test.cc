// ParseStudyConfig, ValidateStudyConfig, FormatValue/ParseValue and the Space encoding.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "space.h"
#include "spec_builders.h"
#include "trainyard/tuning/study.h"

namespace trainyard::tuning {
namespace {

using namespace testing_support;  // NOLINT(google-build-using-namespace): spec builders

StudyConfig Config(std::vector<ParameterSpec> params) {
  StudyConfig c;
  c.params = std::move(params);
  return c;
}

// The status names `field` in a violation whose description contains `text`, and its message
// reads "field: description".
::testing::AssertionResult HasViolation(const Status& s, const std::string& field,
                                        const std::string& text) {
  if (s.ok()) return ::testing::AssertionFailure() << "status is OK";
  if (s.code() != StatusCode::kInvalidArgument) {
    return ::testing::AssertionFailure() << "not INVALID_ARGUMENT: " << s.ToString();
  }
  for (const FieldViolation& v : s.violations()) {
    if (v.field == field && v.description.find(text) != std::string::npos) {
      if (s.message().find(field + ": " + v.description) == std::string::npos) {
        return ::testing::AssertionFailure() << "message does not name it: " << s.message();
      }
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure()
         << "no violation " << field << " ~ \"" << text << "\" in " << s.ToString();
}

// ---- ValidateStudyConfig -----------------------------------------------------------------------

TEST(ValidateStudyConfigTest, AcceptsAValidMixedSpace) {
  StudyConfig c =
      Config({Double("learning-rate", 1e-5, 0.1, ScaleType::kLog),
              Integer("layers", 1, 1, ScaleType::kNone), Categorical("opt", {"adam", "sgd"}),
              Discrete("batch", {16, 32, 64}, ScaleType::kLog)});
  EXPECT_TRUE(ValidateStudyConfig(c).ok()) << ValidateStudyConfig(c).ToString();
}

TEST(ValidateStudyConfigTest, NeedsParams) {
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({})), "params", "params is required"));
}

TEST(ValidateStudyConfigTest, NeedsAtLeastOneParallelTrial) {
  StudyConfig c = Config({Double("x", 0, 1)});
  c.max_parallel_trials = 0;
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(c), "maxParallelTrials", "at least 1"));
}

TEST(ValidateStudyConfigTest, NamesAreRequiredUniqueAndFlagLike) {
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Double("", 0, 1)})),
                           "params[0].parameterName", "parameterName is required"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Double("x", 0, 1), Double("x", 0, 1)})),
                           "params[1].parameterName", "parameterName \"x\" is used twice"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Double("a=b", 0, 1)})),
                           "params[0].parameterName", "command-line flag name"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Double("y", 0, 1), Double("a b", 0, 1)})),
                           "params[1].parameterName", "command-line flag name"));
}

TEST(ValidateStudyConfigTest, DoubleNeedsMinBelowMax) {
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Double("x", 0, 1), Double("y", 2, 2)})),
                           "params[1].maxValue", "maxValue (2) must be greater than minValue (2)"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Double("x", 3, 1)})), "params[0].maxValue",
                           "must be greater than minValue"));
}

TEST(ValidateStudyConfigTest, BoundsMustBeFinite) {
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Double("x", 0, INFINITY)})),
                           "params[0].maxValue", "finite"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Integer("x", NAN, 1)})),
                           "params[0].minValue", "finite"));
}

TEST(ValidateStudyConfigTest, IntegerBoundsAreIntegralAndOrdered) {
  EXPECT_TRUE(ValidateStudyConfig(Config({Integer("n", 4, 4)})).ok());  // one value is fine
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Integer("n", 1.5, 4)})),
                           "params[0].minValue",
                           "minValue of an INTEGER parameter must be an integer, got 1.5"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Integer("n", 1, 4.25)})),
                           "params[0].maxValue", "must be an integer, got 4.25"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Integer("n", 5, 4)})), "params[0].maxValue",
                           "maxValue (4) must not be less than minValue (5)"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Integer("n", 0, 1e17)})),
                           "params[0].maxValue", "2^53"));
}

TEST(ValidateStudyConfigTest, LogScalesNeedPositiveRanges) {
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Double("x", 0, 1, ScaleType::kLog)})),
                           "params[0].minValue",
                           "UNIT_LOG_SCALE needs a strictly positive range; minValue is 0"));
  EXPECT_TRUE(
      HasViolation(ValidateStudyConfig(Config({Integer("n", -1, 10, ScaleType::kReverseLog)})),
                   "params[0].minValue", "UNIT_REVERSE_LOG_SCALE needs a strictly positive range"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Discrete("d", {0, 1}, ScaleType::kLog)})),
                           "params[0].discreteValues",
                           "UNIT_LOG_SCALE needs strictly positive discreteValues"));
  EXPECT_TRUE(ValidateStudyConfig(Config({Double("x", 0, 1, ScaleType::kLinear)})).ok());
}

TEST(ValidateStudyConfigTest, CategoricalRules) {
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Categorical("c", {})})),
                           "params[0].categoricalValues",
                           "categoricalValues is required for CATEGORICAL parameters"));
  ParameterSpec scaled = Categorical("c", {"a"});
  scaled.scale = ScaleType::kLinear;
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({scaled})), "params[0].scaleType",
                           "scaleType must not be set for CATEGORICAL parameters"));
  ParameterSpec bounded = Categorical("c", {"a"});
  bounded.max_value = 3;
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({bounded})), "params[0].maxValue",
                           "minValue and maxValue must not be set for CATEGORICAL parameters"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Categorical("c", {"a", "b", "a"})})),
                           "params[0].categoricalValues",
                           "categorical value \"a\" is listed twice"));
}

TEST(ValidateStudyConfigTest, ValueListsOnlyForTheirType) {
  ParameterSpec d = Double("x", 0, 1);
  d.categorical_values = {"a"};
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({d})), "params[0].categoricalValues",
                           "categoricalValues is only for CATEGORICAL parameters"));
  ParameterSpec n = Integer("n", 0, 1);
  n.discrete_values = {1};
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({n})), "params[0].discreteValues",
                           "discreteValues is only for DISCRETE parameters"));
}

TEST(ValidateStudyConfigTest, DiscreteRules) {
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Discrete("d", {})})),
                           "params[0].discreteValues",
                           "discreteValues is required for DISCRETE parameters"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Discrete("d", {1, 2, 2})})),
                           "params[0].discreteValues", "strictly increasing"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Discrete("d", {3, 2})})),
                           "params[0].discreteValues", "strictly increasing"));
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Discrete("d", {1, NAN})})),
                           "params[0].discreteValues", "finite"));
  std::vector<double> many(1000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i);
  EXPECT_TRUE(ValidateStudyConfig(Config({Discrete("d", many)})).ok());
  many.push_back(1000);
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(Config({Discrete("d", many)})),
                           "params[0].discreteValues",
                           "at most 1000 discreteValues are allowed, got 1001"));
}

TEST(ValidateStudyConfigTest, GridSearchRefusesDouble) {
  StudyConfig c = Config({Integer("n", 0, 3), Double("x", 0, 1)});
  c.algorithm = Algorithm::kGridSearch;
  EXPECT_TRUE(HasViolation(ValidateStudyConfig(c), "params[1].type",
                           "GRID_SEARCH only works with INTEGER, CATEGORICAL and DISCRETE"));
  c.algorithm = Algorithm::kRandomSearch;
  EXPECT_TRUE(ValidateStudyConfig(c).ok());
  c = Config({Integer("n", 0, 3), Categorical("c", {"a"}), Discrete("d", {1})});
  c.algorithm = Algorithm::kGridSearch;
  EXPECT_TRUE(ValidateStudyConfig(c).ok());
}

TEST(ValidateStudyConfigTest, ReportsEveryProblem) {
  Status s = ValidateStudyConfig(Config({Double("x", 1, 0), Integer("x", 0.5, 2)}));
  EXPECT_TRUE(HasViolation(s, "params[0].maxValue", "greater than"));
  EXPECT_TRUE(HasViolation(s, "params[1].parameterName", "used twice"));
  EXPECT_TRUE(HasViolation(s, "params[1].minValue", "must be an integer"));
}

// ---- ParseStudyConfig --------------------------------------------------------------------------

// Found by fuzz_study_json: a number too large for a double made the JSON library throw
// out_of_range, which escaped ParseStudyConfig (std::terminate) instead of becoming an error.
TEST(ParseStudyConfigTest, HugeNumberIsAnErrorNotAThrow) {
  for (const char* text :
       {"1e3080",
        R"({"params":[{"parameterName":"a","type":"DOUBLE","minValue":0,"maxValue":1e400}]})"}) {
    auto r = ParseStudyConfig(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("malformed HyperparameterSpec JSON"), std::string::npos)
        << r.status().message();
  }
}

TEST(ParseStudyConfigTest, ReadsCamelCase) {
  auto r = ParseStudyConfig(R"({
    "goal": "MINIMIZE", "algorithm": "RANDOM_SEARCH", "maxParallelTrials": 3,
    "enableTrialEarlyStopping": true, "seed": 42,
    "params": [
      {"parameterName": "learning-rate", "type": "DOUBLE", "minValue": 0.0001, "maxValue": 0.1,
       "scaleType": "UNIT_LOG_SCALE"},
      {"parameterName": "layers", "type": "INTEGER", "minValue": 1, "maxValue": 8,
       "scaleType": "UNIT_LINEAR_SCALE"},
      {"parameterName": "opt", "type": "CATEGORICAL", "categoricalValues": ["adam", "sgd"]},
      {"parameterName": "batch", "type": "DISCRETE", "discreteValues": [16, 32, 64],
       "scaleType": "UNIT_REVERSE_LOG_SCALE"}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->goal, Goal::kMinimize);
  EXPECT_EQ(r->algorithm, Algorithm::kRandomSearch);
  EXPECT_EQ(r->max_parallel_trials, 3);
  EXPECT_TRUE(r->early_stopping);
  EXPECT_EQ(r->seed, 42u);
  ASSERT_EQ(r->params.size(), 4u);
  EXPECT_EQ(r->params[0].name, "learning-rate");
  EXPECT_EQ(r->params[0].type, ParameterType::kDouble);
  EXPECT_EQ(r->params[0].min_value, 0.0001);
  EXPECT_EQ(r->params[0].max_value, 0.1);
  EXPECT_EQ(r->params[0].scale, ScaleType::kLog);
  EXPECT_EQ(r->params[1].type, ParameterType::kInteger);
  EXPECT_EQ(r->params[1].scale, ScaleType::kLinear);
  EXPECT_EQ(r->params[2].type, ParameterType::kCategorical);
  EXPECT_EQ(r->params[2].categorical_values, (std::vector<std::string>{"adam", "sgd"}));
  EXPECT_EQ(r->params[2].scale, ScaleType::kNone);
  EXPECT_EQ(r->params[3].type, ParameterType::kDiscrete);
  EXPECT_EQ(r->params[3].discrete_values, (std::vector<double>{16, 32, 64}));
  EXPECT_EQ(r->params[3].scale, ScaleType::kReverseLog);
}

TEST(ParseStudyConfigTest, ReadsSnakeCase) {
  auto r = ParseStudyConfig(R"({
    "goal": "MAXIMIZE", "algorithm": "GRID_SEARCH", "max_parallel_trials": 2,
    "enable_trial_early_stopping": true,
    "params": [
      {"parameter_name": "n", "type": "INTEGER", "min_value": 1, "max_value": 4,
       "scale_type": "UNIT_LOG_SCALE"},
      {"parameter_name": "c", "type": "CATEGORICAL", "categorical_values": ["x"]},
      {"parameter_name": "d", "type": "DISCRETE", "discrete_values": [0.5, 1]}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->goal, Goal::kMaximize);
  EXPECT_EQ(r->algorithm, Algorithm::kGridSearch);
  EXPECT_EQ(r->max_parallel_trials, 2);
  EXPECT_TRUE(r->early_stopping);
  EXPECT_EQ(r->params[0].name, "n");
  EXPECT_EQ(r->params[0].min_value, 1);
  EXPECT_EQ(r->params[0].max_value, 4);
  EXPECT_EQ(r->params[0].scale, ScaleType::kLog);
  EXPECT_EQ(r->params[1].categorical_values, (std::vector<std::string>{"x"}));
  EXPECT_EQ(r->params[2].discrete_values, (std::vector<double>{0.5, 1}));
}

TEST(ParseStudyConfigTest, DefaultsAndUnspecifiedEnums) {
  auto r = ParseStudyConfig(
      R"({"params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->goal, Goal::kMaximize);
  EXPECT_EQ(r->algorithm, Algorithm::kUnspecified);
  EXPECT_EQ(r->max_parallel_trials, 1);
  EXPECT_FALSE(r->early_stopping);
  EXPECT_EQ(r->seed, 0u);
  EXPECT_EQ(r->params[0].scale, ScaleType::kNone);

  r = ParseStudyConfig(R"({"goal": "GOAL_TYPE_UNSPECIFIED", "algorithm": "ALGORITHM_UNSPECIFIED",
    "maxParallelTrials": 0, "enableTrialEarlyStopping": null,
    "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1,
                "scaleType": "NONE"}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->goal, Goal::kMaximize);
  EXPECT_EQ(r->algorithm, Algorithm::kUnspecified);
  EXPECT_EQ(r->max_parallel_trials, 1);  // 0 is proto3's "unset"
}

TEST(ParseStudyConfigTest, IgnoresTheServiceFieldsAndUnknownKeys) {
  auto r = ParseStudyConfig(R"({"op": "suggest", "maxTrials": 40, "maxFailedTrials": 3,
    "hyperparameterMetricTag": "accuracy", "resumePreviousJobId": "job_1",
    "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1,
                "comment": "anything"}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->params.size(), 1u);
}

TEST(ParseStudyConfigTest, AcceptsNumericStrings) {
  auto r = ParseStudyConfig(R"({"maxParallelTrials": "4", "seed": "18446744073709551615",
    "params": [
      {"parameterName": "lr", "type": "DOUBLE", "minValue": "1e-5", "maxValue": "0.1"},
      {"parameterName": "n", "type": "INTEGER", "minValue": "-3", "maxValue": "7"},
      {"parameterName": "d", "type": "DISCRETE", "discreteValues": ["0.1", 2, "64"]}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_parallel_trials, 4);
  EXPECT_EQ(r->seed, 18446744073709551615u);
  EXPECT_EQ(r->params[0].min_value, 1e-5);
  EXPECT_EQ(r->params[0].max_value, 0.1);
  EXPECT_EQ(r->params[1].min_value, -3);
  EXPECT_EQ(r->params[2].discrete_values, (std::vector<double>{0.1, 2, 64}));
}

TEST(ParseStudyConfigTest, RefusesUnknownEnumNames) {
  const std::string param = R"({"parameterName": "x", "type": "DOUBLE", "minValue": 0,
                                "maxValue": 1})";
  EXPECT_TRUE(
      HasViolation(ParseStudyConfig(R"({"goal": "UP", "params": [)" + param + "]}").status(),
                   "goal", "unknown goal \"UP\""));
  EXPECT_TRUE(HasViolation(
      ParseStudyConfig(R"({"algorithm": "BAYES", "params": [)" + param + "]}").status(),
      "algorithm", "unknown algorithm \"BAYES\""));
  EXPECT_TRUE(HasViolation(
      ParseStudyConfig(R"({"algorithm": "POPULATION_BASED_TRAINING", "params": [)" + param + "]}")
          .status(),
      "algorithm", "unknown algorithm"));
  EXPECT_TRUE(HasViolation(
      ParseStudyConfig(R"({"params": [)" + param + R"(, {"parameterName": "y", "type": "FLOAT"}]})")
          .status(),
      "params[1].type", "unknown type \"FLOAT\""));
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"params": [{"parameterName": "y",
    "type": "DOUBLE", "minValue": 1, "maxValue": 2, "scaleType": "LOG"}]})")
                               .status(),
                           "params[0].scaleType", "unknown scaleType \"LOG\""));
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"goal": 1, "params": [)" + param + "]}").status(),
                           "goal", "must be one of"));
}

TEST(ParseStudyConfigTest, TypeIsRequired) {
  EXPECT_TRUE(HasViolation(
      ParseStudyConfig(R"({"params": [{"parameterName": "y", "type": "PARAMETER_TYPE_UNSPECIFIED",
                                       "minValue": 0, "maxValue": 1}]})")
          .status(),
      "params[0].type", "type is required (DOUBLE, INTEGER, CATEGORICAL or DISCRETE)"));
  EXPECT_TRUE(HasViolation(
      ParseStudyConfig(R"({"params": [{"parameterName": "y", "minValue": 0, "maxValue": 1}]})")
          .status(),
      "params[0].type", "type is required"));
}

TEST(ParseStudyConfigTest, BoundsPresenceRules) {
  // Proto3 doubles: an absent bound is 0 (a 0 bound is left out of the canonical JSON).
  auto zero_min =
      ParseStudyConfig(R"({"params": [{"parameterName": "y", "type": "DOUBLE", "maxValue": 1}]})");
  ASSERT_TRUE(zero_min.ok()) << zero_min.status().ToString();
  EXPECT_EQ(zero_min->params[0].min_value, 0);
  EXPECT_EQ(zero_min->params[0].max_value, 1);
  EXPECT_TRUE(HasViolation(
      ParseStudyConfig(R"({"params": [{"parameterName": "y", "type": "INTEGER", "minValue": 1}]})")
          .status(),
      "params[0].maxValue", "must not be less than minValue"));
  EXPECT_TRUE(HasViolation(
      ParseStudyConfig(R"({"params": [{"parameterName": "y", "type": "INTEGER"}]})").status(),
      "params[0].minValue", "minValue and maxValue are required for INTEGER parameters"));
  // An explicit zero is still "set" for a CATEGORICAL parameter.
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"params": [{"parameterName": "c",
    "type": "CATEGORICAL", "categoricalValues": ["a"], "minValue": 0}]})")
                               .status(),
                           "params[0].minValue", "must not be set for CATEGORICAL"));
  // Ignored for DISCRETE.
  auto r = ParseStudyConfig(R"({"params": [{"parameterName": "d", "type": "DISCRETE",
    "discreteValues": [1, 2], "minValue": 5, "maxValue": 0}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

TEST(ParseStudyConfigTest, RunsTheValidationRules) {
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"params": [
    {"parameterName": "a", "type": "DOUBLE", "minValue": 0, "maxValue": 1},
    {"parameterName": "b", "type": "INTEGER", "minValue": 0.5, "maxValue": 3}]})")
                               .status(),
                           "params[1].minValue", "must be an integer, got 0.5"));
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"algorithm": "GRID_SEARCH", "params": [
    {"parameterName": "a", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]})")
                               .status(),
                           "params[0].type", "GRID_SEARCH"));
  EXPECT_TRUE(
      HasViolation(ParseStudyConfig(R"({"params": []})").status(), "params", "params is required"));
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({})").status(), "params", "params is required"));
  Status s = ParseStudyConfig(R"({"params": [
    {"parameterName": "a", "type": "DOUBLE", "minValue": 0, "maxValue": 1},
    {"parameterName": "b", "type": "DOUBLE", "minValue": 2, "maxValue": 1}]})")
                 .status();
  EXPECT_NE(s.message().find("params[1].maxValue: maxValue (1) must be greater than minValue (2)"),
            std::string::npos)
      << s.message();
}

TEST(ParseStudyConfigTest, RefusesMalformedValues) {
  EXPECT_EQ(ParseStudyConfig("{\"params\": [").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseStudyConfig("[1]").status().code(), StatusCode::kInvalidArgument);
  const std::string params = R"("params": [{"parameterName": "x", "type": "DOUBLE",
                                             "minValue": 0, "maxValue": 1}])";
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"seed": -1, )" + params + "}").status(), "seed",
                           "non-negative integer"));
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"seed": 1.5, )" + params + "}").status(), "seed",
                           "non-negative integer"));
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"seed": "x1", )" + params + "}").status(), "seed",
                           "non-negative integer"));
  EXPECT_TRUE(
      HasViolation(ParseStudyConfig(R"({"maxParallelTrials": -2, )" + params + "}").status(),
                   "maxParallelTrials", "must not be negative"));
  EXPECT_TRUE(
      HasViolation(ParseStudyConfig(R"({"maxParallelTrials": "two", )" + params + "}").status(),
                   "maxParallelTrials", "int32"));
  EXPECT_TRUE(HasViolation(
      ParseStudyConfig(R"({"enableTrialEarlyStopping": "yes", )" + params + "}").status(),
      "enableTrialEarlyStopping", "true or false"));
  EXPECT_TRUE(
      HasViolation(ParseStudyConfig(R"({"params": {}})").status(), "params", "must be a list"));
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"params": [{"parameterName": "x",
    "type": "DOUBLE", "minValue": "low", "maxValue": 1}]})")
                               .status(),
                           "params[0].minValue", "must be a number"));
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"params": [{"parameterName": "c",
    "type": "CATEGORICAL", "categoricalValues": ["a", 2]}]})")
                               .status(),
                           "params[0].categoricalValues", "list of strings"));
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"params": [{"parameterName": "d",
    "type": "DISCRETE", "discreteValues": [1, "two"]}]})")
                               .status(),
                           "params[0].discreteValues", "list of numbers"));
  EXPECT_TRUE(HasViolation(ParseStudyConfig(R"({"params": [{"parameterName": "x",
    "type": "DOUBLE", "minValue": "NaN", "maxValue": 1}]})")
                               .status(),
                           "params[0].minValue", "finite"));
}

// ---- FormatValue / ParseValue ------------------------------------------------------------------

TEST(FormatValueTest, DoubleAtFullPrecision) {
  ParameterSpec s = Double("x", 0, 1);
  auto v = ParseValue(s, "0.40692436410083732");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->number, 0.40692436410083732);
  EXPECT_EQ(FormatValue(s, *v), "0.40692436410083732");
  EXPECT_EQ(FormatValue(s, {1e-5, -1}), "1.0000000000000001e-05");
  EXPECT_EQ(ParseValue(s, "1.0000000000000001e-05")->number, 1e-5);
  EXPECT_EQ(FormatValue(s, {0.5, -1}), "0.5");
  EXPECT_EQ(FormatValue(s, {1, -1}), "1");
}

TEST(FormatValueTest, DoubleRoundTripsExactly) {
  ParameterSpec s = Double("x", 1e-6, 1e3, ScaleType::kLog);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(std::log(1e-6), std::log(1e3));
  for (int i = 0; i < 2000; ++i) {
    double x = std::exp(u(rng));
    if (x < s.min_value || x > s.max_value) continue;
    auto back = ParseValue(s, FormatValue(s, {x, -1}));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(back->number, x) << FormatValue(s, {x, -1});
  }
}

TEST(ParseValueTest, DoubleMustBeANumberInRange) {
  ParameterSpec s = Double("x", 0, 1);
  EXPECT_FALSE(ParseValue(s, "abc").ok());
  EXPECT_FALSE(ParseValue(s, "").ok());
  EXPECT_FALSE(ParseValue(s, "0.5x").ok());
  EXPECT_FALSE(ParseValue(s, "nan").ok());
  EXPECT_FALSE(ParseValue(s, "1.5").ok());
  EXPECT_FALSE(ParseValue(s, "-0.1").ok());
  EXPECT_EQ(ParseValue(s, "0").value().number, 0);
  EXPECT_EQ(ParseValue(s, "1").value().number, 1);
  EXPECT_EQ(ParseValue(s, "x").status().code(), StatusCode::kInvalidArgument);
}

TEST(FormatValueTest, IntegerWithoutDecimalPoint) {
  ParameterSpec s = Integer("n", -10, 1000);
  EXPECT_EQ(FormatValue(s, {283, -1}), "283");
  EXPECT_EQ(FormatValue(s, {-7, -1}), "-7");
  EXPECT_EQ(FormatValue(s, {0, -1}), "0");
  EXPECT_EQ(FormatValue(s, {-0.0, -1}), "0");
  EXPECT_EQ(FormatValue(Integer("big", 0, 9007199254740992.0), {9007199254740992.0, -1}),
            "9007199254740992");
}

TEST(ParseValueTest, IntegerMustBeIntegralAndInRange) {
  ParameterSpec s = Integer("n", -10, 1000);
  EXPECT_EQ(ParseValue(s, "283").value().number, 283);
  EXPECT_EQ(ParseValue(s, "-10").value().number, -10);
  EXPECT_EQ(ParseValue(s, "1000").value().number, 1000);
  EXPECT_FALSE(ParseValue(s, "283.5").ok());
  EXPECT_FALSE(ParseValue(s, "1001").ok());
  EXPECT_FALSE(ParseValue(s, "-11").ok());
  EXPECT_FALSE(ParseValue(s, "ten").ok());
  for (int v = -10; v <= 1000; ++v) {
    ASSERT_EQ(ParseValue(s, FormatValue(s, {static_cast<double>(v), -1})).value().number, v);
  }
}

TEST(FormatValueTest, DiscreteShortestExact) {
  ParameterSpec s = Discrete("d", {0.1, 0.25, 64, 1e-5});
  EXPECT_EQ(FormatValue(s, {0.1, -1}), "0.1");
  EXPECT_EQ(FormatValue(s, {64, -1}), "64");
  EXPECT_EQ(FormatValue(s, {0.25, -1}), "0.25");
  for (double v : {0.1, 0.25, 64.0}) EXPECT_EQ(ParseValue(s, FormatValue(s, {v, -1}))->number, v);
}

TEST(ParseValueTest, DiscreteSnapsToANearbyListedValue) {
  ParameterSpec s = Discrete("d", {0.1, 1, 64});
  EXPECT_EQ(ParseValue(s, "0.1").value().number, 0.1);
  EXPECT_EQ(ParseValue(s, "0.10000000000000001").value().number, 0.1);
  EXPECT_EQ(ParseValue(s, "0.10000000001").value().number, 0.1);  // 1e-10 relative
  EXPECT_EQ(ParseValue(s, "63.99999999999").value().number, 64);
  EXPECT_EQ(ParseValue(s, "64").value().number, 64);
  EXPECT_FALSE(ParseValue(s, "0.1001").ok());
  EXPECT_FALSE(ParseValue(s, "0.100000001").ok());  // 1e-8 relative
  EXPECT_FALSE(ParseValue(s, "32").ok());
  EXPECT_FALSE(ParseValue(s, "65").ok());
  EXPECT_FALSE(ParseValue(s, "0").ok());
}

TEST(FormatValueTest, CategoricalIsTheString) {
  ParameterSpec s = Categorical("opt", {"adam", "sgd", "rms prop"});
  EXPECT_EQ(FormatValue(s, {0, 1}), "sgd");
  EXPECT_EQ(FormatValue(s, {0, 2}), "rms prop");
  EXPECT_EQ(ParseValue(s, "adam").value().category, 0);
  EXPECT_EQ(ParseValue(s, "rms prop").value().category, 2);
  EXPECT_FALSE(ParseValue(s, "Adam").ok());
  EXPECT_FALSE(ParseValue(s, "").ok());
}

// ---- Space -------------------------------------------------------------------------------------

TEST(SpaceTest, LogScale) {
  StudyConfig c = Config({Double("lr", 1e-5, 1e-1, ScaleType::kLog)});
  Space space(c);
  EXPECT_NEAR(space.ToUnit(0, 1e-5), 0.0, 1e-12);
  EXPECT_NEAR(space.ToUnit(0, 1e-1), 1.0, 1e-12);
  EXPECT_NEAR(space.ToUnit(0, 1e-3), 0.5, 1e-12);
  EXPECT_NEAR(space.FromUnit(0, 0.25), 1e-4, 1e-16);
  EXPECT_EQ(space.FromUnit(0, 0.0), 1e-5);
  EXPECT_EQ(space.FromUnit(0, 1.0), 1e-1);
  EXPECT_EQ(space.FromUnit(0, -3.0), 1e-5);  // clamped
  EXPECT_EQ(space.FromUnit(0, 4.0), 1e-1);
  for (double u = 0; u <= 1; u += 0.125)
    EXPECT_NEAR(space.ToUnit(0, space.FromUnit(0, u)), u, 1e-12);
}

TEST(SpaceTest, ReverseLogScaleIsFineNearTheTop) {
  StudyConfig c = Config({Double("momentum", 0.5, 0.9999, ScaleType::kReverseLog)});
  Space space(c);
  EXPECT_NEAR(space.ToUnit(0, 0.5), 0.0, 1e-12);
  EXPECT_NEAR(space.ToUnit(0, 0.9999), 1.0, 1e-12);
  EXPECT_EQ(space.FromUnit(0, 0.0), 0.5);
  EXPECT_EQ(space.FromUnit(0, 1.0), 0.9999);
  // hi + lo - v is log-uniform: the middle of the unit range sits above the linear midpoint.
  EXPECT_NEAR(space.FromUnit(0, 0.5), 1.4999 - std::sqrt(0.5 * 0.9999), 1e-12);
  EXPECT_GT(space.FromUnit(0, 0.5), 0.75);
  // The top tenth of the unit range covers less than a tenth of the value range.
  EXPECT_LT(0.9999 - space.FromUnit(0, 0.9), 0.1 * (0.9999 - 0.5));
  double prev = 0;
  for (double u = 0; u <= 1; u += 0.0625) {
    double v = space.FromUnit(0, u);
    EXPECT_GT(v, prev);
    EXPECT_NEAR(space.ToUnit(0, v), u, 1e-9);
    prev = v;
  }
}

TEST(SpaceTest, IntegerWithLogScale) {
  StudyConfig c = Config({Integer("units", 1, 1000, ScaleType::kLog)});
  Space space(c);
  EXPECT_TRUE(space.is_discrete(0));
  EXPECT_NEAR(space.ToUnit(0, 10), 1.0 / 3, 1e-12);
  EXPECT_NEAR(space.ToUnit(0, 100), 2.0 / 3, 1e-12);
  EXPECT_EQ(space.FromUnit(0, 1.0 / 3), 10);
  EXPECT_EQ(space.FromUnit(0, 0.34), 10);  // 10.46 rounds down
  EXPECT_EQ(space.FromUnit(0, 0.0), 1);
  EXPECT_EQ(space.FromUnit(0, 1.0), 1000);
  for (double u = 0; u <= 1; u += 0.01) {
    double v = space.FromUnit(0, u);
    EXPECT_EQ(v, std::round(v));
    EXPECT_GE(v, 1);
    EXPECT_LE(v, 1000);
    EXPECT_EQ(space.SnapCoordinate(0, space.SnapCoordinate(0, u)), space.SnapCoordinate(0, u));
  }
  EXPECT_EQ(space.FiniteSize(), 1000);
}

TEST(SpaceTest, DiscreteSnapsToTheNearestValueInScaledSpace) {
  StudyConfig c = Config(
      {Discrete("batch", {16, 32, 64, 128, 256}, ScaleType::kLog), Discrete("lin", {1, 2, 10})});
  Space space(c);
  EXPECT_NEAR(space.ToUnit(0, 64), 0.5, 1e-12);
  // Log scale: the split between 32 and 64 is their geometric mean (45.25), not 48.
  EXPECT_EQ(space.FromUnit(0, space.ToUnit(0, 45)), 32);
  EXPECT_EQ(space.FromUnit(0, space.ToUnit(0, 46)), 64);
  // Linear: the split between 2 and 10 is 6.
  EXPECT_EQ(space.FromUnit(1, space.ToUnit(1, 5.9)), 2);
  EXPECT_EQ(space.FromUnit(1, space.ToUnit(1, 6.1)), 10);
  EXPECT_EQ(space.FromUnit(1, 0.0), 1);
  EXPECT_EQ(space.FromUnit(1, 1.0), 10);
  EXPECT_EQ(space.SnapCoordinate(1, 0.1), space.ToUnit(1, 2));
  EXPECT_EQ(space.FiniteSize(), 15);
}

TEST(SpaceTest, RankEncodingSpacesDiscreteValuesEvenly) {
  StudyConfig c = Config({Discrete("warmup", {0, 100, 500, 1000, 5000}),
                          Discrete("batch", {16, 32, 64, 128, 256}, ScaleType::kLog),
                          Discrete("one", {7}), Double("x", 0, 10)});
  Space scaled(c);
  Space ranked(c, DiscreteEncoding::kRank);
  // Scaled: 0, 100 and 500 share the first tenth of the coordinate; ranked: a quarter each.
  EXPECT_NEAR(scaled.ToUnit(0, 500), 0.1, 1e-12);
  const std::vector<double> warmup = {0, 100, 500, 1000, 5000};
  for (size_t k = 0; k < warmup.size(); ++k) {
    EXPECT_NEAR(ranked.ToUnit(0, warmup[k]), 0.25 * static_cast<double>(k), 1e-12);
    EXPECT_EQ(ranked.FromUnit(0, 0.25 * static_cast<double>(k)), warmup[k]);
  }
  // Between listed values the scale's map is interpolated (monotone, continuous).
  EXPECT_NEAR(ranked.ToUnit(0, 300), 0.375, 1e-12);
  EXPECT_NEAR(ranked.ToUnit(0, 3000), 0.875, 1e-12);
  // Decoding rounds to the nearest rank, and snapping is idempotent.
  EXPECT_EQ(ranked.FromUnit(0, 0.37), 100);
  EXPECT_EQ(ranked.FromUnit(0, 0.38), 500);
  EXPECT_EQ(ranked.FromUnit(0, 0.12), 0);
  EXPECT_EQ(ranked.FromUnit(0, 0.13), 100);
  EXPECT_EQ(ranked.FromUnit(0, -1.0), 0);
  EXPECT_EQ(ranked.FromUnit(0, 2.0), 5000);
  for (double u = 0; u <= 1; u += 0.01) {
    const double s = ranked.SnapCoordinate(0, u);
    EXPECT_EQ(ranked.SnapCoordinate(0, s), s);
    EXPECT_NEAR(s * 4, std::round(s * 4), 1e-12);
  }
  // A list evenly spaced in its scale encodes the same either way, bit for bit.
  for (double b : {16, 32, 64, 128, 256}) EXPECT_EQ(ranked.ToUnit(1, b), scaled.ToUnit(1, b));
  for (double u = 0; u <= 1; u += 0.01) EXPECT_EQ(ranked.FromUnit(1, u), scaled.FromUnit(1, u));
  // One value, and other types: unchanged.
  EXPECT_EQ(ranked.ToUnit(2, 7), scaled.ToUnit(2, 7));
  EXPECT_EQ(ranked.FromUnit(2, 0.9), 7);
  EXPECT_EQ(ranked.ToUnit(3, 2.5), scaled.ToUnit(3, 2.5));
  // Round trip of a whole assignment.
  Assignment a = {{1000, -1}, {32, -1}, {7, -1}, {2.5, -1}};
  EXPECT_EQ(ranked.Decode(ranked.Encode(a))[0].number, 1000);
  EXPECT_EQ(ranked.FiniteSize(), scaled.FiniteSize());
}

TEST(SpaceTest, EncodeDecodeMixedAssignment) {
  StudyConfig c = Config({Categorical("opt", {"adam", "sgd", "rms"}),
                          Double("lr", 1e-4, 1e-1, ScaleType::kLog), Integer("layers", 1, 8),
                          Categorical("act", {"relu", "tanh"}), Discrete("batch", {16, 32, 64})});
  Space space(c);
  EXPECT_EQ(space.num_continuous(), 3);
  EXPECT_EQ(space.num_categorical(), 2);
  EXPECT_EQ(space.num_categories(0), 3);
  EXPECT_EQ(space.num_categories(1), 2);
  EXPECT_EQ(space.continuous_spec(1).name, "layers");
  EXPECT_EQ(space.categorical_spec(1).name, "act");
  EXPECT_FALSE(space.is_discrete(0));
  EXPECT_TRUE(space.is_discrete(2));
  EXPECT_EQ(space.FiniteSize(), -1);

  Assignment a = {{0, 2}, {1e-3, -1}, {5, -1}, {0, 1}, {32, -1}};
  Point p = space.Encode(a);
  ASSERT_EQ(p.cont.size(), 3u);
  EXPECT_NEAR(p.cont[0], 1.0 / 3, 1e-12);
  EXPECT_NEAR(p.cont[1], 4.0 / 7, 1e-12);
  EXPECT_NEAR(p.cont[2], 1.0 / 3, 1e-12);  // 32 in [16, 64], linear
  EXPECT_EQ(p.cat, (std::vector<int>{2, 1}));
  Assignment back = space.Decode(p);
  EXPECT_NEAR(back[1].number, 1e-3, 1e-15);
  EXPECT_EQ(back[2].number, 5);
  EXPECT_EQ(back[4].number, 32);
  EXPECT_EQ(back[0].category, 2);
  EXPECT_EQ(back[3].category, 1);
  EXPECT_EQ(space.Snap(space.Snap(p)), space.Snap(p));

  Point centre = space.Centre();
  EXPECT_EQ(centre.cat, (std::vector<int>{0, 0}));
  Assignment mid = space.Decode(centre);
  EXPECT_NEAR(mid[1].number, std::sqrt(1e-4 * 1e-1), 1e-12);
  EXPECT_TRUE(mid[2].number == 4 || mid[2].number == 5);
  EXPECT_EQ(mid[4].number, 32);
}

}  // namespace
}  // namespace trainyard::tuning

namespace trainyard::tuning {
namespace {

TEST(SpaceBoundsTest, TheEndsOfEveryScaleAreTheBoundsExactly) {
  for (ScaleType scale : {ScaleType::kLinear, ScaleType::kLog, ScaleType::kReverseLog}) {
    StudyConfig c;
    c.params = {testing_support::Double("x", 0.01, 0.9999, scale)};
    Space space(c);
    EXPECT_EQ(space.FromUnit(0, 0.0), 0.01);
    EXPECT_EQ(space.FromUnit(0, 1.0), 0.9999);
    EXPECT_EQ(space.FromUnit(0, -0.5), 0.01);
  }
}

}  // namespace
}  // namespace trainyard::tuning
