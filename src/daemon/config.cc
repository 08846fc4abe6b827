#include "config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "trainyard/core/time.h"
#include "trainyard/core/util.h"
#include "trainyard/executor/slurm_control.h"

namespace trainyard::daemon {

namespace {

struct Field {
  const char* key;
  const char* help;
  std::function<Status(DaemonConfig&, const std::string&)> set;
  std::function<std::string(const DaemonConfig&)> get;
};

Status ParseBool(const std::string& key, const std::string& v, bool* out) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") {
    *out = true;
  } else if (v == "false" || v == "0" || v == "no" || v == "off") {
    *out = false;
  } else {
    return InvalidArgument("config " + key + ": \"" + v + "\" is not a boolean");
  }
  return Status::Ok();
}

Status ParseIntValue(const std::string& key, const std::string& v, int* out) {
  try {
    size_t pos = 0;
    *out = std::stoi(v, &pos);
    if (pos != v.size()) throw std::invalid_argument(v);
  } catch (...) {
    return InvalidArgument("config " + key + ": \"" + v + "\" is not an integer");
  }
  return Status::Ok();
}

Status ParseDoubleValue(const std::string& key, const std::string& v, double* out) {
  try {
    size_t pos = 0;
    *out = std::stod(v, &pos);
    if (pos != v.size()) throw std::invalid_argument(v);
  } catch (...) {
    return InvalidArgument("config " + key + ": \"" + v + "\" is not a number");
  }
  return Status::Ok();
}

std::string FormatDouble(double d) {
  std::ostringstream out;
  out << d;
  return out.str();
}

}  // namespace

Result<int64_t> ParseByteSize(const std::string& text) {
  size_t pos = 0;
  double n = 0;
  try {
    n = std::stod(text, &pos);
  } catch (...) {
    return InvalidArgument("\"" + text + "\" is not a size such as 24GiB or 512M");
  }
  std::string unit = text.substr(pos);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  static const std::pair<const char*, double> kUnits[] = {{"", 1},
                                                          {"B", 1},
                                                          {"K", 1024.0},
                                                          {"KiB", 1024.0},
                                                          {"M", 1048576.0},
                                                          {"MiB", 1048576.0},
                                                          {"G", 1073741824.0},
                                                          {"GiB", 1073741824.0},
                                                          {"T", 1099511627776.0},
                                                          {"TiB", 1099511627776.0},
                                                          {"KB", 1e3},
                                                          {"MB", 1e6},
                                                          {"GB", 1e9},
                                                          {"TB", 1e12}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) {
      // Finite, not negative, and at most 2^60 bytes (an exabyte) once scaled.
      if (!(n >= 0) || !(n * factor <= 1152921504606846976.0)) break;
      return static_cast<int64_t>(n * factor);
    }
  }
  return InvalidArgument("\"" + text + "\" is not a size such as 24GiB or 512M");
}

Result<Duration> ParseAge(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument("\"" + std::string(text) +
                           "\" is not an age such as 30d, 12h, 90m or 3600s (0 = none)");
  };
  if (text == "0") return Duration{0};
  if (text.size() < 2) return bad();
  Duration unit = 0;
  switch (text.back()) {
    case 's':
      unit = kMicrosPerSecond;
      break;
    case 'm':
      unit = 60 * kMicrosPerSecond;
      break;
    case 'h':
      unit = 3600 * kMicrosPerSecond;
      break;
    case 'd':
      unit = 86400 * kMicrosPerSecond;
      break;
    default:
      return bad();
  }
  const std::string num(text.substr(0, text.size() - 1));
  try {
    size_t pos = 0;
    const double n = std::stod(num, &pos);
    if (pos != num.size() || !(n >= 0) || n > 1e6 * 365) return bad();
    return static_cast<Duration>(n * static_cast<double>(unit));
  } catch (...) {
    return bad();
  }
}

std::optional<std::pair<std::string, int>> ParseHostPort(const std::string& v) {
  size_t colon = v.rfind(':');
  int port = -1;
  if (colon != std::string::npos && colon > 0 &&
      ParseIntValue("listen", v.substr(colon + 1), &port).ok() && port >= 0 && port <= 65535) {
    return std::make_pair(v.substr(0, colon), port);
  }
  return std::nullopt;
}

