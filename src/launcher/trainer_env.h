// What a replica's processes see besides their files: the environment (a clean one: an
// allowlist of harmless host variables, Trainyard's defaults, then the replica spec's env), the
// configuration of Google's storage clients, and the check for outputs written to a relative
// `gs:` directory. Pure functions, so they can be tested without running a launcher
// (docs/writing-a-trainer.md).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace trainyard::launcher {

using EnvMap = std::map<std::string, std::string>;

// The launcher's environment variable that extends the allowlist: names, or prefixes ending in
// '*', separated by commas or blanks (e.g. "HTTPS_PROXY,NO_PROXY,NCCL_*"). The daemon's
// environment reaches the launcher, so an operator sets it where trainyardd starts.
inline constexpr char kAllowEnvVar[] = "TRAINYARD_TRAINER_ENV_ALLOW";

// The host variables every trainer gets when the launcher has them: PATH, HOME, USER, LOGNAME,
// SHELL, HOSTNAME, LANG, LANGUAGE, LC_*, TZ, TMPDIR, LD_LIBRARY_PATH, SSL_CERT_FILE,
// SSL_CERT_DIR. Nothing else of the daemon's environment (credentials, tokens, ...) reaches a
// trainer.
const std::vector<std::string>& DefaultHostAllowlist();
// Splits an allowlist text (see kAllowEnvVar).
std::vector<std::string> ParseAllowlist(std::string_view text);
// Whether `name` matches an entry (exact, or PREFIX* as a prefix).
bool Allowed(std::string_view name, const std::vector<std::string>& allowlist);

// "K=V" lines <-> a map (lines without '=' are dropped).
EnvMap ToEnvMap(const std::vector<std::string>& lines);
std::vector<std::string> ToEnvLines(const EnvMap& env);

// The host part of a child's environment: the launcher's variables that the default allowlist
// or the launcher's own TRAINYARD_TRAINER_ENV_ALLOW admit. `extra_prefixes` admits more (the
// install phase adds PIP_* so pip keeps the operator's index settings).
EnvMap HostEnvironment(const EnvMap& launcher_env,
                       const std::vector<std::string>& extra_allowlist = {});

// Where the per-replica storage client configuration goes (under the work directory).
struct StorageClientFiles {
  std::string dir;         // <work_dir>/cloudsdk (mounted into containers at the same path)
  std::string config_dir;  // CLOUDSDK_CONFIG: <dir>/config
  std::string boto_file;   // BOTO_CONFIG: <dir>/boto
  std::string boto_text;   // its contents
  std::string token_file;  // <dir>/access_token: the job's credential for gcloud ("" = none)
  std::string token_text;
};

// gcloud, gsutil and the google-cloud-storage client pointed at the storage API that
// STORAGE_EMULATOR_HOST in `spec_env` names (set by the scheduler): CLOUDSDK_CONFIG,
// CLOUDSDK_* properties (endpoint overrides, project, no credentials), BOTO_CONFIG (gsutil
// through gcloud storage), GOOGLE_CLOUD_PROJECT. Empty when there is no STORAGE_EMULATOR_HOST.
// `files` receives the paths and the boto file's text.
EnvMap StorageClientEnvironment(const EnvMap& spec_env, const std::string& work_dir,
                                StorageClientFiles* files);

// The trainer's environment, later entries winning: Trainyard's defaults (`defaults`: the
// storage clients, PYTHONUNBUFFERED=1 for Python), then the host part, then the replica spec's.
EnvMap TrainerEnvironment(const EnvMap& launcher_env, const EnvMap& defaults,
                          const EnvMap& spec_env);

// The files under <cwd>/gs: (relative to cwd, e.g. "gs:/bucket/model.pt"), sorted, at most
// `max` of them; `total` gets how many there are. Empty when there is no such directory.
std::vector<std::string> RelativeGsFiles(const std::string& cwd, size_t max, size_t* total);
// The WARNING for them ("" when files is empty).
std::string RelativeGsWarning(const std::string& cwd, const std::vector<std::string>& files,
                              size_t total);

// The job directory of a container replica when it is a host path (CLOUD_ML_JOB's job_dir,
// an absolute path or file:// URL), else "".
std::string LocalJobDirFromCloudMlJob(std::string_view cloud_ml_job);

}  // namespace trainyard::launcher
