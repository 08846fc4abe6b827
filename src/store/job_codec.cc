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
  w.Key("scale_tier");
  w.String(spec.scale_tier);
  str("master_type", spec.master_type);
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
  str("master_image_uri", spec.master_image_uri);
  w.EndObject();
  return w.Take();
}

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
    } else if (key == "master_type") {
      r.ReadString(&spec->master_type);
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
    } else if (key == "master_image_uri") {
      r.ReadString(&spec->master_image_uri);
    } else {
      r.Skip();  // written by a newer Trainyard
    }
  }
  if (!r.ok()) return Corrupt("spec_json", r);
  return Status::Ok();
}

}  // namespace trainyard::store::sqlite