namespace {

std::string JoinList(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// "PREFIX=TARGET,..." in order; INVALID_ARGUMENT names a malformed or repeated entry.
Result<std::vector<registry::MirrorRule>> ParseMirrorList(const std::string& text) {
  std::vector<registry::MirrorRule> rules;
  for (const auto& item : Split(text, ',')) {
    const std::string t = Trim(item);
    if (t.empty()) continue;
    const size_t eq = t.find('=');
    if (eq == std::string::npos) return InvalidArgument("\"" + t + "\" is not PREFIX=TARGET");
    auto rule = registry::ParseMirrorRule(Trim(t.substr(0, eq)), Trim(t.substr(eq + 1)));
    if (!rule.ok()) return rule.status();
    for (const auto& r : rules) {
      if (r.prefix == rule->prefix)
        return InvalidArgument("the prefix " + r.prefix + " is mapped twice");
    }
    rules.push_back(*rule);
  }
  return rules;
}

const std::vector<Field>& Fields() {
  static const std::vector<Field> kFields = {
      {"listen",
       "HOST:PORT the API listens on (port 0 picks a free port; a non-loopback address needs "
       "auth on, and allow_insecure_http or the TLS listener instead)",
       [](DaemonConfig& c, const std::string& v) {
         if (ParseHostPort(v)) {
           c.listen = v;
           return Status::Ok();
         }
         return InvalidArgument("config listen: expected HOST:PORT, got \"" + v + "\"");
       },
       [](const DaemonConfig& c) { return c.listen; }},
      {"data_dir", "directory for the database, buckets, environments and job work dirs",
       [](DaemonConfig& c, const std::string& v) {
         c.data_dir = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.data_dir; }},
      {"log_level", "daemon log level: trace, debug, info, warn, error",
       [](DaemonConfig& c, const std::string& v) {
         for (const char* level : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
           if (v == level) {
             c.log_level = v;
             return Status::Ok();
           }
         }
         return InvalidArgument("config log_level: \"" + v +
                                "\" is not one of trace, debug, info, warn, error, critical, off");
       },
       [](const DaemonConfig& c) { return c.log_level; }},
      {"admission_paused", "start with admission paused (jobs stay QUEUED)",
       [](DaemonConfig& c, const std::string& v) {
         return ParseBool("admission_paused", v, &c.admission_paused);
       },
       [](const DaemonConfig& c) { return std::string(c.admission_paused ? "true" : "false"); }},
      {"max_running_jobs", "jobs admitted at once (0 = no limit)",
       [](DaemonConfig& c, const std::string& v) {
         return ParseIntValue("max_running_jobs", v, &c.max_running_jobs);
       },
       [](const DaemonConfig& c) { return std::to_string(c.max_running_jobs); }},
      {"cancel_grace", "time between SIGTERM and SIGKILL when a job is cancelled, e.g. \"10s\"",
       [](DaemonConfig& c, const std::string& v) {
         auto d = ParseDuration(v);
         if (!d.ok()) return InvalidArgument("config cancel_grace: " + d.status().message());
         c.cancel_grace = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.cancel_grace; }},
      {"pip_index_url", "package index for trainer dependencies (empty = pip --no-index)",
       [](DaemonConfig& c, const std::string& v) {
         c.pip_index_url = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.pip_index_url; }},
      {"pip_find_links", "comma-separated directories of wheels/sdists pip may install from",
       [](DaemonConfig& c, const std::string& v) {
         c.pip_find_links.clear();
         for (auto& s : Split(v, ',')) {
           if (!s.empty()) c.pip_find_links.push_back(s);
         }
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return JoinList(c.pip_find_links); }},
      {"job_dir_roots",
       "comma-separated host directories under which a job may name a local jobDir (empty = "
       "gs:// only)",
       [](DaemonConfig& c, const std::string& v) {
         c.job_dir_roots.clear();
         for (auto& s : Split(v, ',')) {
           if (s.empty()) continue;
           if (s[0] != '/') {
             return InvalidArgument("config job_dir_roots: \"" + s + "\" is not an absolute path");
           }
           c.job_dir_roots.push_back(s);
         }
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return JoinList(c.job_dir_roots); }},
      {"sqlite_synchronous", "NORMAL (survives a daemon crash) or FULL (also power loss)",
       [](DaemonConfig& c, const std::string& v) {
         if (v != "NORMAL" && v != "FULL")
           return InvalidArgument("config sqlite_synchronous: expected NORMAL or FULL");
         c.sqlite_synchronous = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.sqlite_synchronous; }},
      {"launcher_path",
       "path of trainyard-launcher (default: beside trainyardd, else <libexecdir>/trainyard/ of "
       "its install prefix)",
       [](DaemonConfig& c, const std::string& v) {
         c.launcher_path = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.launcher_path; }},
      {"api_threads",
       "HTTP worker threads kept ready (more start while all are busy, up to 1024; idle "
       "keep-alive connections hold none)",
       [](DaemonConfig& c, const std::string& v) {
         return ParseIntValue("api_threads", v, &c.api_threads);
       },
       [](const DaemonConfig& c) { return std::to_string(c.api_threads); }},
      {"tls_listen",
       "HOST:PORT of an extra HTTPS listener with the same routes (empty = off; port 0 picks a "
       "free port); native gsutil needs https",
       [](DaemonConfig& c, const std::string& v) {
         if (v.empty()) {
           c.tls_listen.clear();
           return Status::Ok();
         }
         if (!ParseHostPort(v))
           return InvalidArgument("config tls_listen: expected HOST:PORT, got \"" + v + "\"");
         c.tls_listen = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.tls_listen; }},
      {"tls_cert_file",
       "PEM certificate (chain) of the TLS listener (empty = self-signed, made in "
       "DATA_DIR/tls/)",
       [](DaemonConfig& c, const std::string& v) {
         c.tls_cert_file = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.tls_cert_file; }},
      {"tls_key_file", "PEM private key of tls_cert_file",
       [](DaemonConfig& c, const std::string& v) {
         c.tls_key_file = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.tls_key_file; }},
      {"node_cpus", "CPUs this node offers to replicas (0 = the CPUs this process may use)",
       [](DaemonConfig& c, const std::string& v) {
         Status st = ParseIntValue("node_cpus", v, &c.node_cpus);
         if (st.ok() && c.node_cpus < 0) return InvalidArgument("config node_cpus: must be >= 0");
         return st;
       },
       [](const DaemonConfig& c) { return std::to_string(c.node_cpus); }},
      {"node_memory", "memory this node offers to replicas, e.g. \"24GiB\" (empty = MemTotal)",
       [](DaemonConfig& c, const std::string& v) {
         if (!v.empty()) {
           auto b = ParseByteSize(v);
           if (!b.ok()) return InvalidArgument("config node_memory: " + b.status().message());
         }
         c.node_memory = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.node_memory; }},
      {"cpu_overcommit",
       "admission counts node_cpus x this many vCPUs (machine types ask for vCPUs the node may "
       "not have; 1 = strict)",
       [](DaemonConfig& c, const std::string& v) {
         Status st = ParseDoubleValue("cpu_overcommit", v, &c.cpu_overcommit);
         if (st.ok() && !(c.cpu_overcommit > 0 && c.cpu_overcommit <= 1e6))
           return InvalidArgument("config cpu_overcommit: must be a number > 0 and <= 1000000");
         return st;
       },
       [](const DaemonConfig& c) { return FormatDouble(c.cpu_overcommit); }},
      {"memory_overcommit", "admission counts node_memory x this much memory (1 = strict)",
       [](DaemonConfig& c, const std::string& v) {
         Status st = ParseDoubleValue("memory_overcommit", v, &c.memory_overcommit);
         if (st.ok() && !(c.memory_overcommit > 0 && c.memory_overcommit <= 1e6))
           return InvalidArgument("config memory_overcommit: must be a number > 0 and <= 1000000");
         return st;
       },
       [](const DaemonConfig& c) { return FormatDouble(c.memory_overcommit); }},
      {"gpus",
       "GPU inventory: auto (nvidia-smi), none, or accelerator types one per GPU, e.g. "
       "\"NVIDIA_TESLA_T4,NVIDIA_TESLA_T4\" or \"2xNVIDIA_TESLA_T4\" (GPUs are never "
       "overcommitted)",
       [](DaemonConfig& c, const std::string& v) {
         if (v != "auto") {
           auto list = scheduler::ParseGpuList(v);
           if (!list.ok()) return list.status();
         }
         c.gpus = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.gpus; }},
      {"gpu_type_match",
       "any: a request for any GPU type may use any GPU; exact: only GPUs of the requested type",
       [](DaemonConfig& c, const std::string& v) {
         if (v != "any" && v != "exact")
           return InvalidArgument("config gpu_type_match: expected any or exact");
         c.gpu_type_match = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.gpu_type_match; }},
      {"oversize_jobs",
       "a job whose replicas need more CPUs or memory than the whole node offers: run_alone "
       "(wait until the node is idle, then run it alone, its replicas sharing the node, with a "
       "warning in its log) or refuse (400 at create)",
       [](DaemonConfig& c, const std::string& v) {
         auto policy = scheduler::ParseOversizePolicy(v);
         if (!policy.ok())
           return InvalidArgument("config oversize_jobs: " + policy.status().message());
         c.oversize_jobs = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.oversize_jobs; }},
      {"resource_limits",
       "run each replica in cgroup v1 groups limited to its machine type's memory and vCPUs "
       "(where cgroup v1 is writable)",
       [](DaemonConfig& c, const std::string& v) {
         return ParseBool("resource_limits", v, &c.resource_limits);
       },
       [](const DaemonConfig& c) { return std::string(c.resource_limits ? "true" : "false"); }},
      {"cgroup_root", "where the cgroup v1 hierarchies are mounted",
       [](DaemonConfig& c, const std::string& v) {
         c.cgroup_root = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.cgroup_root; }},
      {"replica_restarts",
       "restarts of a replica killed by a signal Trainyard did not send (OOM, kill -9) before "
       "its job fails",
       [](DaemonConfig& c, const std::string& v) {
         Status st = ParseIntValue("replica_restarts", v, &c.replica_restarts);
         if (st.ok() && c.replica_restarts < 0)
           return InvalidArgument("config replica_restarts: must be >= 0");
         return st;
       },
       [](const DaemonConfig& c) { return std::to_string(c.replica_restarts); }},
      {"container_engine",
       "engine for custom-container jobs (masterConfig.imageUri): auto (podman on PATH, else "
       "docker on PATH), none, or the engine's path or name",
       [](DaemonConfig& c, const std::string& v) {
         if (v.empty()) return InvalidArgument("config container_engine: must not be empty");
         c.container_engine = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.container_engine; }},
      {"container_limits",
       "give each container --memory and --cpus from its machine type (the engine enforces "
       "them)",
       [](DaemonConfig& c, const std::string& v) {
         return ParseBool("container_limits", v, &c.container_limits);
       },
       [](const DaemonConfig& c) { return std::string(c.container_limits ? "true" : "false"); }},
      {"image_pull_policy",
       "when custom-container images are pulled: never (only images already in the engine's "
       "local storage), missing (pull those that are not), always (pull once per job)",
       [](DaemonConfig& c, const std::string& v) {
         if (auto p = registry::ParsePullPolicy(v); !p.ok()) {
           return InvalidArgument("config image_pull_policy: " + p.status().message());
         }
         c.image_pull_policy = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.image_pull_policy; }},
      {"registry_mirrors",
       "pull images under a prefix from another registry: comma-separated PREFIX=TARGET, e.g. "
       "\"gcr.io=localhost:5000,*-docker.pkg.dev=localhost:5000\" (a mapping in YAML; the "
       "longest prefix wins)",
       [](DaemonConfig& c, const std::string& v) {
         auto rules = ParseMirrorList(v);
         if (!rules.ok())
           return InvalidArgument("config registry_mirrors: " + rules.status().message());
         c.registry_mirrors = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.registry_mirrors; }},
      {"registry_insecure",
       "comma-separated registries (HOST:PORT) pulled from without TLS verification, plain http "
       "allowed, e.g. \"localhost:5000\" (each one named; there is no wildcard)",
       [](DaemonConfig& c, const std::string& v) {
         std::vector<std::string> list;
         for (const auto& item : Split(v, ',')) {
           const std::string r = Trim(item);
           if (r.empty()) continue;
           if (Status st = registry::ValidateRegistryName(r); !st.ok()) {
             return InvalidArgument("config registry_insecure: " + st.message() +
                                    (r.find('*') != std::string::npos
                                         ? " (name each registry; there is no wildcard)"
                                         : ""));
           }
           list.push_back(r);
         }
         c.registry_insecure = list;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return JoinList(c.registry_insecure); }},
      {"registry_auth_file",
       "credentials for registries: an absolute path to an auth.json in podman's and docker's "
       "format ({\"auths\": {\"REGISTRY\": {\"auth\": base64(user:password)}}}, as "
       "`podman login --authfile` writes it; empty = the engine's own)",
       [](DaemonConfig& c, const std::string& v) {
         if (!v.empty() && v[0] != '/') {
           return InvalidArgument("config registry_auth_file: \"" + v +
                                  "\" is not an absolute path");
         }
         c.registry_auth_file = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.registry_auth_file; }},
      {"executor",
       "where replicas run: local (this machine) or slurm (a Slurm cluster; the slurm.* keys, "
       "docs/slurm.md)",
       [](DaemonConfig& c, const std::string& v) {
         if (v != "local" && v != "slurm")
           return InvalidArgument("config executor: expected local or slurm, got \"" + v + "\"");
         c.executor = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.executor; }},
      {"slurm.shared_dir",
       "directory mounted at the same path on this machine and every node (work dirs, buckets, "
       "packages)",
       [](DaemonConfig& c, const std::string& v) {
         c.slurm.shared_dir = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.slurm.shared_dir; }},
      {"slurm.partition", "Slurm partition for every job (empty = the cluster default)",
       [](DaemonConfig& c, const std::string& v) {
         c.slurm.partition = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.slurm.partition; }},
      {"slurm.account", "Slurm account (--account; empty = none)",
       [](DaemonConfig& c, const std::string& v) {
         c.slurm.account = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.slurm.account; }},
      {"slurm.qos", "Slurm QOS (--qos; empty = none)",
       [](DaemonConfig& c, const std::string& v) {
         c.slurm.qos = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.slurm.qos; }},
      {"slurm.extra_sbatch_args",
       "more #SBATCH lines, comma-separated, e.g. \"--constraint=a100\" (resource, name, "
       "output, signal, requeue, export, partition, account and qos flags are Trainyard's)",
       [](DaemonConfig& c, const std::string& v) {
         std::vector<std::string> args;
         for (const auto& a : Split(v, ',')) {
           std::string t = Trim(a);
           if (t.empty()) continue;
           // Read as sbatch reads an #SBATCH line: bundled short flags, abbreviated long ones.
           if (std::string problem = executor::SbatchExtraArgsProblem(t); !problem.empty()) {
             return InvalidArgument("config slurm.extra_sbatch_args: " + problem);
           }
           args.push_back(t);
         }
         c.slurm.extra_sbatch_args = args;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return JoinList(c.slurm.extra_sbatch_args); }},
      {"slurm.gpu_types",
       "AI Platform accelerator type to the cluster's GRES type, e.g. "
       "\"NVIDIA_TESLA_T4=t4,NVIDIA_TESLA_A100=a100\" (unmapped types ask for any GPU)",
       [](DaemonConfig& c, const std::string& v) {
         auto m = ParseKeyValueList(v);
         if (!m.ok()) return InvalidArgument("config slurm.gpu_types: " + m.status().message());
         c.slurm.gpu_types = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.slurm.gpu_types; }},
      {"slurm.cpu_scale",
       "Slurm CPUs per machine-type vCPU (0.5 when a Slurm CPU is a 2-thread core)",
       [](DaemonConfig& c, const std::string& v) {
         Status st = ParseDoubleValue("slurm.cpu_scale", v, &c.slurm.cpu_scale);
         if (st.ok() && !(c.slurm.cpu_scale > 0 && c.slurm.cpu_scale <= 1e6))
           return InvalidArgument("config slurm.cpu_scale: must be a number > 0 and <= 1000000");
         return st;
       },
       [](const DaemonConfig& c) { return FormatDouble(c.slurm.cpu_scale); }},
      {"slurm.memory_scale", "Slurm memory per byte of machine-type memory",
       [](DaemonConfig& c, const std::string& v) {
         Status st = ParseDoubleValue("slurm.memory_scale", v, &c.slurm.memory_scale);
         if (st.ok() && !(c.slurm.memory_scale > 0 && c.slurm.memory_scale <= 1e6))
           return InvalidArgument("config slurm.memory_scale: must be a number > 0 and <= 1000000");
         return st;
       },
       [](const DaemonConfig& c) { return FormatDouble(c.slurm.memory_scale); }},
      {"slurm.env_cache_dir", "node-local directory for cached Python environments",
       [](DaemonConfig& c, const std::string& v) {
         c.slurm.env_cache_dir = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.slurm.env_cache_dir; }},
      {"slurm.port_range", "ports launchers bind for their trainers, below the ephemeral range",
       [](DaemonConfig& c, const std::string& v) {
         int lo = 0;
         int hi = 0;
         char tail = 0;
         if (std::sscanf(v.c_str(), "%d-%d%c", &lo, &hi, &tail) != 2 || lo < 1 || hi > 65535 ||
             lo > hi)
           return InvalidArgument("config slurm.port_range: expected LOW-HIGH, got \"" + v + "\"");
         c.slurm.port_range = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.slurm.port_range; }},
      {"slurm.poll_interval", "how often one squeue call asks for the state of every Trainyard job",
       [](DaemonConfig& c, const std::string& v) {
         auto d = ParseDuration(v);
         if (!d.ok()) return InvalidArgument("config slurm.poll_interval: " + d.status().message());
         c.slurm.poll_interval = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.slurm.poll_interval; }},
      {"slurm.max_submitted_jobs",
       "gangs handed to Slurm at once (the rest wait in Trainyard's queue); 0 = no cap",
       [](DaemonConfig& c, const std::string& v) {
         Status st = ParseIntValue("slurm.max_submitted_jobs", v, &c.slurm.max_submitted_jobs);
         if (st.ok() && c.slurm.max_submitted_jobs < 0)
           return InvalidArgument("config slurm.max_submitted_jobs: must be >= 0");
         return st;
       },
       [](const DaemonConfig& c) { return std::to_string(c.slurm.max_submitted_jobs); }},
      {"slurm.time_limit_margin",
       "Slurm --time beyond maxRunningTime and the cancel grace (a backstop)",
       [](DaemonConfig& c, const std::string& v) {
         auto d = ParseDuration(v);
         if (!d.ok())
           return InvalidArgument("config slurm.time_limit_margin: " + d.status().message());
         c.slurm.time_limit_margin = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.slurm.time_limit_margin; }},
      {"slurm.heterogeneous",
       "replicas of different shapes: auto (a heterogeneous job, one component per shape, where "
       "the cluster can place one; else one plain job of the largest shape), always, or never",
       [](DaemonConfig& c, const std::string& v) {
         if (v != "auto" && v != "always" && v != "never")
           return InvalidArgument("config slurm.heterogeneous: expected auto, always or never");
         c.slurm.heterogeneous = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.slurm.heterogeneous; }},
      {"slurm.project_accounts",
       "Slurm account per Trainyard project, e.g. \"proj-a=acct-a,proj-b=acct-b\" (a mapping "
       "in YAML; other projects get slurm.account)",
       [](DaemonConfig& c, const std::string& v) {
         auto m = ParseKeyValueList(v);
         if (!m.ok()) {
           return InvalidArgument("config slurm.project_accounts: " + m.status().message());
         }
         c.slurm.project_accounts = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.slurm.project_accounts; }},
      {"slurm.label_partitions",
       "comma-separated partitions a job may choose with its label slurm-partition (empty = "
       "none; a job asking for another fails at once)",
       [](DaemonConfig& c, const std::string& v) {
         std::vector<std::string> list;
         for (const auto& item : Split(v, ',')) {
           const std::string p = Trim(item);
           if (p.empty()) continue;
           if (p.find_first_of(" \t|=") != std::string::npos) {
             return InvalidArgument("config slurm.label_partitions: \"" + p +
                                    "\" is not a partition name");
           }
           list.push_back(p);
         }
         c.slurm.label_partitions = list;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return JoinList(c.slurm.label_partitions); }},
      {"slurm.cancel_orphans",
       "cancel the Slurm jobs named as this daemon's that none of its jobs owns (found once "
       "after a start; false: only logged)",
       [](DaemonConfig& c, const std::string& v) {
         return ParseBool("slurm.cancel_orphans", v, &c.slurm.cancel_orphans);
       },
       [](const DaemonConfig& c) {
         return std::string(c.slurm.cancel_orphans ? "true" : "false");
       }},
      {"log_format", "the daemon's log lines: text, or json (one JSON object per line)",
       [](DaemonConfig& c, const std::string& v) {
         if (v != "text" && v != "json")
           return InvalidArgument("config log_format: expected text or json, got \"" + v + "\"");
         c.log_format = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.log_format; }},
      {"disk_min_free",
       "free space below which admission pauses on the data dir (and slurm.shared_dir), e.g. "
       "\"1GiB\" or \"5%\" of the filesystem (0 = never)",
       [](DaemonConfig& c, const std::string& v) {
         bool ok = false;
         if (!v.empty() && v.back() == '%') {
           try {
             size_t pos = 0;
             const double pct = std::stod(v.substr(0, v.size() - 1), &pos);
             ok = pos == v.size() - 1 && pct >= 0 && pct < 100;
           } catch (...) {
           }
         } else {
           ok = ParseByteSize(v).ok();
         }
         if (!ok)
           return InvalidArgument("config disk_min_free: \"" + v +
                                  "\" is not a size such as 1GiB or a share such as 5%");
         c.disk_min_free = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.disk_min_free; }},
      {"disk_check_interval", "how often free space is checked",
       [](DaemonConfig& c, const std::string& v) {
         auto d = ParseAge(v);
         if (!d.ok()) return InvalidArgument("config disk_check_interval: " + d.status().message());
         c.disk_check_interval = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.disk_check_interval; }},
      {"gc_interval",
       "how often garbage collection runs by the retention.* policy (0 = only on request: "
       "trainyard admin gc)",
       [](DaemonConfig& c, const std::string& v) {
         auto d = ParseAge(v);
         if (!d.ok()) return InvalidArgument("config gc_interval: " + d.status().message());
         c.gc_interval = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.gc_interval; }},
      {"retention.job_logs_age",
       "stored log lines of jobs that finished longer ago are deleted (0 = kept; the job records "
       "stay)",
       [](DaemonConfig& c, const std::string& v) {
         auto d = ParseAge(v);
         if (!d.ok())
           return InvalidArgument("config retention.job_logs_age: " + d.status().message());
         c.retention.job_logs_age = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.retention.job_logs_age; }},
      {"retention.job_logs_max_bytes",
       "finished jobs' stored log lines above this total are deleted, oldest job first (0 = no "
       "limit)",
       [](DaemonConfig& c, const std::string& v) {
         auto b = ParseByteSize(v);
         if (!b.ok())
           return InvalidArgument("config retention.job_logs_max_bytes: " + b.status().message());
         c.retention.job_logs_max_bytes = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.retention.job_logs_max_bytes; }},
      {"retention.work_dirs_age",
       "replica and trial work dirs of jobs that finished longer ago are removed (0 = kept; "
       "trials' metric files stay)",
       [](DaemonConfig& c, const std::string& v) {
         auto d = ParseAge(v);
         if (!d.ok())
           return InvalidArgument("config retention.work_dirs_age: " + d.status().message());
         c.retention.work_dirs_age = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.retention.work_dirs_age; }},
      {"retention.work_dirs_max_bytes",
       "finished jobs' work dirs above this total are removed, oldest job first (0 = no limit)",
       [](DaemonConfig& c, const std::string& v) {
         auto b = ParseByteSize(v);
         if (!b.ok())
           return InvalidArgument("config retention.work_dirs_max_bytes: " + b.status().message());
         c.retention.work_dirs_max_bytes = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.retention.work_dirs_max_bytes; }},
      {"retention.envs_age",
       "cached Python environments unused for longer are removed (0 = kept; one in use never is)",
       [](DaemonConfig& c, const std::string& v) {
         auto d = ParseAge(v);
         if (!d.ok()) return InvalidArgument("config retention.envs_age: " + d.status().message());
         c.retention.envs_age = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.retention.envs_age; }},
      {"retention.envs_max_bytes",
       "cached environments above this total are removed, least recently used first (0 = no limit)",
       [](DaemonConfig& c, const std::string& v) {
         auto b = ParseByteSize(v);
         if (!b.ok())
           return InvalidArgument("config retention.envs_max_bytes: " + b.status().message());
         c.retention.envs_max_bytes = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.retention.envs_max_bytes; }},
      {"retention.staged_packages_age",
       "packages staged for jobs (gs://B/.../SHA256/FILE) that finished longer ago are deleted "
       "unless an unfinished job uses them (0 = kept)",
       [](DaemonConfig& c, const std::string& v) {
         auto d = ParseAge(v);
         if (!d.ok())
           return InvalidArgument("config retention.staged_packages_age: " + d.status().message());
         c.retention.staged_packages_age = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.retention.staged_packages_age; }},
      {"default_project", "project used by the storage API when a request names none",
       [](DaemonConfig& c, const std::string& v) {
         c.default_project = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.default_project; }},
      {"auth",
       "authentication and authorization (docs/security.md): every request needs an API token "
       "and a role that grants its permission; false is allowed only on loopback listeners",
       [](DaemonConfig& c, const std::string& v) { return ParseBool("auth", v, &c.auth); },
       [](const DaemonConfig& c) { return std::string(c.auth ? "true" : "false"); }},
      {"allow_insecure_http",
       "with auth on, let the plain-HTTP listener use a non-loopback address (tokens cross the "
       "network in clear text; use the TLS listener instead)",
       [](DaemonConfig& c, const std::string& v) {
         return ParseBool("allow_insecure_http", v, &c.allow_insecure_http);
       },
       [](const DaemonConfig& c) { return std::string(c.allow_insecure_http ? "true" : "false"); }},
      {"admin_email",
       "the administrator created, with a token in <data_dir>/admin-token, on the first start "
       "with auth on",
       [](DaemonConfig& c, const std::string& v) {
         c.admin_email = v;
         return Status::Ok();
       },
       [](const DaemonConfig& c) { return c.admin_email; }},
  };
  return kFields;
}

std::string EnvName(const char* key) {
  std::string s = "TRAINYARD_";
  for (const char* p = key; *p; ++p) {
    s.push_back(*p == '.' ? '_' : static_cast<char>(std::toupper(*p)));
  }
  return s;
}

std::vector<std::string> YamlStrings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n.IsSequence()) {
    for (const auto& x : n) out.push_back(x.as<std::string>());
  } else if (n.IsScalar()) {
    out.push_back(n.as<std::string>());
  }
  return out;
}

}  // namespace

