#include "job_schema.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "json_text.h"
#include "trainyard/core/time.h"

namespace trainyard::model::schema {
namespace {

using nlohmann::json;

// ---- Enums (compat §1-§3). The first value of each is the proto3 zero value. -------------------

constexpr std::string_view kScaleTierValues[] = {"BASIC",     "STANDARD_1", "PREMIUM_1",
                                                 "BASIC_GPU", "BASIC_TPU",  "CUSTOM"};
constexpr EnumDef kScaleTier{"type.googleapis.com/google.cloud.ml.v1.TrainingInput.ScaleTier",
                             kScaleTierValues};

constexpr std::string_view kAcceleratorTypeValues[] = {"ACCELERATOR_TYPE_UNSPECIFIED",
                                                       "NVIDIA_TESLA_K80",
                                                       "NVIDIA_TESLA_P100",
                                                       "NVIDIA_TESLA_V100",
                                                       "NVIDIA_TESLA_P4",
                                                       "NVIDIA_TESLA_T4",
                                                       "NVIDIA_TESLA_A100",
                                                       "TPU_V2",
                                                       "TPU_V3",
                                                       "TPU_V2_POD",
                                                       "TPU_V3_POD",
                                                       "TPU_V4_POD"};
constexpr EnumDef kAcceleratorType{"type.googleapis.com/google.cloud.ml.v1.AcceleratorType",
                                   kAcceleratorTypeValues};

constexpr std::string_view kGoalValues[] = {"GOAL_TYPE_UNSPECIFIED", "MAXIMIZE", "MINIMIZE"};
constexpr EnumDef kGoal{"type.googleapis.com/google.cloud.ml.v1.HyperparameterSpec.GoalType",
                        kGoalValues};

constexpr std::string_view kAlgorithmValues[] = {"ALGORITHM_UNSPECIFIED", "GRID_SEARCH",
                                                 "RANDOM_SEARCH"};
constexpr EnumDef kAlgorithm{"type.googleapis.com/google.cloud.ml.v1.HyperparameterSpec.Algorithm",
                             kAlgorithmValues};

constexpr std::string_view kParameterTypeValues[] = {"PARAMETER_TYPE_UNSPECIFIED", "DOUBLE",
                                                     "INTEGER", "CATEGORICAL", "DISCRETE"};
constexpr EnumDef kParameterType{
    "type.googleapis.com/google.cloud.ml.v1.ParameterSpec.ParameterType", kParameterTypeValues};

constexpr std::string_view kScaleTypeValues[] = {"NONE", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE",
                                                 "UNIT_REVERSE_LOG_SCALE"};
constexpr EnumDef kScaleType{"type.googleapis.com/google.cloud.ml.v1.ParameterSpec.ScaleType",
                             kScaleTypeValues};

// ---- Messages, innermost first. ----------------------------------------------------------------

constexpr Label kRep = Label::kRepeated;
constexpr Label kOne = Label::kSingular;

constexpr FieldDef kAcceleratorConfigFields[] = {
    {"count", "count", Kind::kInt64},
    {"type", "type", Kind::kEnum, kOne, nullptr, &kAcceleratorType},
};
constexpr MessageDef kAcceleratorConfig{"type.googleapis.com/google.cloud.ml.v1.AcceleratorConfig",
                                        kAcceleratorConfigFields};

constexpr FieldDef kDiskConfigFields[] = {
    {"bootDiskType", "boot_disk_type", Kind::kString},
    {"bootDiskSizeGb", "boot_disk_size_gb", Kind::kInt32},
};
constexpr MessageDef kDiskConfig{"type.googleapis.com/google.cloud.ml.v1.DiskConfig",
                                 kDiskConfigFields};

constexpr FieldDef kReplicaConfigFields[] = {
    {"acceleratorConfig", "accelerator_config", Kind::kMessage, kOne, &kAcceleratorConfig},
    {"imageUri", "image_uri", Kind::kString},
    {"tpuTfVersion", "tpu_tf_version", Kind::kString},
    {"containerCommand", "container_command", Kind::kString, kRep},
    {"containerArgs", "container_args", Kind::kString, kRep},
    {"diskConfig", "disk_config", Kind::kMessage, kOne, &kDiskConfig},
};
constexpr MessageDef kReplicaConfig{"type.googleapis.com/google.cloud.ml.v1.ReplicaConfig",
                                    kReplicaConfigFields};

constexpr FieldDef kParameterSpecFields[] = {
    {"parameterName", "parameter_name", Kind::kString},
    {"type", "type", Kind::kEnum, kOne, nullptr, &kParameterType},
    {"minValue", "min_value", Kind::kDouble},
    {"maxValue", "max_value", Kind::kDouble},
    {"categoricalValues", "categorical_values", Kind::kString, kRep},
    {"discreteValues", "discrete_values", Kind::kDouble, kRep},
    {"scaleType", "scale_type", Kind::kEnum, kOne, nullptr, &kScaleType},
};
constexpr MessageDef kParameterSpec{"type.googleapis.com/google.cloud.ml.v1.ParameterSpec",
                                    kParameterSpecFields};

constexpr FieldDef kHyperparameterSpecFields[] = {
    {"goal", "goal", Kind::kEnum, kOne, nullptr, &kGoal},
    {"params", "params", Kind::kMessage, kRep, &kParameterSpec},
    {"maxTrials", "max_trials", Kind::kInt32},
    {"maxParallelTrials", "max_parallel_trials", Kind::kInt32},
    {"maxFailedTrials", "max_failed_trials", Kind::kInt32},
    {"hyperparameterMetricTag", "hyperparameter_metric_tag", Kind::kString},
    {"resumePreviousJobId", "resume_previous_job_id", Kind::kString},
    {"enableTrialEarlyStopping", "enable_trial_early_stopping", Kind::kBool},
    {"algorithm", "algorithm", Kind::kEnum, kOne, nullptr, &kAlgorithm},
};
constexpr MessageDef kHyperparameterSpec{
    "type.googleapis.com/google.cloud.ml.v1.HyperparameterSpec", kHyperparameterSpecFields};

constexpr FieldDef kSchedulingFields[] = {
    {"maxRunningTime", "max_running_time", Kind::kDuration},
    {"maxWaitTime", "max_wait_time", Kind::kDuration},
    {"priority", "priority", Kind::kInt32},
};
constexpr MessageDef kScheduling{"type.googleapis.com/google.cloud.ml.v1.Scheduling",
                                 kSchedulingFields};

constexpr FieldDef kEncryptionConfigFields[] = {
    {"kmsKeyName", "kms_key_name", Kind::kString},
};
constexpr MessageDef kEncryptionConfig{"type.googleapis.com/google.cloud.ml.v1.EncryptionConfig",
                                       kEncryptionConfigFields};

constexpr FieldDef kTrainingInputFields[] = {
    {"scaleTier", "scale_tier", Kind::kEnum, kOne, nullptr, &kScaleTier},
    {"masterType", "master_type", Kind::kString},
    {"masterConfig", "master_config", Kind::kMessage, kOne, &kReplicaConfig},
    {"workerType", "worker_type", Kind::kString},
    {"workerConfig", "worker_config", Kind::kMessage, kOne, &kReplicaConfig},
    {"parameterServerType", "parameter_server_type", Kind::kString},
    {"parameterServerConfig", "parameter_server_config", Kind::kMessage, kOne, &kReplicaConfig},
    {"evaluatorType", "evaluator_type", Kind::kString},
    {"evaluatorConfig", "evaluator_config", Kind::kMessage, kOne, &kReplicaConfig},
    {"workerCount", "worker_count", Kind::kInt64},
    {"parameterServerCount", "parameter_server_count", Kind::kInt64},
    {"evaluatorCount", "evaluator_count", Kind::kInt64},
    {"packageUris", "package_uris", Kind::kString, kRep},
    {"pythonModule", "python_module", Kind::kString},
    {"args", "args", Kind::kString, kRep},
    {"hyperparameters", "hyperparameters", Kind::kMessage, kOne, &kHyperparameterSpec},
    {"region", "region", Kind::kString},
    {"jobDir", "job_dir", Kind::kString},
    {"runtimeVersion", "runtime_version", Kind::kString},
    {"pythonVersion", "python_version", Kind::kString},
    {"encryptionConfig", "encryption_config", Kind::kMessage, kOne, &kEncryptionConfig},
    {"scheduling", "scheduling", Kind::kMessage, kOne, &kScheduling},
    {"network", "network", Kind::kString},
    {"serviceAccount", "service_account", Kind::kString},
    {"useChiefInTfConfig", "use_chief_in_tf_config", Kind::kBool},
    {"enableWebAccess", "enable_web_access", Kind::kBool},
    // Older discovery revisions had TrainingInput.maxRunningTime; it is folded into
    // scheduling.maxRunningTime after parsing.
    {"maxRunningTime", "max_running_time", Kind::kDuration, kOne, nullptr, nullptr, true},
};
constexpr MessageDef kTrainingInputDef{"type.googleapis.com/google.cloud.ml.v1.TrainingInput",
                                       kTrainingInputFields};

constexpr FieldDef kJobFields[] = {
    {"jobId", "job_id", Kind::kString},
    {"trainingInput", "training_input", Kind::kMessage, kOne, &kTrainingInputDef},
    {"labels", "labels", Kind::kString, Label::kMap},
    // Batch prediction is out of scope: kept unchecked so create can refuse it by name.
    {"predictionInput", "prediction_input", Kind::kIgnored},
    // Output only: a body copied from a GET may carry them; they are ignored, as Google does.
    {"createTime", "create_time", Kind::kIgnored},
    {"startTime", "start_time", Kind::kIgnored},
    {"endTime", "end_time", Kind::kIgnored},
    {"state", "state", Kind::kIgnored},
    {"errorMessage", "error_message", Kind::kIgnored},
    {"trainingOutput", "training_output", Kind::kIgnored},
    {"predictionOutput", "prediction_output", Kind::kIgnored},
    {"etag", "etag", Kind::kIgnored},
    {"jobPosition", "job_position", Kind::kIgnored},
    // Trainyard's output-only extensions (docs/compatibility.md), ignored like the above.
    {"waitReason", "wait_reason", Kind::kIgnored},
    {"allocation", "allocation", Kind::kIgnored},
};
constexpr MessageDef kJobDef{"type.googleapis.com/google.cloud.ml.v1.Job", kJobFields};

// ---- Normalisation ------------------------------------------------------------------------------

std::string Shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 200) s = s.substr(0, 197) + "...";
  return s;
}

