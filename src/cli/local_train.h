// `local train` (gcloud's `ai-platform local train`, compat §9.3): the TF_CONFIG and the other
// variables each trainer process gets, kept apart from running the processes so they can be
// tested without Python.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "process.h"
#include "trainyard/core/status.h"

namespace trainyard::cli {

// The TF_CONFIG `local train` sets without --distributed: json.dumps of gcloud's dict, key
// order kept:
// {"job": {"job_name": M, "args": [...]}, "task": {}, "cluster": {}, "environment": "cloud"}.
std::string LocalTrainTfConfig(const std::string& module, const std::vector<std::string>& args);

// The cluster `local train --distributed` runs; defaults are gcloud's.
struct DistributedLayout {
  int64_t parameter_servers = 2;
  int64_t workers = 2;
  int64_t evaluators = 0;
  int64_t start_port = 27182;
  std::string primary = "chief";  // the primary's task type: "master" or "chief"
};

// INVALID_ARGUMENT, naming the flag, when a count is negative or a port of
// start_port .. start_port + parameter_servers + workers is outside 1..65535.
Status ValidateDistributedLayout(const DistributedLayout& layout);

// Writes the `hypertune` module (the files the daemon gives every Python replica) under
// $XDG_CACHE_HOME/trainyard/python (else ~/.cache/...) and returns that directory.
Result<std::string> InstallLocalPythonSupport();

// One process of a distributed local run.
struct LocalTask {
  std::string type;  // layout.primary, "ps", "worker" or "evaluator"
  int64_t index = 0;
  std::vector<EnvChange> env;
};

// The processes of a distributed run, in gcloud's start order: parameter servers, workers,
// evaluators, and the primary last. Ports are start_port for the primary, then one per
// parameter server, then one per worker; the cluster
// {PRIMARY: ["localhost:P0"], "ps": [...], "worker": [...]} never lists evaluators. Each
// process gets TF_CONFIG {"job": {"job_name", "args"}, "task": {"type", "index"}, "cluster",
// "environment": "cloud"}. The primary and the workers also get PyTorch's env:// variables:
// MASTER_ADDR=127.0.0.1, MASTER_PORT=P0, WORLD_SIZE=1+workers, RANK (primary 0, worker i
// i+1) and LOCAL_RANK=0; parameter servers and evaluators get those five removed, so values
// inherited from the shell cannot pull them into the process group. Expects a valid layout.
std::vector<LocalTask> DistributedLocalTasks(const std::string& module,
                                             const std::vector<std::string>& args,
                                             const DistributedLayout& layout);

// gcloud's choice of the primary's name from the output of
// `python -c "import tensorflow as tf; print(tf.__version__)"`: "master" for TensorFlow 1.x,
// "chief" for 2.x, and "chief" with a warning in `*warning` when TensorFlow could not be
// imported (`imported` false) or its version is neither.
std::string PrimaryTaskName(bool imported, std::string_view version_output, std::string* warning);

// Runs the probe above with `python` in `cwd` (where the trainer will run) and applies
// PrimaryTaskName. A Python that cannot be started counts as TensorFlow not importable.
std::string ProbePrimaryTaskName(const std::string& python, const std::string& cwd,
                                 std::string* warning);

}  // namespace trainyard::cli
