// HyperparameterSpec JSON -> StudyConfig, the compat §10 rules on a StudyConfig, and the text form
// of parameter values. Messages follow src/model/job_validate.cc (CheckParameter) so a spec that
// reaches the tuner directly reads the same as one refused at job creation.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/tuning/study.h"

namespace trainyard::tuning {
namespace {

using nlohmann::json;

// INTEGER values travel as doubles; beyond 2^53 they would stop being exact.
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53
constexpr size_t kMaxDiscreteValues = 1000;

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

// Shortest readable text of a double for messages ("0", "1e-05", "0.5").
std::string Num(double d) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

// Collects violations; the Status names every one ("field: description", "; "-separated) and
// carries them as field violations too.
class Violations {
 public:
  void Add(std::string field, std::string description) {
    list_.push_back({std::move(field), std::move(description)});
  }
  bool empty() const { return list_.empty(); }
  size_t size() const { return list_.size(); }
  Status ToStatus() const {
    if (list_.empty()) return Status::Ok();
    std::string message;
    for (const FieldViolation& v : list_) {
      if (!message.empty()) message += "; ";
      message += v.field + ": " + v.description;
    }
    Status status = InvalidArgument(std::move(message));
    for (const FieldViolation& v : list_) status.AddViolation(v.field, v.description);
    return status;
  }

 private:
  std::vector<FieldViolation> list_;
};

const char* ScaleName(ScaleType s) {
  switch (s) {
    case ScaleType::kNone:
      return "NONE";
    case ScaleType::kLinear:
      return "UNIT_LINEAR_SCALE";
    case ScaleType::kLog:
      return "UNIT_LOG_SCALE";
    case ScaleType::kReverseLog:
      return "UNIT_REVERSE_LOG_SCALE";
  }
  return "NONE";
}

const char* TypeName(ParameterType t) {
  switch (t) {
    case ParameterType::kDouble:
      return "DOUBLE";
    case ParameterType::kInteger:
      return "INTEGER";
    case ParameterType::kCategorical:
      return "CATEGORICAL";
    case ParameterType::kDiscrete:
      return "DISCRETE";
  }
  return "DOUBLE";
}

bool IsLog(ScaleType s) { return s == ScaleType::kLog || s == ScaleType::kReverseLog; }

// A whole string as a double (from_chars: no leading '+' or spaces; "nan"/"inf" parse and are
// refused later as not finite).
bool ParseDouble(std::string_view text, double* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data(), end, *out);
  return r.ec == std::errc() && r.ptr == end;
}

// ---- Reading the JSON (absent or null == proto3 default) ---------------------------------------

// The member under its camelCase name, else its snake_case one; null counts as absent.
const json* Get(const json& obj, std::string_view camel, std::string_view snake) {
  for (std::string_view key : {camel, snake}) {
    auto it = obj.find(key);
    if (it != obj.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

// A double from a JSON number or a numeric string (proto3 JSON allows both).
bool ReadDouble(const json& v, double* out) {
  if (v.is_number()) {
    *out = v.get<double>();
    return true;
  }
  return v.is_string() && ParseDouble(v.get_ref<const std::string&>(), out);
}

// An integral number in [lo, hi] from a JSON number or a numeric string.
bool ReadInteger(const json& v, double lo, double hi, int64_t* out) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (static_cast<double>(u) > hi) return false;
      *out = static_cast<int64_t>(u);
    } else {
      *out = v.get<int64_t>();
    }
    return static_cast<double>(*out) >= lo && static_cast<double>(*out) <= hi;
  }
  double d;
  if (!ReadDouble(v, &d) || !std::isfinite(d) || d != std::trunc(d) || d < lo || d > hi) {
    return false;
  }
  *out = static_cast<int64_t>(d);
  return true;
}

// The seed: any uint64, as a JSON number or a decimal string.
bool ReadSeed(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer()) return false;  // negative
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!(d >= 0) || d != std::trunc(d) || d >= 18446744073709551616.0) return false;
    *out = static_cast<uint64_t>(d);
    return true;
  }
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// An enum member: "" and the *_UNSPECIFIED name mean unset (returns -1); an unknown name or a
// non-string records a violation and returns -2. Otherwise the index into `names`.
int ReadEnum(const json& obj, std::string_view camel, std::string_view snake,
             std::initializer_list<std::string_view> names, std::string_view unspecified,
             const std::string& field, Violations* out) {
  const json* v = Get(obj, camel, snake);
  if (v == nullptr) return -1;
  std::string expected;
  for (std::string_view n : names) {
    if (!expected.empty()) expected += ", ";
    expected += n;
  }
  if (!v->is_string()) {
    out->Add(field, std::string(camel) + " must be one of " + expected);
    return -2;
  }
  const std::string& s = v->get_ref<const std::string&>();
  if (s.empty() || (!unspecified.empty() && s == unspecified)) return -1;
  int i = 0;
  for (std::string_view n : names) {
    if (s == n) return i;
    ++i;
  }
  out->Add(field, "unknown " + std::string(camel) + " " + Quote(s) + " (" + expected + ")");
  return -2;
}

