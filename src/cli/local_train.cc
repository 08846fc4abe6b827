// `local train`: one trainer in the foreground, or with --distributed a local cluster of them
// (gcloud's local_train.py, compat §9.3).
#include "local_train.h"

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "commands.h"
#include "job_builder.h"
#include "packaging.h"
#include "python_support.h"
#include "trainyard/cluster_env/cluster_env.h"

namespace trainyard::cli {

namespace fs = std::filesystem;
namespace cenv = cluster_env;
using ordered_json = nlohmann::ordered_json;

namespace {

// How long helpers get between SIGTERM and SIGKILL once the primary has exited.
constexpr std::chrono::milliseconds kHelperGrace{3000};

constexpr int64_t kMaxPort = 65535;

ordered_json JobEntry(const std::string& module, const std::vector<std::string>& args) {
  ordered_json job = ordered_json::object();
  job["job_name"] = module;
  job["args"] = args;
  return job;
}

std::string LocalAddress(int64_t port) { return "localhost:" + std::to_string(port); }

// gcloud's flags are argparse ints; an unset flag takes `fallback`.
Result<int64_t> ParseIntFlag(std::string_view flag, const std::optional<std::string>& text,
                             int64_t fallback) {
  if (!text) return fallback;
  int64_t v = 0;
  const char* end = text->data() + text->size();
  auto r = std::from_chars(text->data(), end, v);
  if (r.ec != std::errc() || r.ptr != end) {
    return InvalidArgument("argument " + std::string(flag) + ": invalid int value: '" + *text +
                           "'");
  }
  return v;
}

Status CheckCount(std::string_view flag, int64_t value) {
  if (value >= 0) return Status::Ok();
  return InvalidArgument(
      "argument " + std::string(flag) +
      ": Value must be greater than or equal to 0; received: " + std::to_string(value));
}

}  // namespace

std::string LocalTrainTfConfig(const std::string& module, const std::vector<std::string>& args) {
  ordered_json config = ordered_json::object();
  config["job"] = JobEntry(module, args);
  config["task"] = ordered_json::object();
  config["cluster"] = ordered_json::object();
  config["environment"] = "cloud";
  // Trainers only parse TF_CONFIG, but matching gcloud's json.dumps byte for byte keeps logs
  // and tests comparable.
  return cenv::Dump(config, cenv::JsonStyle::kPython);
}

Status ValidateDistributedLayout(const DistributedLayout& layout) {
  TRAINYARD_RETURN_IF_ERROR(CheckCount("--parameter-server-count", layout.parameter_servers));
  TRAINYARD_RETURN_IF_ERROR(CheckCount("--worker-count", layout.workers));
  TRAINYARD_RETURN_IF_ERROR(CheckCount("--evaluator-count", layout.evaluators));
  // Evaluators take no port, so nothing else bounds them: one process each on this machine.
  constexpr int64_t kMaxEvaluators = 1000;
  if (layout.evaluators > kMaxEvaluators) {
    return InvalidArgument(
        "argument --evaluator-count: at most " + std::to_string(kMaxEvaluators) +
        " evaluators can run locally; received: " + std::to_string(layout.evaluators));
  }
  if (layout.start_port < 1 || layout.start_port > kMaxPort) {
    return InvalidArgument("argument --start-port: Value must be between 1 and 65535; received: " +
                           std::to_string(layout.start_port));
  }
  // Compared without adding, so huge counts cannot overflow.
  int64_t room = kMaxPort - layout.start_port;
  if (layout.parameter_servers > room || layout.workers > room - layout.parameter_servers) {
    return InvalidArgument("argument --start-port: the cluster needs " +
                           std::to_string(layout.parameter_servers) + " + " +
                           std::to_string(layout.workers) + " + 1 consecutive ports from " +
                           std::to_string(layout.start_port) + ", which goes past port 65535");
  }
  return Status::Ok();
}

std::vector<LocalTask> DistributedLocalTasks(const std::string& module,
                                             const std::vector<std::string>& args,
                                             const DistributedLayout& layout) {
  const int64_t primary_port = layout.start_port;
  // The cluster in gcloud's port order: the primary, the parameter servers, the workers;
  // evaluators take no port and are not in it.
  std::vector<cenv::Task> cluster_tasks = {{"master", 0, LocalAddress(primary_port)}};
  for (int64_t i = 0; i < layout.parameter_servers; ++i) {
    cluster_tasks.push_back({"ps", i, LocalAddress(primary_port + 1 + i)});
  }
  for (int64_t i = 0; i < layout.workers; ++i) {
    cluster_tasks.push_back(
        {"worker", i, LocalAddress(primary_port + 1 + layout.parameter_servers + i)});
  }
  const ordered_json cluster =
      cenv::TfCluster(cluster_tasks, layout.primary, {layout.primary, "ps", "worker"});
  const ordered_json job = JobEntry(module, args);

  auto make = [&](const std::string& type, int64_t index) {
    const ordered_json config = cenv::TfConfig(job, {type, index, "", ""}, cluster);
    LocalTask t{type, index, {{"TF_CONFIG", cenv::Dump(config, cenv::JsonStyle::kPython)}}};
    // PyTorch's env:// rendezvous, by the service's rule; replicas outside the world get the
    // variables cleared (the user's shell may have set them).
    auto torch =
        cenv::TorchDistributedEnv(type == layout.primary, type == "worker" ? index : -1,
                                  layout.workers, "127.0.0.1", static_cast<int>(primary_port));
    if (torch.empty()) {
      for (const char* name : cenv::kTorchEnvNames) t.env.emplace_back(name, std::nullopt);
    } else {
      for (auto& [name, value] : torch) t.env.emplace_back(name, std::move(value));
    }
    return t;
  };

  std::vector<LocalTask> tasks;
  for (int64_t i = 0; i < layout.parameter_servers; ++i) tasks.push_back(make("ps", i));
  for (int64_t i = 0; i < layout.workers; ++i) tasks.push_back(make("worker", i));
  for (int64_t i = 0; i < layout.evaluators; ++i) tasks.push_back(make("evaluator", i));
  tasks.push_back(make(layout.primary, 0));
  return tasks;
}

std::string PrimaryTaskName(bool imported, std::string_view version_output, std::string* warning) {
  if (!imported) {
    *warning =
        "Cannot import tensorflow. Using \"chief\" for cluster setting. If this is not intended, "
        "check that tensorflow is installed for the Python in TRAINYARD_PYTHON (default "
        "/usr/bin/python3).";
    return "chief";
  }
  if (version_output.rfind("1.", 0) == 0) return "master";
  if (version_output.rfind("2.", 0) == 0) return "chief";
  std::string_view version = version_output.substr(0, version_output.find('\n'));
  *warning = "Unexpected tensorflow version " + std::string(version) +
             ", using the default primary node name, aka \"chief\" for cluster settings";
  return "chief";
}

std::string ProbePrimaryTaskName(const std::string& python, const std::string& cwd,
                                 std::string* warning) {
  // tf.__version__ rather than gcloud's tf.version.VERSION: the same answer where both exist,
  // and it exists in every 1.x.
  auto probe = RunCaptured({python, "-c", "import tensorflow as tf; print(tf.__version__)"}, cwd,
                           /*merge_stderr=*/false);
  bool imported = probe.ok() && probe->exit_code == 0;
  return PrimaryTaskName(imported, imported ? std::string_view(probe->output) : "", warning);
}

Result<std::string> InstallLocalPythonSupport() {
  std::string base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    base = std::string(home) + "/.cache";
  } else {
    return FailedPrecondition("neither XDG_CACHE_HOME nor HOME is set");
  }
  return daemon::InstallPythonSupport(base + "/trainyard/python");
}

