// `jobs submit training`: merging --config with flags into the Job body (gcloud's
// BuildTrainingJob, compat §9.1) and the staging layout for uploaded packages.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flags.h"
#include "trainyard/core/status.h"

namespace trainyard::cli {

// Replica flags (--master-*, --worker-*, --parameter-server-*); unset = not given.
struct ReplicaFlags {
  std::optional<std::string> machine_type;
  std::optional<int64_t> count;  // workers and parameter servers only
  std::optional<AcceleratorFlag> accelerator;
  std::optional<std::string> image_uri;
};

// The flags of `jobs submit training` that shape the Job; unset = not given on the command line.
struct TrainingFlags {
  std::string job_id;
  std::optional<std::string> module_name;
  std::optional<std::string> region;
  std::optional<std::string> job_dir;
  std::optional<std::string> scale_tier;  // enum name (NormalizeScaleTier)
  std::optional<std::string> runtime_version;
  std::optional<std::string> python_version;
  std::optional<std::string> service_account;
  std::optional<std::string> kms_key_name;  // trainingInput.encryptionConfig.kmsKeyName
  // Set when --packages/--package-path were given: the final package URIs (gs:// packages
  // first, then uploaded ones, as gcloud orders them).
  std::optional<std::vector<std::string>> package_uris;
  // Set when a literal `--` was given: everything after it.
  std::optional<std::vector<std::string>> args;
  std::optional<std::map<std::string, std::string>> labels;
  bool enable_web_access = false;
  std::optional<bool> use_chief_in_tf_config;
  ReplicaFlags master;
  ReplicaFlags worker;
  ReplicaFlags parameter_server;
  // Region used when neither --region nor the config file gives one.
  std::string default_region = "us-central1";
};

// Checks the flag combinations gcloud refuses before building anything (runtime version vs
// master image, worker/parameter-server type and count given together, counts >= 1).
Status ValidateTrainingFlags(const TrainingFlags& flags);

// Builds the Job JSON to POST. `config_job_json` is the --config file as canonical Job JSON
// ("" when there is none). The positional job id always wins; --labels replaces the file's
// labels; each scalar field given by a flag replaces the file's value; replica flags merge
// field by field into masterConfig/workerConfig/parameterServerConfig keeping the file's other
// subfields. Package URIs from the file are kept when no package flag is given (gcloud would
// drop them). Fails with gcloud's messages when a CUSTOM tier has no master type or a job has
// neither packages nor a master image.
Result<std::string> BuildTrainingJobJson(std::string_view config_job_json,
                                         const TrainingFlags& flags);

// gs://BUCKET/OBJECT split; object may be empty ("gs://b" and "gs://b/").
struct GcsPath {
  std::string bucket;
  std::string object;
};
std::optional<GcsPath> ParseGcsUri(std::string_view uri);
bool IsGcsUri(std::string_view uri);

// Where local packages are uploaded: gs://B/JOB with --staging-bucket gs://B, else
// gs://B/DIR/packages with a gs:// --job-dir; nullopt when neither applies. INVALID_ARGUMENT
// when --staging-bucket is not a bare bucket URI.
struct StagingLocation {
  std::string bucket;
  std::string prefix;  // no leading or trailing '/'; may be empty
};
Result<std::optional<StagingLocation>> GetStagingLocation(std::string_view job_id,
                                                          std::string_view staging_bucket,
                                                          std::string_view job_dir);

// Where local packages go when neither --staging-bucket nor a gs:// --job-dir is given (gcloud
// refuses then, compat §9.1; Trainyard stages them as gcloud's other commands do with a bucket
// derived from the project, cf. `<project>_cloudbuild`): gs://<project>-trainyard-staging/JOB.
// "google" in a project id becomes "elgoog" (bucket names may not contain it), and the name is
// cut to 63 characters.
StagingLocation DefaultStagingLocation(std::string_view project, std::string_view job_id);

// The object name for one upload: PREFIX/SHA256/BASENAME (gcloud's uploads.UploadFiles).
std::string StagingObjectName(const StagingLocation& location, std::string_view sha256_hex,
                              std::string_view basename);

// gcloud's DuplicateEntriesError when two local packages share a file name.
Status CheckDuplicateBasenames(const std::vector<std::string>& local_paths);

// The last path component ("a/b/c.tar.gz" -> "c.tar.gz").
std::string Basename(std::string_view path);

}  // namespace trainyard::cli