Status SetConfigValue(DaemonConfig& config, const std::string& key, const std::string& value) {
  for (const auto& f : Fields()) {
    if (key == f.key) return f.set(config, value);
  }
  return InvalidArgument("unknown config key \"" + key + "\"");
}

Status ApplyConfigFile(const std::string& path, DaemonConfig& config) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    return InvalidArgument("cannot read config file " + path + ": " + e.what());
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return InvalidArgument("config file " + path + ": expected a mapping");
  try {
    for (const auto& kv : root) {
      std::string key = kv.first.as<std::string>();
      if (key == "runtimes") {
        config.runtimes.clear();
        for (const auto& rt : kv.second) {
          scheduler::RuntimeOptions r;
          for (const auto& f : rt) {
            std::string k = f.first.as<std::string>();
            if (k == "name")
              r.name = f.second.as<std::string>();
            else if (k == "python")
              r.python = f.second.as<std::string>();
            else if (k == "runtime_versions")
              r.runtime_versions = YamlStrings(f.second);
            else if (k == "python_versions")
              r.python_versions = YamlStrings(f.second);
            else
              return InvalidArgument("config file " + path + ": unknown runtime key \"" + k + "\"");
          }
          config.runtimes.push_back(r);
        }
        continue;
      }
      if ((key == "slurm" || key == "retention") && kv.second.IsMap()) {
        // The nested block: slurm: {partition: gpu, gpu_types: {NVIDIA_TESLA_T4: t4}, ...}
        for (const auto& f : kv.second) {
          const std::string sub = f.first.as<std::string>();
          std::string value;
          if (f.second.IsSequence()) {
            value = JoinList(YamlStrings(f.second));
          } else if (f.second.IsMap()) {
            for (const auto& e : f.second) {
              value += (value.empty() ? "" : ",") + e.first.as<std::string>() + "=" +
                       e.second.as<std::string>();
            }
          } else {
            value = f.second.as<std::string>();
          }
          Status st = SetConfigValue(config, key + "." + sub, value);
          if (!st.ok()) return InvalidArgument("config file " + path + ": " + st.message());
        }
        continue;
      }
      std::string value;
      if (kv.second.IsSequence()) {
        value = JoinList(YamlStrings(kv.second));
      } else if (kv.second.IsMap()) {
        // registry_mirrors: {"gcr.io": "localhost:5000", ...}, in the file's order.
        for (const auto& e : kv.second) {
          value += (value.empty() ? "" : ",") + e.first.as<std::string>() + "=" +
                   e.second.as<std::string>();
        }
      } else {
        value = kv.second.as<std::string>();
      }
      Status st = SetConfigValue(config, key, value);
      if (!st.ok()) return InvalidArgument("config file " + path + ": " + st.message());
    }
  } catch (const std::exception& e) {
    return InvalidArgument("config file " + path + ": " + e.what());
  }
  return Status::Ok();
}