int RunLocalTrain(const Invocation& inv, const LocalTrainArgs& a) {
  DistributedLayout layout;
  auto ps = ParseIntFlag("--parameter-server-count", a.parameter_server_count, 2);
  auto workers = ParseIntFlag("--worker-count", a.worker_count, 2);
  auto evaluators = ParseIntFlag("--evaluator-count", a.evaluator_count, 0);
  auto port = ParseIntFlag("--start-port", a.start_port, 27182);
  for (const auto* r : {&ps, &workers, &evaluators, &port}) {
    if (!r->ok()) return inv.Fail(r->status().message());
  }
  layout.parameter_servers = *ps;
  layout.workers = *workers;
  layout.evaluators = *evaluators;
  layout.start_port = *port;

  std::error_code ec;
  fs::path package = a.package_path ? fs::path(*a.package_path) : fs::current_path(ec);
  package = fs::absolute(package, ec).lexically_normal();
  if (!package.has_filename()) package = package.parent_path();
  if (!fs::is_directory(package, ec)) {
    return inv.Fail("--package-path [" + package.string() + "] is not a directory");
  }
  const std::string run_dir = package.parent_path().string();
  std::vector<std::string> args = inv.user_args;
  if (a.job_dir) {
    std::string dir = *a.job_dir;
    // The trainer runs in the package's parent: make a local job dir absolute first.
    if (!IsGcsUri(dir) && dir.find("://") == std::string::npos) {
      dir = fs::absolute(dir, ec).lexically_normal().string();
    }
    args.push_back("--job-dir");
    args.push_back(dir);
  }
  const std::string python = RuntimePython();
  std::vector<std::string> argv = {python, "-m", *a.module_name};
  argv.insert(argv.end(), args.begin(), args.end());

  // The `hypertune` module (cloudml-hypertune's API, compat §7), as the daemon gives every
  // replica: appended to PYTHONPATH, so an installed cloudml-hypertune still wins. Reports go
  // to $CLOUD_ML_HP_METRIC_FILE, else /tmp/hypertune/output.metrics, as with Google's library.
  std::optional<EnvChange> hypertune;
  {
    auto dir = InstallLocalPythonSupport();
    if (dir.ok()) {
      const char* old = std::getenv("PYTHONPATH");
      hypertune = EnvChange{
          "PYTHONPATH", (old != nullptr && *old != '\0') ? std::string(old) + ":" + *dir : *dir};
    } else {
      inv.Warn("the trainer will not find the hypertune module: " + dir.status().message());
    }
  }

  if (!a.distributed) {
    // gcloud warns about non-zero counts it was given and ignores (not about the defaults of
    // counts never given; it says nothing about --evaluator-count, which it ignores just the
    // same, nor about --start-port).
    const std::tuple<const char*, bool, int64_t> ignored[] = {
        {"--parameter-server-count", a.parameter_server_count.has_value(), *ps},
        {"--worker-count", a.worker_count.has_value(), *workers},
        {"--evaluator-count", a.evaluator_count.has_value(), *evaluators}};
    for (const auto& [flag, given, value] : ignored) {
      if (given && value != 0) {
        inv.Warn(std::string(flag) +
                 " is ignored if --distributed is not provided.\nDid you mean to run distributed "
                 "training?");
      }
    }
    inv.Out().flush();
    inv.Err().flush();
    std::cout.flush();
    std::cerr.flush();
    std::vector<std::pair<std::string, std::string>> env = {
        {"TF_CONFIG", LocalTrainTfConfig(*a.module_name, args)}};
    if (hypertune) env.emplace_back(hypertune->first, hypertune->second.value_or(""));
    Status s = ExecReplace(argv, run_dir, env);
    return inv.Fail(s.message());
  }

  Status valid = ValidateDistributedLayout(layout);
  if (!valid.ok()) return inv.Fail(valid.message());
  std::string warning;
  layout.primary = ProbePrimaryTaskName(python, run_dir, &warning);
  if (!warning.empty()) inv.Warn(warning);

  std::vector<ChildSpec> helpers;
  ChildSpec primary;
  for (LocalTask& task : DistributedLocalTasks(*a.module_name, args, layout)) {
    ChildSpec spec{argv, run_dir, std::move(task.env)};
    if (hypertune) spec.env.push_back(*hypertune);
    if (task.type == layout.primary) {
      primary = std::move(spec);
    } else {
      helpers.push_back(std::move(spec));
    }
  }
  inv.Out().flush();
  inv.Err().flush();
  std::cout.flush();
  std::cerr.flush();
  auto exit_code = RunWithHelpers(helpers, primary, kHelperGrace);
  if (!exit_code.ok()) return inv.Fail(exit_code.status().message());
  return *exit_code;
}

}  // namespace trainyard::cli
