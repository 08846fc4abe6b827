#include "job_builder.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace trainyard::cli {

using json = nlohmann::json;

namespace {

Status CheckReplicaGroup(const ReplicaFlags& r, const std::string& name) {
  if (r.count.has_value() != r.machine_type.has_value()) {
    return InvalidArgument("--" + name + "-machine-type and --" + name +
                           "-count must be specified together");
  }
  if (r.count.has_value() && *r.count < 1) {
    return InvalidArgument(
        "argument --" + name +
        "-count: Value must be greater than or equal to 1; received: " + std::to_string(*r.count));
  }
  return Status::Ok();
}

// Merges one replica's flags into trainingInput.<config_key> (and the *Type/*Count fields).
void MergeReplica(json* ti, const ReplicaFlags& r, const std::string& type_key,
                  const std::string& count_key, const std::string& config_key) {
  if (r.machine_type) (*ti)[type_key] = *r.machine_type;
  if (r.count && !count_key.empty()) (*ti)[count_key] = std::to_string(*r.count);
  if (!r.image_uri && !r.accelerator) return;
  json& config = (*ti)[config_key];
  if (!config.is_object()) config = json::object();
  if (r.image_uri) config["imageUri"] = *r.image_uri;
  if (r.accelerator) {
    json& acc = config["acceleratorConfig"];
    if (!acc.is_object()) acc = json::object();
    acc["type"] = r.accelerator->type;
    acc["count"] = std::to_string(r.accelerator->count);
  }
}

// Top-level snake_case spellings the API also accepts (compat §0).
void NormalizeTopLevelKeys(json* job) {
  static const std::pair<const char*, const char*> kRenames[] = {
      {"job_id", "jobId"}, {"training_input", "trainingInput"}};
  for (const auto& [from, to] : kRenames) {
    if (job->contains(from) && !job->contains(to)) {
      (*job)[to] = (*job)[from];
      job->erase(from);
    }
  }
}

}  // namespace

Status ValidateTrainingFlags(const TrainingFlags& flags) {
  if (flags.master.image_uri && flags.runtime_version) {
    return InvalidArgument("Only one of --master-image-uri, --runtime-version can be set.");
  }
  TRAINYARD_RETURN_IF_ERROR(CheckReplicaGroup(flags.worker, "worker"));
  TRAINYARD_RETURN_IF_ERROR(CheckReplicaGroup(flags.parameter_server, "parameter-server"));
  return Status::Ok();
}

Result<std::string> BuildTrainingJobJson(std::string_view config_job_json,
                                         const TrainingFlags& flags) {
  TRAINYARD_RETURN_IF_ERROR(ValidateTrainingFlags(flags));
  json job = json::object();
  if (!config_job_json.empty()) {
    job = json::parse(config_job_json, nullptr, /*allow_exceptions=*/false);
    if (job.is_discarded() || !(job.is_object() || job.is_null())) {
      return InvalidArgument("the --config file must hold a Job object");
    }
    if (job.is_null()) job = json::object();
    NormalizeTopLevelKeys(&job);
  }
  job["jobId"] = flags.job_id;
  if (flags.labels) job["labels"] = *flags.labels;
  json& ti = job["trainingInput"];
  if (!ti.is_object()) ti = json::object();

  if (flags.module_name) ti["pythonModule"] = *flags.module_name;
  if (flags.args) ti["args"] = *flags.args;
  if (flags.package_uris) ti["packageUris"] = *flags.package_uris;
  if (flags.region) {
    ti["region"] = *flags.region;
  } else if (!ti.contains("region") || !ti["region"].is_string() ||
             ti["region"].get<std::string>().empty()) {
    ti["region"] = flags.default_region;
  }
  if (flags.job_dir) ti["jobDir"] = *flags.job_dir;
  if (flags.scale_tier) ti["scaleTier"] = *flags.scale_tier;
  if (flags.runtime_version) ti["runtimeVersion"] = *flags.runtime_version;
  if (flags.python_version) ti["pythonVersion"] = *flags.python_version;
  if (flags.service_account) ti["serviceAccount"] = *flags.service_account;
  if (flags.enable_web_access) ti["enableWebAccess"] = true;
  if (flags.kms_key_name) ti["encryptionConfig"] = {{"kmsKeyName", *flags.kms_key_name}};
  if (flags.use_chief_in_tf_config) ti["useChiefInTfConfig"] = *flags.use_chief_in_tf_config;
  MergeReplica(&ti, flags.master, "masterType", "", "masterConfig");
  MergeReplica(&ti, flags.worker, "workerType", "workerCount", "workerConfig");
  MergeReplica(&ti, flags.parameter_server, "parameterServerType", "parameterServerCount",
               "parameterServerConfig");

  if (flags.scale_tier && *flags.scale_tier == "CUSTOM") {
    bool has_master = ti.contains("masterType") && ti["masterType"].is_string() &&
                      !ti["masterType"].get<std::string>().empty();
    if (!has_master) {
      return InvalidArgument("--master-machine-type is required if scale-tier is set to `CUSTOM`.");
    }
  }
  bool has_packages =
      ti.contains("packageUris") && ti["packageUris"].is_array() && !ti["packageUris"].empty();
  bool has_image = ti.contains("masterConfig") && ti["masterConfig"].is_object() &&
                   ti["masterConfig"].contains("imageUri") &&
                   ti["masterConfig"]["imageUri"].is_string() &&
                   !ti["masterConfig"]["imageUri"].get<std::string>().empty();
  if (!has_packages && !has_image) {
    return InvalidArgument(
        "If `--package-path` is not specified, at least one Python package must be specified "
        "via `--packages`.");
  }
  return job.dump();
}