Status ApplyEnvironment(DaemonConfig& config) {
  for (const auto& f : Fields()) {
    const char* v = std::getenv(EnvName(f.key).c_str());
    if (v != nullptr) {
      Status st = f.set(config, v);
      if (!st.ok()) return InvalidArgument(EnvName(f.key) + ": " + st.message());
    }
  }
  return Status::Ok();
}

std::vector<std::string> LauncherCandidates(const std::string& daemon_path) {
  const std::string dir = daemon_path.substr(0, daemon_path.rfind('/'));
  std::vector<std::string> out = {dir + "/trainyard-launcher"};
  // The installed layout (GNUInstallDirs): <prefix>/<bindir>/trainyardd and
  // <prefix>/<libexecdir>/trainyard/trainyard-launcher, whatever the prefix.
  const std::string bindir = TRAINYARD_INSTALL_BINDIR;
  const std::string libexecdir = TRAINYARD_INSTALL_LIBEXECDIR;
  std::string libexec;
  if (!libexecdir.empty() && libexecdir[0] == '/') {
    libexec = libexecdir;
  } else if (!bindir.empty() && bindir[0] != '/' && dir.size() > bindir.size() + 1 &&
             dir.compare(dir.size() - bindir.size() - 1, std::string::npos, "/" + bindir) == 0) {
    libexec = dir.substr(0, dir.size() - bindir.size()) + libexecdir;
  }
  if (!libexec.empty()) out.push_back(libexec + "/trainyard/trainyard-launcher");
  // Last, where `cmake --install` put it for the configured prefix.
  const std::string full =
      std::string(TRAINYARD_INSTALL_FULL_LIBEXECDIR) + "/trainyard/trainyard-launcher";
  if (std::find(out.begin(), out.end(), full) == out.end()) out.push_back(full);
  return out;
}