void AddInvalidValue(std::vector<FieldViolation>* errors, const std::string& path,
                     std::string_view type, const json& v) {
  std::string msg = "Invalid value at '" + path + "' (" + std::string(type) + "), " + Shown(v);
  errors->push_back({path, std::move(msg)});
}

bool ParseIntText(std::string_view s, int64_t* out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool ToInt64(const json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_float()) {  // 4.0 is an integer; 4.5 is not
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::trunc(d) || std::fabs(d) > 9.2e18) return false;
    *out = static_cast<int64_t>(d);
    return true;
  }
  if (v.is_string()) return ParseIntText(v.get_ref<const std::string&>(), out);
  return false;
}

bool ToDouble(const json& v, double* out) {
  if (v.is_number()) {
    *out = v.get<double>();
    return std::isfinite(*out);
  }
  if (v.is_string()) {
    std::string_view s = v.get_ref<const std::string&>();
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    if (s.empty()) return false;
    auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(*out);
  }
  return false;
}

bool ToBool(const json& v, bool* out) {
  if (v.is_boolean()) {
    *out = v.get<bool>();
    return true;
  }
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "true" || s == "True" || s == "TRUE") {
      *out = true;
      return true;
    }
    if (s == "false" || s == "False" || s == "FALSE") {
      *out = false;
      return true;
    }
  }
  return false;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'a' && x <= 'z') x = static_cast<char>(x - 'a' + 'A');
    if (y >= 'a' && y <= 'z') y = static_cast<char>(y - 'a' + 'A');
    if (x != y) return false;
  }
  return true;
}

