#include "trainyard/model/job_json.h"

#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "job_schema.h"
#include "job_validate.h"
#include "json_text.h"
#include "trainyard/core/util.h"

namespace trainyard::model {
namespace {

using nlohmann::json;

Status SchemaErrorStatus(std::vector<FieldViolation> errors) {
  std::string message;
  for (const FieldViolation& e : errors) {
    if (!message.empty()) message += "\n";
    message += e.description;
  }
  Status s = InvalidArgument(std::move(message));
  for (FieldViolation& e : errors) s.AddViolation(std::move(e.field), std::move(e.description));
  return s;
}

std::string Str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// An int64 field. The normalised message holds JSON integers; the canonical text (and so
// anything re-read from training_input_json) holds decimal strings, as the wire does. Either is
// read, so a count can never come out 0 because of its spelling.
int64_t Int64(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  int64_t v = 0;
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) v = 0;
  }
  return v;
}

std::vector<std::string> Strings(const json& obj, const char* key) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_array()) return out;
  for (const json& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::map<std::string, std::string> LabelMap(const json& job) {
  std::map<std::string, std::string> labels;
  auto it = job.find("labels");
  if (it == job.end() || !it->is_object()) return labels;
  for (auto e = it->begin(); e != it->end(); ++e) {
    if (e->is_string()) labels[e.key()] = e->get<std::string>();
  }
  return labels;
}

// Folds the legacy TrainingInput.maxRunningTime into scheduling.maxRunningTime.
void FoldLegacyFields(json* ti, std::vector<FieldViolation>* invalid) {
  auto legacy = ti->find("maxRunningTime");
  if (legacy == ti->end()) return;
  json& scheduling = (*ti)["scheduling"];
  if (!scheduling.is_object()) scheduling = json::object();
  if (scheduling.contains("maxRunningTime")) {
    invalid->push_back({"trainingInput.maxRunningTime",
                        "set maxRunningTime only once, in trainingInput.scheduling"});
  } else {
    scheduling["maxRunningTime"] = *legacy;
  }
  ti->erase(legacy);
}

TrainingSpec SpecFrom(const json& ti) {
  TrainingSpec spec;
  std::string tier = Str(ti, "scaleTier");
  if (!tier.empty()) spec.scale_tier = tier;
  auto role = [&ti](const char* type_key, const char* count_key, const char* config_key,
                    ReplicaRoleSpec* r) {
    r->machine_type = Str(ti, type_key);
    if (count_key != nullptr) r->count = Int64(ti, count_key);
    auto cfg = ti.find(config_key);
    if (cfg == ti.end() || !cfg->is_object()) return;
    r->image_uri = Str(*cfg, "imageUri");
    r->container_command = Strings(*cfg, "containerCommand");
    r->container_args = Strings(*cfg, "containerArgs");
    if (auto a = cfg->find("acceleratorConfig"); a != cfg->end() && a->is_object()) {
      r->accelerator.type = Str(*a, "type");
      r->accelerator.count = Int64(*a, "count");
    }
  };
  role("masterType", nullptr, "masterConfig", &spec.master);
  role("workerType", "workerCount", "workerConfig", &spec.worker);
  role("parameterServerType", "parameterServerCount", "parameterServerConfig",
       &spec.parameter_server);
  role("evaluatorType", "evaluatorCount", "evaluatorConfig", &spec.evaluator);
  if (auto u = ti.find("useChiefInTfConfig"); u != ti.end() && u->is_boolean()) {
    spec.use_chief_in_tf_config = u->get<bool>();
  }
  spec.package_uris = Strings(ti, "packageUris");
  spec.python_module = Str(ti, "pythonModule");
  spec.args = Strings(ti, "args");
  spec.region = Str(ti, "region");
  spec.job_dir = Str(ti, "jobDir");
  spec.runtime_version = Str(ti, "runtimeVersion");
  spec.python_version = Str(ti, "pythonVersion");
  if (auto s = ti.find("scheduling"); s != ti.end() && s->is_object()) {
    if (auto v = s->find("maxRunningTime"); v != s->end()) spec.scheduling.max_running_time = *v;
    if (auto v = s->find("maxWaitTime"); v != s->end()) spec.scheduling.max_wait_time = *v;
    if (auto v = s->find("priority"); v != s->end()) {
      spec.scheduling.priority = static_cast<int32_t>(v->get<int64_t>());
    }
  }
  spec.has_hyperparameters = ti.contains("hyperparameters");
  return spec;
}

// "2017-12-18T20:35:21Z" without gmtime (glibc's takes a process-wide lock). Same output as
// FormatRfc3339.
void AppendRfc3339(std::string* out, Timestamp ts) {
  int64_t secs = ts / kMicrosPerSecond;
  if (ts % kMicrosPerSecond < 0) --secs;
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  // civil_from_days (H. Hinnant).
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = yoe + era * 400;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1;
  int64_t m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) ++y;
  if (y < 0 || y > 9999) {
    internal::AppendJsonString(out, FormatRfc3339(ts));
    return;
  }
  char buf[22] = "\"0000-00-00T00:00:00Z";
  auto put = [&buf](int pos, int64_t v, int width) {
    for (int i = width - 1; i >= 0; --i) {
      buf[pos + i] = static_cast<char>('0' + v % 10);
      v /= 10;
    }
  };
  put(1, y, 4);
  put(6, m, 2);
  put(9, d, 2);
  put(12, rem / 3600, 2);
  put(15, rem / 60 % 60, 2);
  put(18, rem % 60, 2);
  out->append(buf, 21);
  out->push_back('"');
}