Status FinalizeConfig(DaemonConfig& config) {
  if (config.data_dir.empty()) {
    const char* xdg = std::getenv("XDG_DATA_HOME");
    const char* home = std::getenv("HOME");
    if (xdg != nullptr && *xdg)
      config.data_dir = std::string(xdg) + "/trainyard";
    else if (home != nullptr && *home)
      config.data_dir = std::string(home) + "/.local/share/trainyard";
    else
      return InvalidArgument("no data_dir: set --data-dir, TRAINYARD_DATA_DIR or HOME");
  }
  if (config.launcher_path.empty()) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    std::vector<std::string> candidates;
    if (n > 0) candidates = LauncherCandidates(std::string(buf, static_cast<size_t>(n)));
    for (const std::string& c : candidates) {
      if (::access(c.c_str(), X_OK) == 0) {
        config.launcher_path = c;
        break;
      }
    }
    if (config.launcher_path.empty()) {
      std::string looked;
      for (const std::string& c : candidates) looked += (looked.empty() ? "" : ", ") + c;
      return InvalidArgument("trainyard-launcher not found (looked at " + looked +
                             "); set launcher_path");
    }
  }
  if (::access(config.launcher_path.c_str(), X_OK) != 0) {
    return InvalidArgument("launcher_path " + config.launcher_path + " is not an executable");
  }
  if (config.runtimes.empty()) return InvalidArgument("config: at least one runtime is needed");
  for (const auto& rt : config.runtimes) {
    if (::access(rt.python.c_str(), X_OK) != 0) {
      return InvalidArgument("runtime " + rt.name + ": python " + rt.python +
                             " is not an executable");
    }
  }
  if (!config.tls_listen.empty() && config.tls_cert_file.empty() != config.tls_key_file.empty()) {
    return InvalidArgument(
        "config: tls_cert_file and tls_key_file go together (give both, or "
        "neither for a self-signed pair in <data_dir>/tls/)");
  }
  if (config.api_threads < 1) return InvalidArgument("config api_threads: must be at least 1");
  return Status::Ok();
}