// Converts one scalar (a singular field or one element of a repeated one). False on a type error.
bool ConvertScalar(const FieldDef& f, const json& v, json* out) {
  switch (f.kind) {
    case Kind::kString:
      if (!v.is_string()) return false;
      *out = v;
      return true;
    case Kind::kBool: {
      bool b = false;
      if (!ToBool(v, &b)) return false;
      *out = b;
      return true;
    }
    case Kind::kInt32:
    case Kind::kInt64: {
      int64_t i = 0;
      if (!ToInt64(v, &i)) return false;
      if (f.kind == Kind::kInt32 &&
          (i < std::numeric_limits<int32_t>::min() || i > std::numeric_limits<int32_t>::max()))
        return false;
      *out = i;
      return true;
    }
    case Kind::kDouble: {
      double d = 0;
      if (!ToDouble(v, &d)) return false;
      *out = d;
      return true;
    }
    case Kind::kDuration: {
      if (!v.is_string()) return false;
      // Protobuf's Duration range is +-315,576,000,000s; anything longer is refused before it
      // could overflow the microsecond count.
      const std::string& text = v.get_ref<const std::string&>();
      size_t whole_digits = 0;
      for (char ch : text) {
        if (ch == '.' || ch == 's') break;
        if (ch >= '0' && ch <= '9') ++whole_digits;
      }
      if (whole_digits > 12) return false;
      auto d = ParseDuration(text);
      constexpr Duration kMax = Duration{315576000000} * kMicrosPerSecond;
      if (!d.ok() || *d > kMax || *d < -kMax) return false;
      *out = *d;
      return true;
    }
    case Kind::kEnum: {
      if (!v.is_string()) return false;
      // Enum names are matched case-insensitively and stored canonically: accepting more than
      // Google does never breaks a request that works there.
      for (std::string_view name : f.enum_def->values) {
        if (EqualsIgnoreCase(name, v.get_ref<const std::string&>())) {
          *out = name;
          return true;
        }
      }
      return false;
    }
    case Kind::kMessage:
    case Kind::kIgnored:
      break;
  }
  return false;
}