void ParseParameter(const json& p, const std::string& base, ParameterSpec* spec, Violations* out) {
  if (!p.is_object()) {
    out->Add(base, "each parameter must be a JSON object");
    return;
  }
  if (const json* name = Get(p, "parameterName", "parameter_name")) {
    if (name->is_string()) {
      spec->name = name->get<std::string>();
    } else {
      out->Add(base + ".parameterName", "parameterName must be a string");
    }
  }

  int type = ReadEnum(p, "type", "type", {"DOUBLE", "INTEGER", "CATEGORICAL", "DISCRETE"},
                      "PARAMETER_TYPE_UNSPECIFIED", base + ".type", out);
  if (type == -1) {
    out->Add(base + ".type", "type is required (DOUBLE, INTEGER, CATEGORICAL or DISCRETE)");
  }
  if (type >= 0) spec->type = static_cast<ParameterType>(type);

  int scale = ReadEnum(p, "scaleType", "scale_type",
                       {"NONE", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"},
                       "", base + ".scaleType", out);
  if (scale >= 0) spec->scale = static_cast<ScaleType>(scale);

  const json* min = Get(p, "minValue", "min_value");
  const json* max = Get(p, "maxValue", "max_value");
  if (min != nullptr && !ReadDouble(*min, &spec->min_value)) {
    out->Add(base + ".minValue", "minValue must be a number");
  }
  if (max != nullptr && !ReadDouble(*max, &spec->max_value)) {
    out->Add(base + ".maxValue", "maxValue must be a number");
  }

  if (const json* values = Get(p, "categoricalValues", "categorical_values")) {
    if (!values->is_array()) {
      out->Add(base + ".categoricalValues", "categoricalValues must be a list of strings");
    } else {
      for (const json& v : *values) {
        if (!v.is_string()) {
          out->Add(base + ".categoricalValues", "categoricalValues must be a list of strings");
          break;
        }
        spec->categorical_values.push_back(v.get<std::string>());
      }
    }
  }
  if (const json* values = Get(p, "discreteValues", "discrete_values")) {
    if (!values->is_array()) {
      out->Add(base + ".discreteValues", "discreteValues must be a list of numbers");
    } else {
      for (const json& v : *values) {
        double d;
        if (!ReadDouble(v, &d)) {
          out->Add(base + ".discreteValues", "discreteValues must be a list of numbers");
          break;
        }
        spec->discrete_values.push_back(d);
      }
    }
  }

  // What the StudyConfig cannot tell once parsed: whether minValue/maxValue were given at all.
  if (type < 0) return;
  const std::string type_name = TypeName(spec->type);
  if (spec->type == ParameterType::kDouble || spec->type == ParameterType::kInteger) {
    // minValue and maxValue are plain proto3 doubles (compat §3): an absent one is 0, and the
    // canonical JSON leaves a 0 out, so "minValue": 0 must read back the same when absent (a job
    // re-created from its own GET output). Only both absent is an error.
    if (min == nullptr && max == nullptr) {
      out->Add(base + ".minValue",
               "minValue and maxValue are required for " + type_name + " parameters");
    }
  } else if (spec->type == ParameterType::kCategorical && (min != nullptr || max != nullptr)) {
    out->Add(base + (min != nullptr ? ".minValue" : ".maxValue"),
             "minValue and maxValue must not be set for CATEGORICAL parameters");
  } else if (spec->type == ParameterType::kDiscrete) {
    // Ignored for DISCRETE (compat §3); the bounds are the first and last listed values.
    spec->min_value = 0;
    spec->max_value = 0;
  }
}

void CheckParameter(const ParameterSpec& s, const std::string& base, Algorithm algorithm,
                    std::set<std::string>* names, Violations* out) {
  if (s.name.empty()) {
    out->Add(base + ".parameterName", "parameterName is required");
  } else {
    if (!names->insert(s.name).second) {
      out->Add(base + ".parameterName", "parameterName " + Quote(s.name) + " is used twice");
    }
    for (char ch : s.name) {
      if (ch == '=' || static_cast<unsigned char>(ch) <= ' ') {
        out->Add(base + ".parameterName",
                 "parameterName " + Quote(s.name) +
                     " cannot be a command-line flag name (no spaces or '=')");
        break;
      }
    }
  }
  const std::string type = TypeName(s.type);
  const std::string scale = ScaleName(s.scale);
  const bool log_scale = IsLog(s.scale);
  if (algorithm == Algorithm::kGridSearch && s.type == ParameterType::kDouble) {
    out->Add(base + ".type",
             "GRID_SEARCH only works with INTEGER, CATEGORICAL and DISCRETE parameters");
  }
  if (!s.categorical_values.empty() && s.type != ParameterType::kCategorical) {
    out->Add(base + ".categoricalValues", "categoricalValues is only for CATEGORICAL parameters");
  }
  if (!s.discrete_values.empty() && s.type != ParameterType::kDiscrete) {
    out->Add(base + ".discreteValues", "discreteValues is only for DISCRETE parameters");
  }

  switch (s.type) {
    case ParameterType::kDouble:
    case ParameterType::kInteger: {
      const double min = s.min_value, max = s.max_value;
      bool finite = true;
      for (auto [field, v] : {std::pair{"minValue", min}, std::pair{"maxValue", max}}) {
        if (!std::isfinite(v)) {
          out->Add(base + "." + field,
                   std::string(field) + " must be a finite number, got " + Num(v));
          finite = false;
        } else if (s.type == ParameterType::kInteger && v != std::trunc(v)) {
          out->Add(
              base + "." + field,
              std::string(field) + " of an INTEGER parameter must be an integer, got " + Num(v));
          finite = false;
        } else if (s.type == ParameterType::kInteger && std::abs(v) > kMaxExactInteger) {
          out->Add(base + "." + field, std::string(field) +
                                           " of an INTEGER parameter must lie within +-2^53, got " +
                                           Num(v));
          finite = false;
        }
      }
      if (!finite) break;
      if (s.type == ParameterType::kDouble && !(min < max)) {
        out->Add(base + ".maxValue",
                 "maxValue (" + Num(max) + ") must be greater than minValue (" + Num(min) + ")");
      } else if (s.type == ParameterType::kInteger && !(min <= max)) {
        out->Add(base + ".maxValue",
                 "maxValue (" + Num(max) + ") must not be less than minValue (" + Num(min) + ")");
      }
      if (log_scale && min <= 0) {
        out->Add(base + ".minValue",
                 scale + " needs a strictly positive range; minValue is " + Num(min));
      }
      break;
    }
    case ParameterType::kCategorical: {
      if (s.categorical_values.empty()) {
        out->Add(base + ".categoricalValues",
                 "categoricalValues is required for CATEGORICAL parameters");
      }
      // The struct cannot say "unset"; a nonzero bound was certainly set.
      if (s.min_value != 0 || s.max_value != 0) {
        out->Add(base + (s.min_value != 0 ? ".minValue" : ".maxValue"),
                 "minValue and maxValue must not be set for CATEGORICAL parameters");
      }
      if (s.scale != ScaleType::kNone) {
        out->Add(base + ".scaleType", "scaleType must not be set for CATEGORICAL parameters");
      }
      std::set<std::string_view> seen;
      for (const std::string& v : s.categorical_values) {
        if (!seen.insert(v).second) {
          out->Add(base + ".categoricalValues",
                   "categorical value " + Quote(v) + " is listed twice");
        }
      }
      break;
    }
    case ParameterType::kDiscrete: {
      const std::vector<double>& values = s.discrete_values;
      if (values.empty()) {
        out->Add(base + ".discreteValues", "discreteValues is required for DISCRETE parameters");
        break;
      }
      if (values.size() > kMaxDiscreteValues) {
        out->Add(base + ".discreteValues",
                 "at most 1000 discreteValues are allowed, got " + std::to_string(values.size()));
      }
      for (double v : values) {
        if (!std::isfinite(v)) {
          out->Add(base + ".discreteValues",
                   "discreteValues must be finite numbers, got " + Num(v));
          return;
        }
      }
      for (size_t i = 1; i < values.size(); ++i) {
        if (!(values[i - 1] < values[i])) {
          out->Add(base + ".discreteValues", "discreteValues must be strictly increasing");
          break;
        }
      }
      if (log_scale && values.front() <= 0) {
        out->Add(base + ".discreteValues", scale + " needs strictly positive discreteValues");
      }
      break;
    }
  }
}

// The compat §10 rules; parameters whose JSON was already refused (`skip`) are left out so one
// mistake is not reported twice.
void CheckConfig(const StudyConfig& config, const std::vector<bool>& skip, Violations* out) {
  if (config.max_parallel_trials < 1) {
    out->Add("maxParallelTrials", "maxParallelTrials must be at least 1, got " +
                                      std::to_string(config.max_parallel_trials));
  }
  if (config.params.empty()) {
    out->Add("params", "params is required: list at least one parameter to tune");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < config.params.size(); ++i) {
    if (i < skip.size() && skip[i]) continue;
    CheckParameter(config.params[i], "params[" + std::to_string(i) + "]", config.algorithm, &names,
                   out);
  }
}

}  // namespace