namespace {

// A YAML double-quoted scalar: loads back as exactly `value`, whatever it holds ("*" is an
// alias in plain YAML, "#" a comment, ": " a mapping, "" an empty string).
std::string YamlQuote(const std::string& value) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char ch : value) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7f) {
      out += "\\x";
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

std::string YamlFlowList(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + YamlQuote(values[i]);
  return out + "]";
}

}  // namespace

Result<std::map<std::string, std::string>> ParseKeyValueList(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const auto& item : Split(text, ',')) {
    const std::string t = Trim(item);
    if (t.empty()) continue;
    const size_t eq = t.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == t.size()) {
      return InvalidArgument("\"" + t + "\" is not KEY=VALUE");
    }
    out[Trim(t.substr(0, eq))] = Trim(t.substr(eq + 1));
  }
  return out;
}

std::string DumpConfig(const DaemonConfig& config) {
  // Every scalar is double-quoted, so ApplyConfigFile loads the text back to the same config
  // and dumping that gives the same text.
  std::ostringstream out;
  for (const auto& f : Fields()) out << f.key << ": " << YamlQuote(f.get(config)) << "\n";
  out << "runtimes:\n";
  for (const auto& rt : config.runtimes) {
    out << "  - name: " << YamlQuote(rt.name) << "\n    python: " << YamlQuote(rt.python)
        << "\n    runtime_versions: " << YamlFlowList(rt.runtime_versions)
        << "\n    python_versions: " << YamlFlowList(rt.python_versions) << "\n";
  }
  return out.str();
}