void NormalizeValue(const FieldDef& f, const json& v, const std::string& path, json* out,
                    std::vector<FieldViolation>* errors) {
  if (f.kind == Kind::kMessage) {
    Normalize(v, *f.message, path, out, errors);
    return;
  }
  if (!ConvertScalar(f, v, out)) AddInvalidValue(errors, path, TypeName(f), v);
}

}  // namespace

const FieldDef* MessageDef::Find(std::string_view name) const {
  for (const FieldDef& f : fields) {
    if (f.json_name == name || f.proto_name == name) return &f;
  }
  return nullptr;
}

const MessageDef& Job() { return kJobDef; }
const MessageDef& TrainingInput() { return kTrainingInputDef; }

std::string_view TypeName(const FieldDef& f) {
  switch (f.kind) {
    case Kind::kString:
      return "TYPE_STRING";
    case Kind::kBool:
      return "TYPE_BOOL";
    case Kind::kInt32:
      return "TYPE_INT32";
    case Kind::kInt64:
      return "TYPE_INT64";
    case Kind::kDouble:
      return "TYPE_DOUBLE";
    case Kind::kDuration:
      return "type.googleapis.com/google.protobuf.Duration";
    case Kind::kEnum:
      return f.enum_def->type_url;
    case Kind::kMessage:
      return f.message->type_url;
    case Kind::kIgnored:
      return "TYPE_MESSAGE";
  }
  return "TYPE_MESSAGE";
}