// Splices trainingOutput: the stored object text plus consumedMLUnits when set.
void AppendTrainingOutput(std::string* out, const Job& job) {
  std::string_view text = job.training_output_json;
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.remove_suffix(1);
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') text = {};
  if (text.empty() && !job.consumed_ml_units_set) return;
  out->append(",\"trainingOutput\":");
  if (!job.consumed_ml_units_set) {
    out->append(text);
    return;
  }
  std::string rewritten;
  if (text.find("\"consumedMLUnits\"") != std::string_view::npos) {
    // Rare: the stored object already has the key; the Job field wins.
    json o = json::parse(text, nullptr, false);
    if (o.is_object()) {
      o.erase("consumedMLUnits");
      rewritten = o.dump();
      text = rewritten;
    } else {
      text = {};
    }
  }
  std::string_view inner = text.empty() ? std::string_view() : text.substr(1, text.size() - 2);
  while (!inner.empty() && (inner.front() == ' ' || inner.front() == '\n')) inner.remove_prefix(1);
  while (!inner.empty() && (inner.back() == ' ' || inner.back() == '\n')) inner.remove_suffix(1);
  out->push_back('{');
  if (!inner.empty()) {
    out->append(inner);
    out->push_back(',');
  }
  out->append("\"consumedMLUnits\":");
  internal::AppendJsonDouble(out, job.consumed_ml_units);
  out->push_back('}');
}

}  // namespace

Result<Job> ParseJobForCreate(std::string_view body, std::string_view project,
                              const Capabilities& caps) {
  TRAINYARD_ASSIGN_OR_RETURN(json raw, schema::ParseJsonStrict(body));
  std::vector<FieldViolation> errors;
  json normalized;
  schema::Normalize(raw, schema::Job(), "job", &normalized, &errors);
  if (!errors.empty()) return SchemaErrorStatus(std::move(errors));

  internal::Violations violations;
  if (auto ti = normalized.find("trainingInput"); ti != normalized.end()) {
    FoldLegacyFields(&*ti, &violations.invalid);
  }
  internal::ValidateJob(normalized, caps, &violations);
  if (!violations.invalid.empty()) {
    return internal::ViolationStatus(StatusCode::kInvalidArgument, std::move(violations.invalid));
  }
  if (!violations.unimplemented.empty()) {
    // A valid AI Platform job this Trainyard cannot run (no GPUs here, no container engine,
    // web access): 400 FAILED_PRECONDITION, not 501 UNIMPLEMENTED. gcloud (apitools) takes
    // every 5xx answer for a network failure and prints "This may be due to network
    // connectivity issues" instead of the message; a 4xx prints "FAILED_PRECONDITION: ...".
    return internal::ViolationStatus(StatusCode::kFailedPrecondition,
                                     std::move(violations.unimplemented));
  }

  const json& ti = normalized.at("trainingInput");
  Job job;
  job.project = std::string(project);
  job.job_id = Str(normalized, "jobId");
  job.state = JobState::kQueued;
  job.labels = LabelMap(normalized);
  schema::WriteCanonical(ti, schema::TrainingInput(), &job.training_input_json);
  job.spec = SpecFrom(ti);
  return job;
}

Status ValidateJobId(std::string_view job_id) {
  std::vector<FieldViolation> v;
  internal::CheckJobId(job_id, "jobId", &v);
  if (v.empty()) return Status::Ok();
  return internal::ViolationStatus(StatusCode::kInvalidArgument, std::move(v));
}

Status ValidateLabels(const std::map<std::string, std::string>& labels) {
  std::vector<FieldViolation> v;
  internal::CheckLabels(labels, "labels", &v);
  if (v.empty()) return Status::Ok();
  return internal::ViolationStatus(StatusCode::kInvalidArgument, std::move(v));
}