namespace {

// `name` as PATH lookup finds it (a name with a slash is taken as a path); "" if not found.
std::string FindExecutable(const std::string& name, const std::string& path_env) {
  if (name.find('/') != std::string::npos) {
    return ::access(name.c_str(), X_OK) == 0 ? name : "";
  }
  for (const auto& dir : Split(path_env, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace

Result<std::string> ResolveContainerEngine(const std::string& setting,
                                           const std::string& path_env) {
  if (setting == "none") return std::string();
  if (setting == "auto") {
    for (const char* name : {"podman", "docker"}) {
      std::string found = FindExecutable(name, path_env);
      if (!found.empty()) return found;
    }
    return std::string();
  }
  std::string found = FindExecutable(setting, path_env);
  if (found.empty()) {
    return NotFound("container_engine " + setting + " is not an executable" +
                    (setting.find('/') == std::string::npos ? " on PATH" : ""));
  }
  return found;
}

bool HostNeedsPodmanWorkarounds() {
  const bool cgroup_v2 = ::access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
  bool sys_resource = false;
  if (auto status = ReadFile("/proc/self/status"); status.ok()) {
    for (const std::string& line : Split(*status, '\n')) {
      if (!StartsWith(line, "CapEff:")) continue;
      try {
        const uint64_t caps = std::stoull(line.substr(7), nullptr, 16);
        sys_resource = (caps >> 24) & 1;  // CAP_SYS_RESOURCE
      } catch (...) {
      }
    }
  }
  return !cgroup_v2 || !sys_resource;
}

Result<std::map<std::string, std::string>> PrepareContainerEngineEnv(const std::string& engine,
                                                                     const std::string& data_dir,
                                                                     const std::string& path_env) {
  std::map<std::string, std::string> env;
  const std::string base = engine.substr(engine.rfind('/') + 1);
  if (!StartsWith(base, "podman")) return env;
  // The user's own containers.conf wins; the engine sees it through the inherited environment.
  if (const char* own = std::getenv("CONTAINERS_CONF"); own != nullptr && *own) return env;
  // Without runc the file would name a runtime podman cannot find: keep its defaults.
  if (FindExecutable("runc", path_env).empty()) return env;
  // Only hosts that need it: a cgroup v1 (or hybrid) host, or one whose root cannot raise
  // rlimits (no CAP_SYS_RESOURCE), as these VMs. Elsewhere podman's own settings stand.
  if (!HostNeedsPodmanWorkarounds()) return env;
  const std::string file = data_dir + "/containers.conf";
  TRAINYARD_RETURN_IF_ERROR(WriteFileAtomic(file, kPodmanContainersConf, /*durable=*/false));
  env["CONTAINERS_CONF"] = file;
  return env;
}

Result<registry::RegistrySettings> RegistrySettingsFromConfig(const DaemonConfig& config) {
  registry::RegistrySettings settings;
  TRAINYARD_ASSIGN_OR_RETURN(settings.policy, registry::ParsePullPolicy(config.image_pull_policy));
  TRAINYARD_ASSIGN_OR_RETURN(settings.mirrors, ParseMirrorList(config.registry_mirrors));
  settings.insecure = config.registry_insecure;
  settings.auth_file = config.registry_auth_file;
  if (settings.auth_file.empty()) return settings;
  // The engine reads the file for every pull; a broken one is found now, not at the first pull.
  // Messages name the file and the place, never its contents (it holds passwords).
  const std::string& file = settings.auth_file;
  auto text = ReadFile(file);
  if (!text.ok()) {
    return InvalidArgument("registry_auth_file " + file +
                           " cannot be read: " + text.status().message());
  }
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("registry_auth_file " + file + " is not JSON");
  auto auths = j.is_object() ? j.find("auths") : j.end();
  if (!j.is_object() || auths == j.end() || !auths->is_object()) {
    return InvalidArgument("registry_auth_file " + file +
                           " has no \"auths\" object (podman's and docker's auth.json format: "
                           "{\"auths\": {\"REGISTRY\": {\"auth\": \"base64(user:password)\"}}})");
  }
  for (const auto& [registry, entry] : auths->items()) {
    if (!entry.is_object()) {
      return InvalidArgument("registry_auth_file " + file + ": the entry for " + registry +
                             " is not an object");
    }
  }
  return settings;
}

std::string ConfigReference() {
  DaemonConfig defaults;
  std::ostringstream out;
  out << "| key | environment | default | meaning |\n|---|---|---|---|\n";
  for (const auto& f : Fields()) {
    out << "| `" << f.key << "` | `" << EnvName(f.key) << "` | `" << f.get(defaults) << "` | "
        << f.help << " |\n";
  }
  return out.str();
}

}  // namespace trainyard::daemon