bool IsGcsUri(std::string_view uri) { return uri.rfind("gs://", 0) == 0; }

std::optional<GcsPath> ParseGcsUri(std::string_view uri) {
  if (!IsGcsUri(uri)) return std::nullopt;
  std::string_view rest = uri.substr(5);
  size_t slash = rest.find('/');
  GcsPath p;
  p.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) p.object = std::string(rest.substr(slash + 1));
  if (p.bucket.empty()) return std::nullopt;
  return p;
}

Result<std::optional<StagingLocation>> GetStagingLocation(std::string_view job_id,
                                                          std::string_view staging_bucket,
                                                          std::string_view job_dir) {
  if (!staging_bucket.empty()) {
    auto p = ParseGcsUri(staging_bucket);
    if (!p || !p->object.empty()) {
      return InvalidArgument("argument --staging-bucket: Invalid bucket URI [" +
                             std::string(staging_bucket) + "]. Must be of the form gs://BUCKET");
    }
    return std::optional<StagingLocation>(StagingLocation{p->bucket, std::string(job_id)});
  }
  if (!job_dir.empty()) {
    auto p = ParseGcsUri(job_dir);
    if (!p) return std::optional<StagingLocation>();
    std::string dir = p->object;
    while (!dir.empty() && dir.back() == '/') dir.pop_back();
    return std::optional<StagingLocation>(
        StagingLocation{p->bucket, dir.empty() ? "packages" : dir + "/packages"});
  }
  return std::optional<StagingLocation>();
}

StagingLocation DefaultStagingLocation(std::string_view project, std::string_view job_id) {
  std::string safe(project.empty() ? "default" : project);
  // Domain-scoped project ids ("example.com:proj") hold characters bucket names cannot.
  for (char& c : safe) {
    if (c == ':') c = '-';
  }
  for (size_t pos; (pos = safe.find("google")) != std::string::npos;) {
    safe.replace(pos, 6, "elgoog");
  }
  std::string bucket = safe + "-trainyard-staging";
  if (bucket.size() > 63) bucket.resize(63);
  while (!bucket.empty() && !std::isalnum(static_cast<unsigned char>(bucket.back()))) {
    bucket.pop_back();
  }
  return StagingLocation{bucket, std::string(job_id)};
}

std::string StagingObjectName(const StagingLocation& location, std::string_view sha256_hex,
                              std::string_view basename) {
  std::string name = location.prefix.empty() ? "" : location.prefix + "/";
  return name + std::string(sha256_hex) + "/" + std::string(basename);
}

std::string Basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

Status CheckDuplicateBasenames(const std::vector<std::string>& local_paths) {
  std::map<std::string, int> counts;
  for (const auto& p : local_paths) ++counts[Basename(p)];
  std::vector<std::string> dups;
  for (const auto& [name, n] : counts) {
    if (n > 1) dups.push_back(name);
  }
  if (dups.empty()) return Status::Ok();
  std::string list;
  for (size_t i = 0; i < dups.size(); ++i) list += (i ? ", " : "") + dups[i];
  return InvalidArgument("Cannot upload multiple packages with the same filename: [" + list + "]");
}

}  // namespace trainyard::cli