std::string JobToJson(const Job& job) {
  std::string out;
  size_t labels_size = 0;
  for (const auto& [k, v] : job.labels) labels_size += k.size() + v.size() + 6;
  out.reserve(200 + job.job_id.size() + job.training_input_json.size() + job.error_message.size() +
              job.training_output_json.size() + labels_size);
  out.push_back('{');
  bool first = true;
  auto key = [&](const char* k) {
    if (!first) out.push_back(',');
    first = false;
    out.append(k);
  };
  if (!job.job_id.empty()) {
    key("\"jobId\":");
    internal::AppendJsonString(&out, job.job_id);
  }
  if (!job.training_input_json.empty()) {
    key("\"trainingInput\":");
    out.append(job.training_input_json);
  }
  if (job.create_time != 0) {
    key("\"createTime\":");
    AppendRfc3339(&out, job.create_time);
  }
  if (job.start_time != 0) {
    key("\"startTime\":");
    AppendRfc3339(&out, job.start_time);
  }
  if (job.end_time != 0) {
    key("\"endTime\":");
    AppendRfc3339(&out, job.end_time);
  }
  if (job.state != JobState::kStateUnspecified) {
    key("\"state\":\"");
    out.append(JobStateName(job.state));
    out.push_back('"');
  }
  if (!job.error_message.empty()) {
    key("\"errorMessage\":");
    internal::AppendJsonString(&out, job.error_message);
  }
  if (first) {  // trainingOutput starts with a comma
    std::string rest;
    AppendTrainingOutput(&rest, job);
    if (!rest.empty()) {
      out.append(rest, 1);
      first = false;
    }
  } else {
    AppendTrainingOutput(&out, job);
  }
  if (!job.labels.empty()) {
    key("\"labels\":{");
    bool first_label = true;
    for (const auto& [k, v] : job.labels) {
      if (!first_label) out.push_back(',');
      first_label = false;
      internal::AppendJsonString(&out, k);
      out.push_back(':');
      internal::AppendJsonString(&out, v);
    }
    out.push_back('}');
  }
  if (!job.etag.empty()) {
    key("\"etag\":");
    internal::AppendJsonString(&out, job.etag);
  }
  if (job.state == JobState::kQueued && job.job_position > 0) {
    key("\"jobPosition\":\"");
    internal::AppendJsonInt(&out, job.job_position);
    out.push_back('"');
  }
  // Trainyard extensions (output only; gcloud keeps unknown fields and prints them).
  if (!job.wait_reason.empty()) {
    key("\"waitReason\":");
    internal::AppendJsonString(&out, job.wait_reason);
  }
  if (job.allocation.set) {
    const Job::Allocation& a = job.allocation;
    key("\"allocation\":{\"vcpus\":");
    char cpus[32];
    std::snprintf(cpus, sizeof cpus, "%g", static_cast<double>(a.cpu_millis) / 1000);
    out.append(cpus);
    out.append(",\"memoryBytes\":\"");
    internal::AppendJsonInt(&out, a.memory_bytes);
    out.append("\",\"gpus\":");
    internal::AppendJsonInt(&out, a.gpus);
    if (!a.gpu_indices.empty()) {
      out.append(",\"gpuIndices\":[");
      for (size_t i = 0; i < a.gpu_indices.size(); ++i) {
        if (i > 0) out.push_back(',');
        internal::AppendJsonInt(&out, a.gpu_indices[i]);
      }
      out.push_back(']');
    }
    out.push_back('}');
  }
  out.push_back('}');
  return out;
}

Result<JobPatch> ParseJobPatch(std::string_view body, std::string_view update_mask) {
  JobPatch patch;
  bool labels_in_mask = false;
  std::vector<FieldViolation> mask_errors;
  for (const std::string& piece : Split(update_mask, ',')) {
    std::string_view path = piece;
    while (!path.empty() && path.front() == ' ') path.remove_prefix(1);
    while (!path.empty() && path.back() == ' ') path.remove_suffix(1);
    if (path.empty()) continue;
    if (path == "labels") {
      labels_in_mask = true;
    } else if (path == "etag") {
      patch.etag_in_mask = true;
    } else {
      mask_errors.push_back({"updateMask", "field \"" + std::string(path) +
                                               "\" cannot be updated; updateMask may name only "
                                               "labels and etag"});
    }
  }
  if (!labels_in_mask && !patch.etag_in_mask && mask_errors.empty()) {
    mask_errors.push_back(
        {"updateMask", "updateMask is required and must name labels (e.g. updateMask=labels)"});
  } else if (!labels_in_mask && mask_errors.empty()) {
    mask_errors.push_back({"updateMask",
                           "updateMask must include labels, the only field a "
                           "patch can change"});
  }
  if (!mask_errors.empty()) {
    return internal::ViolationStatus(StatusCode::kInvalidArgument, std::move(mask_errors));
  }

  TRAINYARD_ASSIGN_OR_RETURN(json raw, schema::ParseJsonStrict(body));
  std::vector<FieldViolation> errors;
  json normalized;
  schema::Normalize(raw, schema::Job(), "job", &normalized, &errors);
  if (auto etag = normalized.find("etag"); etag != normalized.end()) {
    if (!etag->is_string() || !Base64Decode(etag->get<std::string>()).ok()) {
      errors.push_back({"job.etag", "Invalid value at 'job.etag' (TYPE_BYTES), " + etag->dump()});
    } else {
      patch.etag = etag->get<std::string>();
    }
  }
  if (!errors.empty()) return SchemaErrorStatus(std::move(errors));
  patch.labels = LabelMap(normalized);
  TRAINYARD_RETURN_IF_ERROR(ValidateLabels(patch.labels));
  return patch;
}

}  // namespace trainyard::model
