#include "job_codec.h"

#include "flat_json.h"

namespace trainyard::store::sqlite {
namespace {

Status Corrupt(const char* column, const JsonReader& reader) {
  return Internal(std::string("corrupt ") + column + " at byte " +
                  std::to_string(reader.error_offset()));
}

}  // namespace

std::string EncodeLabels(const std::map<std::string, std::string>& labels) {
  if (labels.empty()) return "{}";
  JsonWriter w;
  w.BeginObject();
  for (const auto& [key, value] : labels) {
    w.Key(key);
    w.String(value);
  }
  w.EndObject();
  return w.Take();
}

Status DecodeLabels(std::string_view text, std::map<std::string, std::string>* labels) {
  labels->clear();
  if (text == "{}") return Status::Ok();
  JsonReader r(text);
  if (!r.BeginObject()) return Corrupt("labels_json", r);
  std::string_view key;
  std::string scratch;
  std::string value;
  while (r.NextKey(&key, &scratch)) {
    if (!r.ReadString(&value)) break;
    labels->insert_or_assign(std::string(key), value);
  }
  if (!r.ok()) return Corrupt("labels_json", r);
  return Status::Ok();
}

std::string EncodeSpec(const model::TrainingSpec& spec) {
  JsonWriter w;
  w.BeginObject();
  auto str = [&](const char* key, const std::string& value) {
    if (value.empty()) return;
    w.Key(key);
    w.String(value);
  };
  auto strs = [&](const char* key, const std::vector<std::string>& values) {
    if (values.empty()) return;
    w.Key(key);
    w.StringArray(values);
  };
  auto num = [&](const char* key, int64_t value) {
    if (value == 0) return;
    w.Key(key);
    w.Int(value);
  };
  w.Key("scale_tier");
  w.String(spec.scale_tier);
  // One prefix per role; the master's keys keep their first names ("master_type").
  auto role = [&](const std::string& p, const model::ReplicaRoleSpec& r) {
    str((p + "_type").c_str(), r.machine_type);
    num((p + "_count").c_str(), r.count);
    str((p + "_accelerator_type").c_str(), r.accelerator.type);
    num((p + "_accelerator_count").c_str(), r.accelerator.count);
    str((p + "_image_uri").c_str(), r.image_uri);
    strs((p + "_container_command").c_str(), r.container_command);
    strs((p + "_container_args").c_str(), r.container_args);
  };
  role("master", spec.master);
  role("worker", spec.worker);
  role("ps", spec.parameter_server);
  role("evaluator", spec.evaluator);
  if (spec.use_chief_in_tf_config) {
    w.Key("use_chief_in_tf_config");
    w.Bool(true);
  }
  strs("package_uris", spec.package_uris);
  str("python_module", spec.python_module);
  strs("args", spec.args);
  str("region", spec.region);
  str("job_dir", spec.job_dir);
  str("runtime_version", spec.runtime_version);
  str("python_version", spec.python_version);
  if (spec.scheduling.max_running_time) {
    w.Key("max_running_time");
    w.Int(*spec.scheduling.max_running_time);
  }
  if (spec.scheduling.max_wait_time) {
    w.Key("max_wait_time");
    w.Int(*spec.scheduling.max_wait_time);
  }
  if (spec.scheduling.priority != 0) {
    w.Key("priority");
    w.Int(spec.scheduling.priority);
  }
  if (spec.has_hyperparameters) {
    w.Key("has_hyperparameters");
    w.Bool(true);
  }
  w.EndObject();
  return w.Take();
}

namespace {

// Reads one "<role>_<field>" key of EncodeSpec; false when `key` is not one.
bool ReadRoleKey(std::string_view key, JsonReader& r, model::TrainingSpec* spec) {
  static constexpr std::pair<std::string_view, model::ReplicaRoleSpec model::TrainingSpec::*>
      kRoles[] = {{"master_", &model::TrainingSpec::master},
                  {"worker_", &model::TrainingSpec::worker},
                  {"ps_", &model::TrainingSpec::parameter_server},
                  {"evaluator_", &model::TrainingSpec::evaluator}};
  for (const auto& [prefix, member] : kRoles) {
    if (key.substr(0, prefix.size()) != prefix) continue;
    std::string_view field = key.substr(prefix.size());
    model::ReplicaRoleSpec& role = spec->*member;
    int64_t n = 0;
    if (field == "type") {
      r.ReadString(&role.machine_type);
    } else if (field == "count") {
      if (r.ReadInt(&n)) role.count = n;
    } else if (field == "accelerator_type") {
      r.ReadString(&role.accelerator.type);
    } else if (field == "accelerator_count") {
      if (r.ReadInt(&n)) role.accelerator.count = n;
    } else if (field == "image_uri") {
      r.ReadString(&role.image_uri);
    } else if (field == "container_command") {
      r.ReadStringArray(&role.container_command);
    } else if (field == "container_args") {
      r.ReadStringArray(&role.container_args);
    } else {
      return false;
    }
    return true;
  }
  return false;
}

}  // namespace

Status DecodeSpec(std::string_view text, model::TrainingSpec* spec) {
  *spec = model::TrainingSpec();
  JsonReader r(text);
  if (!r.BeginObject()) return Corrupt("spec_json", r);
  std::string_view key;
  std::string scratch;
  while (r.NextKey(&key, &scratch)) {
    int64_t n = 0;
    if (key == "scale_tier") {
      r.ReadString(&spec->scale_tier);
    } else if (ReadRoleKey(key, r, spec)) {
    } else if (key == "package_uris") {
      r.ReadStringArray(&spec->package_uris);
    } else if (key == "python_module") {
      r.ReadString(&spec->python_module);
    } else if (key == "args") {
      r.ReadStringArray(&spec->args);
    } else if (key == "region") {
      r.ReadString(&spec->region);
    } else if (key == "job_dir") {
      r.ReadString(&spec->job_dir);
    } else if (key == "runtime_version") {
      r.ReadString(&spec->runtime_version);
    } else if (key == "python_version") {
      r.ReadString(&spec->python_version);
    } else if (key == "max_running_time") {
      if (r.ReadInt(&n)) spec->scheduling.max_running_time = n;
    } else if (key == "max_wait_time") {
      if (r.ReadInt(&n)) spec->scheduling.max_wait_time = n;
    } else if (key == "priority") {
      if (r.ReadInt(&n)) spec->scheduling.priority = static_cast<int32_t>(n);
    } else if (key == "has_hyperparameters") {
      r.ReadBool(&spec->has_hyperparameters);
    } else if (key == "use_chief_in_tf_config") {
      r.ReadBool(&spec->use_chief_in_tf_config);
    } else {
      r.Skip();  // written by a newer Trainyard
    }
  }
  if (!r.ok()) return Corrupt("spec_json", r);
  return Status::Ok();
}

}  // namespace trainyard::store::sqlite