Status ValidateStudyConfig(const StudyConfig& config) {
  Violations out;
  CheckConfig(config, {}, &out);
  return out.ToStatus();
}

Result<StudyConfig> ParseStudyConfig(std::string_view json_text) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number too large for a double ("1e400").
    return InvalidArgument(std::string("malformed HyperparameterSpec JSON: ") + e.what());
  }
  if (!root.is_object()) return InvalidArgument("a HyperparameterSpec must be a JSON object");

  StudyConfig config;
  Violations out;
  std::vector<bool> skip;  // params whose JSON was refused
  int goal = ReadEnum(root, "goal", "goal", {"MAXIMIZE", "MINIMIZE"}, "GOAL_TYPE_UNSPECIFIED",
                      "goal", &out);
  config.goal = goal == 1 ? Goal::kMinimize : Goal::kMaximize;
  int algorithm = ReadEnum(root, "algorithm", "algorithm", {"GRID_SEARCH", "RANDOM_SEARCH"},
                           "ALGORITHM_UNSPECIFIED", "algorithm", &out);
  config.algorithm = algorithm == 0   ? Algorithm::kGridSearch
                     : algorithm == 1 ? Algorithm::kRandomSearch
                                      : Algorithm::kUnspecified;

  if (const json* v = Get(root, "maxParallelTrials", "max_parallel_trials")) {
    int64_t n = 0;
    if (!ReadInteger(*v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(),
                     &n)) {
      out.Add("maxParallelTrials", "maxParallelTrials must be an int32");
    } else if (n < 0) {
      out.Add("maxParallelTrials", "maxParallelTrials must not be negative");
    } else {
      config.max_parallel_trials = n == 0 ? 1 : static_cast<int>(n);  // 0 = unset = default 1
    }
  }
  if (const json* v = Get(root, "enableTrialEarlyStopping", "enable_trial_early_stopping")) {
    if (v->is_boolean()) {
      config.early_stopping = v->get<bool>();
    } else {
      out.Add("enableTrialEarlyStopping", "enableTrialEarlyStopping must be true or false");
    }
  }
  if (const json* v = Get(root, "seed", "seed")) {
    if (!ReadSeed(*v, &config.seed)) out.Add("seed", "seed must be a non-negative integer");
  }

  if (const json* params = Get(root, "params", "params")) {
    if (!params->is_array()) {
      out.Add("params", "params must be a list of ParameterSpec objects");
    } else {
      config.params.resize(params->size());
      skip.resize(params->size());
      for (size_t i = 0; i < params->size(); ++i) {
        size_t before = out.size();
        ParseParameter((*params)[i], "params[" + std::to_string(i) + "]", &config.params[i], &out);
        skip[i] = out.size() != before;
      }
    }
  }
  CheckConfig(config, skip, &out);
  if (!out.empty()) return out.ToStatus();
  return config;
}