void Normalize(const json& in, const MessageDef& def, const std::string& path, json* out,
               std::vector<FieldViolation>* errors) {
  *out = json::object();
  if (!in.is_object()) {
    AddInvalidValue(errors, path, def.type_url, in);
    return;
  }
  std::vector<std::pair<const FieldDef*, std::string_view>> seen;
  for (auto it = in.begin(); it != in.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    const FieldDef* f = def.Find(key);
    if (f == nullptr) {
      errors->push_back({path, "Invalid JSON payload received. Unknown name \"" + key + "\" at '" +
                                   path + "': Cannot find field."});
      continue;
    }
    bool duplicate = false;
    for (const auto& [sf, spelling] : seen) {
      if (sf == f) {
        errors->push_back({path + "." + std::string(f->proto_name),
                           "Invalid JSON payload received. Field \"" + std::string(f->proto_name) +
                               "\" at '" + path + "' is set twice (as \"" + std::string(spelling) +
                               "\" and \"" + key + "\")."});
        duplicate = true;
      }
    }
    if (duplicate) continue;
    seen.emplace_back(f, key);
    if (v.is_null()) continue;  // proto3 JSON: null means the default
    const std::string field_path = path + "." + std::string(f->proto_name);
    const std::string json_name(f->json_name);
    if (f->kind == Kind::kIgnored) {
      (*out)[json_name] = v;
      continue;
    }
    if (f->label == Label::kRepeated) {
      if (!v.is_array()) {
        AddInvalidValue(errors, field_path, TypeName(*f), v);
        continue;
      }
      json arr = json::array();
      for (size_t i = 0; i < v.size(); ++i) {
        json elem;
        NormalizeValue(*f, v[i], field_path + "[" + std::to_string(i) + "]", &elem, errors);
        arr.push_back(std::move(elem));
      }
      (*out)[json_name] = std::move(arr);
    } else if (f->label == Label::kMap) {
      if (!v.is_object()) {
        AddInvalidValue(errors, field_path, TypeName(*f), v);
        continue;
      }
      json obj = json::object();
      for (auto e = v.begin(); e != v.end(); ++e) {
        json conv;
        if (!ConvertScalar(*f, e.value(), &conv)) {
          AddInvalidValue(errors, field_path + "[" + e.key() + "]", TypeName(*f), e.value());
          continue;
        }
        obj[e.key()] = std::move(conv);
      }
      (*out)[json_name] = std::move(obj);
    } else {
      json conv;
      NormalizeValue(*f, v, field_path, &conv, errors);
      (*out)[json_name] = std::move(conv);
    }
  }
}

namespace {

bool IsDefault(const FieldDef& f, const json& v) {
  if (f.label != Label::kSingular) return v.empty();
  switch (f.kind) {
    case Kind::kString:
      return v.is_string() && v.get_ref<const std::string&>().empty();
    case Kind::kBool:
      return v.is_boolean() && !v.get<bool>();
    case Kind::kInt32:
    case Kind::kInt64:
      return v.is_number_integer() && v.get<int64_t>() == 0;
    case Kind::kDouble:
      return v.is_number() && v.get<double>() == 0.0;
    case Kind::kEnum:
      return v.is_string() && v.get_ref<const std::string&>() == f.enum_def->values[0];
    case Kind::kDuration:  // a message type: present means emitted
    case Kind::kMessage:
    case Kind::kIgnored:
      return false;
  }
  return false;
}

void WriteScalar(const FieldDef& f, const json& v, std::string* out) {
  switch (f.kind) {
    case Kind::kString:
    case Kind::kEnum:
      internal::AppendJsonString(out, v.is_string() ? v.get_ref<const std::string&>() : "");
      break;
    case Kind::kBool:
      out->append(v.is_boolean() && v.get<bool>() ? "true" : "false");
      break;
    case Kind::kInt32:
      internal::AppendJsonInt(out, v.is_number() ? v.get<int64_t>() : 0);
      break;
    case Kind::kInt64:
      out->push_back('"');
      internal::AppendJsonInt(out, v.is_number() ? v.get<int64_t>() : 0);
      out->push_back('"');
      break;
    case Kind::kDouble:
      internal::AppendJsonDouble(out, v.is_number() ? v.get<double>() : 0);
      break;
    case Kind::kDuration:
      internal::AppendJsonString(out, FormatDuration(v.is_number() ? v.get<int64_t>() : 0));
      break;
    case Kind::kMessage:
      WriteCanonical(v, *f.message, out);
      break;
    case Kind::kIgnored:
      out->append("null");
      break;
  }
}

}  // namespace

