// trainyardd's settings: defaults in code, then a YAML file, then TRAINYARD_* environment
// variables, then command-line flags. One field table drives loading, the environment names,
// the dump (`trainyardd --print-config`) and docs/configuration.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/core/time.h"
#include "trainyard/registry/image_reference.h"
#include "trainyard/scheduler/options.h"

namespace trainyard::daemon {

struct DaemonConfig {
  std::string listen = "127.0.0.1:8470";
  std::string data_dir;  // default: $XDG_DATA_HOME/trainyard or ~/.local/share/trainyard
  std::string log_level = "info";
  bool admission_paused = false;
  int max_running_jobs = 0;
  std::string cancel_grace = "10s";
  std::string pip_index_url;
  std::vector<std::string> pip_find_links;
  // Host directories under which a job may name a local jobDir (absolute path or file://);
  // empty = jobDir must be gs://. The data dir is never one of them.
  std::vector<std::string> job_dir_roots = {"/tmp", "/var/tmp", "/home", "/srv", "/mnt", "/data"};
  std::string sqlite_synchronous = "NORMAL";
  std::string launcher_path;  // default: trainyard-launcher beside trainyardd
  int api_threads = 16;
  std::string default_project = "default";
  std::string log_format = "text";  // "text" or "json" (one JSON object per line)
  // Disk safety and retention (docs/operations.md).
  std::string disk_min_free = "1GiB";  // bytes, or a share of the filesystem such as "5%"
  std::string disk_check_interval = "10s";
  std::string gc_interval = "1h";  // "0" = only on request (trainyard admin gc)
  struct Retention {
    std::string job_logs_age = "0";  // "0" = kept
    std::string job_logs_max_bytes = "0";
    std::string work_dirs_age = "7d";
    std::string work_dirs_max_bytes = "0";
    std::string envs_age = "30d";
    std::string envs_max_bytes = "20GiB";
    std::string staged_packages_age = "30d";
  } retention;
  // TLS listener (same routes as `listen`): empty = off. Without cert/key files a self-signed
  // pair for localhost/127.0.0.1 is made in <data_dir>/tls/ and reused.
  std::string tls_listen;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::vector<scheduler::RuntimeOptions> runtimes = {scheduler::RuntimeOptions{}};
  // Node resources for admission (docs/scheduling.md). 0 / "" = detected.
  int node_cpus = 0;
  std::string node_memory;
  // Defaults let a CUSTOM job of 8 n1-standard-4 replicas (or STANDARD_1) run on a 2-core,
  // 24 GiB development machine; 1 and 1 admit only what really fits.
  double cpu_overcommit = 32;
  double memory_overcommit = 8;
  std::string gpus = "auto";  // "auto" (nvidia-smi), "none", or accelerator types, one per GPU
  std::string gpu_type_match = "any";  // "any" or "exact"
  // A job bigger than the node: "run_alone" (a development machine's choice) or "refuse".
  std::string oversize_jobs = "run_alone";
  bool resource_limits = true;  // cgroup v1 memory/CPU limits per replica where possible
  std::string cgroup_root = "/sys/fs/cgroup";
  int replica_restarts = 5;
  // Custom containers: "auto" (podman on PATH, else docker on PATH, else none), "none", or the
  // engine's path or name on PATH.
  std::string container_engine = "auto";
  bool container_limits = true;  // --memory/--cpus per container from its machine type
  // Image pulls (docs/containers.md, "Registries"): never, missing or always; mirrors as
  // "PREFIX=TARGET,..." in order (a YAML mapping in the file); registries reached without TLS
  // verification; an auth.json with per-registry credentials.
  std::string image_pull_policy = "missing";
  std::string registry_mirrors;
  std::vector<std::string> registry_insecure;
  std::string registry_auth_file;
  // Where replicas run: "local" (processes or containers on this machine) or "slurm" (a Slurm
  // cluster this machine submits to; docs/slurm.md).
  std::string executor = "local";
  struct Slurm {
    // Mounted at the same path on this machine and every node: replica work dirs, the bucket
    // store, staged packages and the hypertune module live there.
    std::string shared_dir;
    std::string partition;  // "" = the cluster's default
    std::string account;
    std::string qos;
    std::vector<std::string> extra_sbatch_args;
    // AI Platform accelerator type -> the cluster's GRES type: "NVIDIA_TESLA_T4=t4,...".
    std::string gpu_types;
    double cpu_scale = 1.0;
    double memory_scale = 1.0;
    std::string env_cache_dir = "/var/tmp/trainyard-envs";  // node-local
    std::string port_range = "20000-32767";
    std::string poll_interval = "10s";
    int max_submitted_jobs = 100;
    std::string time_limit_margin = "120s";
    // Replicas of different shapes: auto (a heterogeneous job where the cluster can place
    // one), always, or never (one plain job of the largest shape).
    std::string heterogeneous = "auto";
    // Trainyard project -> Slurm account: "proj-a=acct-a,proj-b=acct-b" (others: `account`).
    std::string project_accounts;
    // Partitions a job may pick with its label slurm-partition (empty: none may).
    std::vector<std::string> label_partitions;
    // Slurm jobs named as this daemon's (ty-<tag>-...) that no job it recovered owns, found
    // once after a restart: logged, and cancelled when true.
    bool cancel_orphans = false;
  } slurm;
  // Authentication and authorization (docs/security.md): on unless disabled, and off only on
  // loopback listeners.
  bool auth = true;
  bool allow_insecure_http = false;
  std::string admin_email = "admin@trainyard.local";
};

// Parses a size such as "24GiB", "512M", "1.5G" or "1000000" (bytes). Binary units for
// K/M/G/T and KiB..TiB, decimal for KB..TB.
Result<int64_t> ParseByteSize(const std::string& text);
// An age or interval: "0" (none), or a number with s, m, h or d, e.g. "30d", "12h", "90s".
Result<Duration> ParseAge(std::string_view text);

// Applies the YAML file (unknown keys are an error naming the key and the file).
Status ApplyConfigFile(const std::string& path, DaemonConfig& config);
// Applies TRAINYARD_<KEY> variables (e.g. TRAINYARD_LISTEN, TRAINYARD_DATA_DIR).
Status ApplyEnvironment(DaemonConfig& config);
// Sets one key from text (flags and env use this).
Status SetConfigValue(DaemonConfig& config, const std::string& key, const std::string& value);
// Where trainyardd (at `daemon_path`) looks for trainyard-launcher when launcher_path is not
// set, in order: beside itself (the build tree), then the installed layout's
// <prefix>/<libexecdir>/trainyard/ (GNUInstallDirs, relative to the daemon's own <bindir>).
std::vector<std::string> LauncherCandidates(const std::string& daemon_path);
// Fills defaults that depend on the environment and checks the whole config.
Status FinalizeConfig(DaemonConfig& config);
// YAML text of the effective configuration.
std::string DumpConfig(const DaemonConfig& config);
// "A=b,C=d" -> {A: b, C: d}; INVALID_ARGUMENT names a malformed entry.
Result<std::map<std::string, std::string>> ParseKeyValueList(const std::string& text);
// Splits "HOST:PORT" (port 0..65535); nullopt when malformed.
std::optional<std::pair<std::string, int>> ParseHostPort(const std::string& value);
// Markdown table of every key (for docs/configuration.md).
std::string ConfigReference();

// The registry settings of `config` (already validated key by key); checks the credentials
// file (absolute, readable, {"auths": {...}}) without ever putting its contents in a message.
Result<registry::RegistrySettings> RegistrySettingsFromConfig(const DaemonConfig& config);

// The container engine executable `setting` (container_engine) names, searched in `path_env`
// (a PATH value): "" when custom containers are off ("none", or "auto" finding neither podman
// nor docker). NOT_FOUND when an engine named explicitly is not an executable.
Result<std::string> ResolveContainerEngine(const std::string& setting, const std::string& path_env);

// What podman needs on hosts like these (docs/containers.md, "Podman on these hosts"): the runc
// runtime, cgroupfs and default ulimits a process without CAP_SYS_RESOURCE may set.
inline constexpr const char* kPodmanContainersConf =
    "[containers]\n"
    "default_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n"
    "[engine]\n"
    "runtime = \"runc\"\n"
    "cgroup_manager = \"cgroupfs\"\n";

// The environment of the engine CLI. For podman with runc installed (and no CONTAINERS_CONF
// of the user's own): writes kPodmanContainersConf to <data_dir>/containers.conf and returns
// CONTAINERS_CONF=<that file>; otherwise nothing (the engine's defaults).
Result<std::map<std::string, std::string>> PrepareContainerEngineEnv(const std::string& engine,
                                                                     const std::string& data_dir,
                                                                     const std::string& path_env);

}  // namespace trainyard::daemon