std::string FormatValue(const ParameterSpec& spec, const ParameterValue& value) {
  switch (spec.type) {
    case ParameterType::kDouble: {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", value.number);
      return buf;
    }
    case ParameterType::kInteger: {
      double v = std::round(value.number);
      if (std::abs(v) < 9.2e18) return std::to_string(static_cast<int64_t>(v));
      char buf[400];
      std::snprintf(buf, sizeof buf, "%.0f", v);
      return buf;
    }
    case ParameterType::kDiscrete:
      return Num(value.number);
    case ParameterType::kCategorical:
      if (value.category >= 0 &&
          static_cast<size_t>(value.category) < spec.categorical_values.size()) {
        return spec.categorical_values[static_cast<size_t>(value.category)];
      }
      return "";
  }
  return "";
}

Result<ParameterValue> ParseValue(const ParameterSpec& spec, std::string_view text) {
  const std::string where = "parameter " + Quote(spec.name) + ": ";
  ParameterValue value;
  if (spec.type == ParameterType::kCategorical) {
    for (size_t i = 0; i < spec.categorical_values.size(); ++i) {
      if (spec.categorical_values[i] == text) {
        value.category = static_cast<int>(i);
        return value;
      }
    }
    return InvalidArgument(where + Quote(text) + " is not one of its categoricalValues");
  }
  double v;
  if (!ParseDouble(text, &v) || !std::isfinite(v)) {
    return InvalidArgument(where + Quote(text) + " is not a finite number");
  }
  switch (spec.type) {
    case ParameterType::kDouble:
      if (!(v >= spec.min_value && v <= spec.max_value)) {
        return InvalidArgument(where + Quote(text) + " is outside [" + Num(spec.min_value) + ", " +
                               Num(spec.max_value) + "]");
      }
      value.number = v;
      return value;
    case ParameterType::kInteger:
      if (v != std::trunc(v)) return InvalidArgument(where + Quote(text) + " is not an integer");
      if (!(v >= spec.min_value && v <= spec.max_value)) {
        return InvalidArgument(where + Quote(text) + " is outside [" + Num(spec.min_value) + ", " +
                               Num(spec.max_value) + "]");
      }
      value.number = v + 0.0;  // no negative zero
      return value;
    case ParameterType::kDiscrete: {
      // The nearest listed value, accepted within 1e-9 relative (a value printed by another tool
      // with fewer digits still finds its way back).
      const std::vector<double>& vals = spec.discrete_values;
      auto it = std::lower_bound(vals.begin(), vals.end(), v);
      double best = std::numeric_limits<double>::quiet_NaN();
      double best_dist = std::numeric_limits<double>::infinity();
      for (auto c : {it, it == vals.begin() ? vals.end() : it - 1}) {
        if (c == vals.end()) continue;
        double dist = std::abs(*c - v);
        if (dist < best_dist) {
          best_dist = dist;
          best = *c;
        }
      }
      if (!(best_dist <= 1e-9 * std::max(std::abs(best), std::abs(v)))) {
        return InvalidArgument(where + Quote(text) + " is not one of its discreteValues");
      }
      value.number = best;
      return value;
    }
    case ParameterType::kCategorical:
      break;
  }
  return InvalidArgument(where + "unknown parameter type");
}

}  // namespace trainyard::tuning