void WriteCanonical(const json& normalized, const MessageDef& def, std::string* out) {
  out->push_back('{');
  bool first = true;
  for (const FieldDef& f : def.fields) {
    if (f.legacy || f.kind == Kind::kIgnored) continue;
    auto it = normalized.find(f.json_name);
    if (it == normalized.end() || it->is_null() || IsDefault(f, *it)) continue;
    if (!first) out->push_back(',');
    first = false;
    internal::AppendJsonString(out, f.json_name);
    out->push_back(':');
    if (f.label == Label::kRepeated) {
      out->push_back('[');
      for (size_t i = 0; i < it->size(); ++i) {
        if (i > 0) out->push_back(',');
        WriteScalar(f, (*it)[i], out);
      }
      out->push_back(']');
    } else if (f.label == Label::kMap) {
      out->push_back('{');
      bool first_entry = true;
      for (auto e = it->begin(); e != it->end(); ++e) {
        if (!first_entry) out->push_back(',');
        first_entry = false;
        internal::AppendJsonString(out, e.key());
        out->push_back(':');
        WriteScalar(f, e.value(), out);
      }
      out->push_back('}');
    } else {
      WriteScalar(f, *it, out);
    }
  }
  out->push_back('}');
}

namespace {

struct TooDeep {};
constexpr int kMaxDepth = 64;

}  // namespace

Result<json> ParseJsonStrict(std::string_view text) {
  // Where the parser is, as the user wrote it ("trainingInput.args[2]"): errors name it.
  struct Frame {
    bool array;
    std::string key;  // objects: the current key
    int64_t index;    // arrays: the current element
  };
  std::vector<Frame> frames;
  std::vector<std::set<std::string>> keys;  // one key set per open object
  std::string duplicate, duplicate_at;
  auto path = [&frames] {
    std::string out;
    for (const Frame& f : frames) {
      if (f.array) {
        if (f.index >= 0) out += "[" + std::to_string(f.index) + "]";
      } else if (!f.key.empty()) {
        if (!out.empty()) out += '.';
        out += f.key;
      }
      if (out.size() > 200) return out.substr(0, 200) + "...";
    }
    return out;
  };
  auto element = [&frames] {
    if (!frames.empty() && frames.back().array) ++frames.back().index;
  };
  json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        element();
        frames.push_back({false, "", -1});
        keys.emplace_back();
        break;
      case json::parse_event_t::array_start:
        element();
        frames.push_back({true, "", -1});
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        if (!frames.empty()) frames.pop_back();
        break;
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
      case json::parse_event_t::key:
        if (!frames.empty()) frames.back().key = parsed.get<std::string>();
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty()) {
          duplicate = parsed.get<std::string>();
          duplicate_at = path();
        }
        break;
      case json::parse_event_t::value:
        element();
        break;
    }
    if (depth > kMaxDepth) throw TooDeep{};
    return true;
  };
  auto error = [&](const std::string& message) {
    std::string at = path();
    if (at.empty()) return InvalidArgument("Invalid JSON payload received. " + message);
    return InvalidArgument("Invalid JSON payload received. " + message + " at '" + at + "'.")
        .AddViolation(at, message);
  };
  try {
    json j = json::parse(text.begin(), text.end(), cb);
    if (!duplicate.empty()) {
      return InvalidArgument("Invalid JSON payload received. Duplicate name \"" + duplicate +
                             "\" in one object.")
          .AddViolation(duplicate_at, "duplicate name \"" + duplicate + "\"");
    }
    return j;
  } catch (const TooDeep&) {
    return error("Nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  } catch (const json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> "parse error ..."
    if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    return error(what);
  }
}

}  // namespace trainyard::model::schema

namespace trainyard::model {

std::vector<std::string_view> AcceleratorTypeNames() {
  return {std::begin(schema::kAcceleratorTypeValues) + 1, std::end(schema::kAcceleratorTypeValues)};
}

}  // namespace trainyard::model
