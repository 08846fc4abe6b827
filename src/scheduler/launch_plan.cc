// The launch plan: what the model's cluster plan means on this daemon. A job's replicas and
// their demands, the checks of what the model cannot know (runtimes, packages, job dir, whether
// the backend could ever run it), and each replica's ReplicaSpec: runtime, packages, argv,
// container, limits, and the cluster environment from ty_cluster_env. A built-in algorithm's
// image (builtin_algorithms.h) is no container: its replicas run Trainyard's trainer module.
// Where the replica's files live is the executor's business: the spec leaves work_dir empty.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "scheduler_core.h"
#include "trainyard/cluster_env/cluster_env.h"
#include "trainyard/core/log.h"
#include "trainyard/core/util.h"
#include "trainyard/model/machine_types.h"
#include "trainyard/model/state_machine.h"
#include "trainyard/scheduler/builtin_algorithms.h"
#include "trainyard/scheduler/outcome.h"
#include "tuning_state.h"

namespace trainyard::scheduler {

using model::Job;
using model::JobState;
using nlohmann::json;

namespace {

bool ListMatches(const std::vector<std::string>& patterns, const std::string& value) {
  for (const auto& p : patterns) {
    if (p == "*" || p == value) return true;
    if (EndsWith(p, "*") && StartsWith(value, p.substr(0, p.size() - 1))) return true;
  }
  return false;
}

// `n` distinct ports free on this host right now. The kernel picks them; every socket stays
// bound until all are picked, so no port is handed out twice.
std::vector<int> PickFreePorts(size_t n) {
  std::vector<int> ports;
  std::vector<int> fds;
  for (size_t i = 0; i < n; ++i) {
    int port = 0;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = 0;
      socklen_t len = sizeof addr;
      if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
          ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
        port = ntohs(addr.sin_port);
      }
      fds.push_back(fd);
    }
    // Out of sockets: fall back to AI Platform's port, distinct per task.
    ports.push_back(port != 0 ? port : 2222 + static_cast<int>(i));
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

// Runtime 2.1 and later name the primary "chief" (compat §6.1); 1.x and unset say "master".
std::string PrimaryTaskName(const std::string& runtime_version) {
  if (runtime_version.empty()) return "master";
  auto parts = Split(runtime_version, '.');
  try {
    int major = std::stoi(parts[0]);
    int minor = parts.size() > 1 ? std::stoi(parts[1]) : 0;
    if (major > 2 || (major == 2 && minor >= 1)) return "chief";
  } catch (...) {
  }
  return "master";
}

// The ReplicaConfig of a task type, and where its fields are in the TrainingInput.
const model::ReplicaRoleSpec& RoleOf(const model::TrainingSpec& spec, const std::string& type) {
  if (type == "worker") return spec.worker;
  if (type == "ps") return spec.parameter_server;
  if (type == "evaluator") return spec.evaluator;
  return spec.master;
}

const char* ConfigFieldOf(const std::string& type) {
  if (type == "worker") return "workerConfig";
  if (type == "ps") return "parameterServerConfig";
  if (type == "evaluator") return "evaluatorConfig";
  return "masterConfig";
}

// The image a replica runs ("" = it runs the Python trainer): its own imageUri, else the
// master's (compat §2: every *Config.imageUri defaults to masterConfig.imageUri). A built-in
// algorithm's image is no container: every replica runs Trainyard's trainer for it.
const std::string& ImageOf(const model::TrainingSpec& spec, const std::string& type) {
  static const std::string kNone;
  if (FindBuiltInAlgorithm(spec.master.image_uri) != nullptr) return kNone;
  const std::string& own = RoleOf(spec, type).image_uri;
  return own.empty() ? spec.master.image_uri : own;
}

// A local job dir's path (absolute or file://), else the bucket store's file of a gs:// URI
// (which must exist); "" when there is none.
std::string LocalFileOf(const storage::BucketStore& buckets, const std::string& uri) {
  if (StartsWith(uri, "file://")) return uri.substr(7);
  if (StartsWith(uri, "/")) return uri;
  auto path = buckets.LocalPathForUri(uri);
  return path.ok() ? *path : "";
}

// A container name unique per replica that docker and podman accept ([a-z0-9_.-], starting
// with a letter).
// Unique per replica and per daemon: job ids are case-sensitive (names keep their case), and a
// short hash of the daemon's jobs dir keeps two daemons of one user apart (`run --replace`
// would otherwise remove the other's container).
// A short hash of the daemon's jobs dir: two daemons on one machine never share a container
// name or a cgroup (the launcher empties an existing cgroup before it uses it).
std::string DaemonTag(const std::string& jobs_dir) {
  char tag[9];
  std::snprintf(tag, sizeof tag, "%08x",
                static_cast<unsigned>(std::hash<std::string>{}(jobs_dir)&0xffffffffu));
  return tag;
}

std::string ContainerName(const executor::ReplicaKey& key, const std::string& jobs_dir) {
  std::string name = "trainyard-" + key.project + "-" + key.job_id +
                     (key.trial_id.empty() ? "" : "-" + key.trial_id) + "-" + key.TaskName() + "-" +
                     DaemonTag(jobs_dir);
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) c = '-';
  }
  return name;
}

}  // namespace
std::vector<SchedulerCore::Replica> SchedulerCore::PlanReplicas(const Job& job) {
  std::vector<Replica> out;
  for (const model::ReplicaGroup& g : model::PlanCluster(job.spec)) {
    for (int i = 0; i < g.count; ++i) {
      Replica r;
      r.key = executor::ReplicaKey{job.project, job.job_id, "", g.task_type, i};
      r.demand.cpu_millis = int64_t{g.vcpus} * 1000;
      r.demand.memory_bytes = g.memory_bytes;
      r.demand.gpus = g.gpu_count;
      if (g.gpu_count > 0) r.demand.gpu_type = g.gpu_type;
      r.ml_units_per_hour = g.ml_units_per_hour;
      out.push_back(std::move(r));
    }
  }
  return out;
}

JobDemand SchedulerCore::DemandOf(const std::vector<Replica>& replicas) {
  std::vector<ReplicaDemand> demands;
  demands.reserve(replicas.size());
  for (const auto& r : replicas) demands.push_back(r.demand);
  return JobDemand::Sum(demands);
}

const RuntimeOptions* SchedulerCore::FindRuntime(const model::TrainingSpec& spec) const {
  for (const auto& rt : options_.runtimes) {
    if (ListMatches(rt.runtime_versions, spec.runtime_version) &&
        ListMatches(rt.python_versions, spec.python_version))
      return &rt;
  }
  return nullptr;
}

const RuntimeOptions* SchedulerCore::RuntimeFor(const model::TrainingSpec& spec) const {
  if (const RuntimeOptions* rt = FindRuntime(spec); rt != nullptr) return rt;
  if (FindBuiltInAlgorithm(spec.master.image_uri) != nullptr && !options_.runtimes.empty()) {
    return &options_.runtimes.front();
  }
  return nullptr;
}

void SchedulerCore::AddBuiltInOutputLocked(const ActiveJob& aj, bool succeeded,
                                           nlohmann::ordered_json* out) const {
  const model::TrainingSpec& spec = aj.job.spec;
  const BuiltInAlgorithm* algo = FindBuiltInAlgorithm(spec.master.image_uri);
  if (algo == nullptr) return;
  // The versions the trainer recorded in <output>/artifacts/metadata.json (a small file; a
  // missing or odd one leaves the job's own).
  auto output_of = [&](const std::string& trial_id, bool with_model) {
    const std::string dir = BuiltInOutputDir(spec.job_dir, trial_id);
    std::string text;
    if (!spec.job_dir.empty()) {
      const std::string file = LocalFileOf(buckets_, dir + "/artifacts/metadata.json");
      struct stat st;
      if (!file.empty() && ::stat(file.c_str(), &st) == 0 && st.st_size < (64 << 20)) {
        if (auto t = ReadFile(file); t.ok()) text = std::move(*t);
      }
    }
    return BuiltInAlgorithmOutputJson(*algo, text, spec.runtime_version, spec.python_version,
                                      with_model ? dir + "/model" : "");
  };
  (*out)["isBuiltInAlgorithmJob"] = true;
  if (!aj.tuning) {
    (*out)["builtInAlgorithmOutput"] = output_of("", succeeded && !spec.job_dir.empty());
    return;
  }
  // A tuning job: each successful trial says what it ran; no modelPath (compat §4).
  auto trials = out->find("trials");
  if (trials == out->end() || !trials->is_array()) return;
  for (auto& t : *trials) {
    if (t.value("state", "") != "SUCCEEDED") continue;
    t["builtInAlgorithmOutput"] = output_of(t.value("trialId", ""), false);
  }
}

void SchedulerCore::SetBuiltInOutputLocked(ActiveJob& aj, bool succeeded) const {
  if (aj.tuning || FindBuiltInAlgorithm(aj.job.spec.master.image_uri) == nullptr) return;
  const std::string& text = aj.job.training_output_json;
  nlohmann::ordered_json out =
      nlohmann::ordered_json::parse(text.empty() ? "{}" : text, nullptr, false);
  if (!out.is_object()) out = nlohmann::ordered_json::object();
  AddBuiltInOutputLocked(aj, succeeded, &out);
  aj.job.training_output_json = out.dump(-1, ' ', false, json::error_handler_t::replace);
}

Status SchedulerCore::CheckRunnable(const Job& job) const {
  Status st = InvalidArgument("The job cannot run on this Trainyard");
  bool bad = false;
  const BuiltInAlgorithm* builtin = FindBuiltInAlgorithm(job.spec.master.image_uri);
  if (builtin != nullptr && job.spec.job_dir.empty()) {
    bad = true;
    st.AddViolation("trainingInput.jobDir",
                    "built-in algorithms write their model to <job-dir>/model: a job directory "
                    "is required (--job-dir)");
  }
  if ((job.spec.master.image_uri.empty() || builtin != nullptr) &&
      RuntimeFor(job.spec) == nullptr) {
    bad = true;
    st.AddViolation("trainingInput.runtimeVersion",
                    "no configured runtime serves runtimeVersion \"" + job.spec.runtime_version +
                        "\" with pythonVersion \"" + job.spec.python_version + "\"");
  }
  const auto replicas = PlanReplicas(job);
  if (options_.container_engine.empty()) {
    for (const auto& r : replicas) {
      const std::string& type = r.key.task_type;
      if (ImageOf(job.spec, type).empty()) continue;
      // The field the image came from: the role's own imageUri or the master's it inherits.
      const char* config =
          RoleOf(job.spec, type).image_uri.empty() ? "masterConfig" : ConfigFieldOf(type);
      bad = true;
      st.AddViolation(std::string("trainingInput.") + config + ".imageUri",
                      "custom containers need podman or docker on this machine (setting "
                      "container_engine)");
      break;
    }
  }
  // Where each image would be pulled from: a registry_mirrors rule may map it to no valid
  // reference (e.g. a whole repository onto a bare registry).
  for (const auto& r : replicas) {
    const std::string& type = r.key.task_type;
    const std::string& image = ImageOf(job.spec, type);
    if (image.empty()) continue;
    if (auto plan = registry::PlanPull(options_.registry, image); !plan.ok()) {
      const char* config =
          RoleOf(job.spec, type).image_uri.empty() ? "masterConfig" : ConfigFieldOf(type);
      bad = true;
      st.AddViolation(std::string("trainingInput.") + config + ".imageUri",
                      plan.status().message());
      break;
    }
  }
  for (size_t i = 0; i < job.spec.package_uris.size(); ++i) {
    const auto& uri = job.spec.package_uris[i];
    auto path = buckets_.LocalPathForUri(uri);
    std::string field = "trainingInput.packageUris[" + std::to_string(i) + "]";
    if (!path.ok()) {
      bad = true;
      st.AddViolation(field, path.status().message());
    } else if (::access(path->c_str(), R_OK) != 0) {
      bad = true;
      st.AddViolation(field, "package " + uri + " does not exist");
    }
  }
  if (!job.spec.job_dir.empty()) {
    Status jd = buckets_.ValidateJobDir(job.spec.job_dir);
    if (!jd.ok()) {
      bad = true;
      st.AddViolation("trainingInput.jobDir", jd.message());
    }
  }
  // A job that could never fit on this node is refused now rather than queued forever.
  const JobDemand demand = DemandOf(replicas);
  if (std::string never = admission_->NeverFits(demand); !never.empty()) {
    bad = true;
    std::string field = "trainingInput.scaleTier";
    const auto& spec = job.spec;
    const bool wants_gpus = demand.gpus > 0;
    struct RoleField {
      const model::ReplicaRoleSpec* role;
      const char* type;
      const char* config;
      const char* count;
    };
    const RoleField roles[] = {
        {&spec.master, "masterType", "masterConfig", nullptr},
        {&spec.worker, "workerType", "workerConfig", "workerCount"},
        {&spec.parameter_server, "parameterServerType", "parameterServerConfig",
         "parameterServerCount"},
        {&spec.evaluator, "evaluatorType", "evaluatorConfig", "evaluatorCount"}};
    if (spec.scale_tier == "CUSTOM") {
      field = "trainingInput.masterType";
      for (const auto& rf : roles) {
        if (wants_gpus) {
          if (rf.role->accelerator.count > 0) {
            field = std::string("trainingInput.") + rf.config + ".acceleratorConfig.count";
            break;
          }
          const auto* mt = model::FindMachineType(rf.role->machine_type);
          if (mt != nullptr && mt->gpu_count > 0) {
            field = std::string("trainingInput.") + rf.type;
            break;
          }
        } else if (rf.count != nullptr && rf.role->count > 0) {
          field = std::string("trainingInput.") + rf.count;  // the largest lever
          break;
        }
      }
    }
    st.AddViolation(field, "the job can never run on this Trainyard: " + never);
  }
  if (job.spec.has_hyperparameters) {
    const json ti = json::parse(job.training_input_json, nullptr, false);
    const json hp = ti.is_object() ? ti.value("hyperparameters", json::object()) : json::object();
    const std::string resume = hp.value("resumePreviousJobId", "");
    if (!resume.empty()) {
      const std::string field = "trainingInput.hyperparameters.resumePreviousJobId";
      auto prev = store_.GetJob(job.project, resume);
      std::string why;
      if (!prev.ok()) {
        why = prev.status().code() == StatusCode::kNotFound
                  ? "job \"" + resume + "\" does not exist in project " + job.project
                  : prev.status().message();
      } else if (!prev->spec.has_hyperparameters) {
        why = "job \"" + resume + "\" is not a hyperparameter tuning job";
      } else if (!model::IsTerminal(prev->state)) {
        why = "job \"" + resume + "\" is still " + model::JobStateName(prev->state) +
              "; its study can be resumed once it has ended";
      } else {
        // The same search space: the same parameters, in name and type.
        const json pti = json::parse(prev->training_input_json, nullptr, false);
        auto shape = [](const json& t) {
          std::map<std::string, std::string> m;
          if (!t.is_object() || !t.contains("hyperparameters")) return m;
          for (const auto& p : t["hyperparameters"].value("params", json::array())) {
            m[p.value("parameterName", "")] = p.value("type", "");
          }
          return m;
        };
        if (shape(pti) != shape(ti)) {
          why = "job \"" + resume +
                "\" tuned other parameters; a resumed study must list the same parameterName "
                "and type for every parameter";
        }
      }
      if (!why.empty()) {
        bad = true;
        st.AddViolation(field, why);
      }
    }
  }
  if (!bad) return Status::Ok();
  if (st.violations().size() == 1) {
    return Status(StatusCode::kInvalidArgument,
                  st.violations()[0].field + ": " + st.violations()[0].description)
        .AddViolation(st.violations()[0].field, st.violations()[0].description);
  }
  return st;
}

// The replica that could not start fails its run (the job, or the trial); the ones already
// started are stopped, and the run is finished only once they are gone.
void SchedulerCore::MarkLaunchFailedLocked(ActiveJob& aj, const std::string& trial_id,
                                           const Status& st) {
  bool first = true;
  for (auto& r : aj.replicas) {
    if (r.launched || r.exited || r.key.trial_id != trial_id) continue;
    r.exited = true;
    r.exit.phase = "launch";
    if (first) {
      r.exit.exit_code = 1;
      r.exit.message = st.message();
      first = false;
    } else {
      r.exit.killed_by_request = true;  // never started: not a failure of its own
    }
  }
}

Status SchedulerCore::LaunchLocked(ActiveJob& aj, const std::string& trial_id) {
  const Job& job = aj.job;
  // The run to launch: the job's replicas, or one trial's (each trial is its own cluster).
  std::vector<Replica*> run;
  for (auto& r : aj.replicas) {
    if (!r.launched && !r.exited && r.key.trial_id == trial_id) run.push_back(&r);
  }
  if (run.empty()) return Status::Ok();
  const TrialRun* trial = nullptr;
  if (!trial_id.empty() && aj.tuning) {
    auto t = aj.tuning->trials.find(std::stoll(trial_id));
    if (t != aj.tuning->trials.end()) trial = &t->second;
  }
  // Replicas with an image run in a container (custom-container job, compat §2); the others
  // run the Python trainer under a configured runtime.
  std::vector<std::string> images;
  bool any_python = false;
  bool any_container = false;
  for (const Replica* r : run) {
    images.push_back(ImageOf(job.spec, r->key.task_type));
    (images.back().empty() ? any_python : any_container) = true;
  }
  const RuntimeOptions* rt = nullptr;
  const BuiltInAlgorithm* builtin = FindBuiltInAlgorithm(job.spec.master.image_uri);
  if (any_python) {
    rt = RuntimeFor(job.spec);
    if (rt == nullptr) return FailedPrecondition("no configured runtime serves this job");
  }
  if (any_container && options_.container_engine.empty()) {
    return FailedPrecondition(
        "custom containers need podman or docker on this machine (setting container_engine)");
  }
  // One cluster for the whole run, identical on every replica (compat §6.1): every replica
  // with a port free on this host. The port stays the replica's own across restarts (the spec
  // is reused). Custom containers name the primary "master" unless the job asks for "chief"
  // (useChiefInTfConfig); the runtime version decides for the others.
  cluster_env::RunPlan plan;
  plan.primary = any_container ? (job.spec.use_chief_in_tf_config ? "chief" : "master")
                               : PrimaryTaskName(job.spec.runtime_version);
  const std::vector<int> ports = PickFreePorts(run.size());
  for (size_t i = 0; i < run.size(); ++i) {
    plan.tasks.push_back(
        {run[i]->key.task_type, run[i]->key.index, "127.0.0.1:" + std::to_string(ports[i])});
  }
  plan.project = job.project;
  plan.job_id = job.job_id;
  plan.trial_id = trial_id;
  if (trial != nullptr) plan.metric_tag = aj.tuning->metric_tag;
  plan.training_input =
      json::parse(job.training_input_json.empty() ? "{}" : job.training_input_json, nullptr, false);
  executor::GangSpec gang;
  gang.run_plan_json = cluster_env::RunPlanToJson(plan);
  gang.labels = job.labels;
  gang.max_running_time =
      job.spec.scheduling.max_running_time.value_or(options_.default_max_running_time);
  const cluster_env::RunEnvironment run_env(std::move(plan));
  std::vector<std::string> packages;
  for (const auto& uri : job.spec.package_uris) {
    TRAINYARD_ASSIGN_OR_RETURN(auto path, buckets_.LocalPathForUri(uri));
    packages.push_back(path);
  }
  // The trainer's argv (compat §6.4): TrainingInput.args, then --job-dir DIR.
  std::vector<std::string> trainer_args = job.spec.args;
  if (!job.spec.job_dir.empty()) {
    trainer_args.push_back("--job-dir");
    trainer_args.push_back(job.spec.job_dir);
  }
  // A trial's parameters follow (compat §6.4, Appendix C): --<parameterName>=<value>, the
  // value as trainingOutput prints it. They follow containerArgs too.
  std::vector<std::string> trial_args;
  if (trial != nullptr) {
    for (const auto& [name, value] : trial->hyperparameters) {
      trial_args.push_back("--" + name + "=" + value);
    }
  }
  trainer_args.insert(trainer_args.end(), trial_args.begin(), trial_args.end());
  // The hypertune module Trainyard ships, after whatever the daemon's own PYTHONPATH says. It
  // comes before site-packages, so it also stands in for a cloudml-hypertune the trainer's
  // packages install: both write the same file format (compat §7).
  std::string python_path;
  if (const char* pp = std::getenv("PYTHONPATH"); pp != nullptr && *pp != '\0') python_path = pp;
  if (!options_.python_support_dir.empty()) {
    python_path += (python_path.empty() ? "" : ":") + options_.python_support_dir;
  }
  std::vector<executor::ReplicaSpec> specs;
  specs.reserve(run.size());
  for (size_t i = 0; i < run.size(); ++i) {
    Replica& r = *run[i];
    const bool in_container = !images[i].empty();
    executor::ReplicaSpec spec;
    spec.key = r.key;
    spec.attempt = r.restarts;
    if (!in_container) {
      spec.python = rt->python;
      spec.packages = packages;
      spec.package_uris = job.spec.package_uris;
      spec.python_module = builtin != nullptr ? builtin->module : job.spec.python_module;
      spec.args = trainer_args;
      if (!python_path.empty()) spec.env["PYTHONPATH"] = python_path;
    }
    spec.env.merge(run_env.ForTask(i, r.gpus, in_container));
    // A trial's replica gets a metric file of its own from the executor (compat §6.3), whose
    // records come back through OnReplicaMetrics.
    if (trial != nullptr) spec.metric_tag = aj.tuning->metric_tag;
    if (!storage_endpoint_.empty()) {
      spec.env["STORAGE_EMULATOR_HOST"] = storage_endpoint_;
      if (options_.job_credential) {
        spec.env["TRAINYARD_JOB_TOKEN"] = options_.job_credential(job.project, job.job_id);
      }
    }
    spec.env["TRAINYARD_BUCKETS_DIR"] = buckets_.root();
    spec.env_cache_dir = options_.env_cache_dir;
    spec.pip_index_url = options_.pip_index_url;
    spec.pip_find_links = options_.pip_find_links;
    if (in_container) {
      const model::ReplicaRoleSpec& role = RoleOf(job.spec, r.key.task_type);
      executor::ContainerSpec& c = spec.container;
      c.engine = options_.container_engine;
      c.engine_env = options_.container_engine_env;
      c.image = images[i];
      // Docker semantics (compat §2 ReplicaConfig): containerCommand replaces the ENTRYPOINT;
      // containerArgs, else TrainingInput.args, go after it. Both are per replica role.
      if (!role.container_command.empty()) c.entrypoint = role.container_command;
      c.args = !role.container_args.empty() ? role.container_args : trainer_args;
      if (!role.container_args.empty()) {
        c.args.insert(c.args.end(), trial_args.begin(), trial_args.end());
      }
      c.name = ContainerName(r.key, options_.jobs_dir);
      // How the image gets to the machine (CheckRunnable refused images with no plan).
      if (auto pull_plan = registry::PlanPull(options_.registry, c.image); pull_plan.ok()) {
        c.pull.policy = registry::PullPolicyName(options_.registry.policy);
        c.pull.reference = pull_plan->reference;
        c.pull.registry = pull_plan->registry;
        c.pull.mirror = pull_plan->mirror;
        c.pull.tls_verify = pull_plan->tls_verify;
        c.pull.auth_file = options_.registry.auth_file;
        // One pull per job and machine with "always" (a restarted replica does not pull again).
        c.pull.token = job.project + "/" + job.job_id + "@" + std::to_string(job.create_time) +
                       "." + DaemonTag(options_.jobs_dir);
      } else {
        c.pull.policy = "never";
      }
      // The bucket directory at the same path, so TRAINYARD_BUCKETS_DIR works inside.
      c.mounts.push_back(buckets_.root() + ":" + buckets_.root());
      for (int g : r.gpus) c.devices.push_back("/dev/nvidia" + std::to_string(g));
      if (!r.gpus.empty()) {
        for (const char* dev : {"/dev/nvidiactl", "/dev/nvidia-uvm"}) {
          if (::access(dev, F_OK) == 0) c.devices.push_back(dev);
        }
      }
      // The engine makes the container's cgroup from --memory/--cpus; the launcher makes none.
      if (options_.container_limits) {
        spec.limits.memory_bytes = r.demand.memory_bytes;
        spec.limits.cpu_millis = r.demand.cpu_millis;
      }
    } else if (!options_.cgroup_root.empty()) {
      spec.cgroup_root = options_.cgroup_root;
      spec.cgroup_name = "trainyard/" + job.project + "." + job.job_id +
                         (r.key.trial_id.empty() ? "" : ".trial-" + r.key.trial_id) + "." +
                         r.key.TaskName() + "." + DaemonTag(options_.jobs_dir);
      spec.limits.memory_bytes = r.demand.memory_bytes;
      spec.limits.cpu_millis = r.demand.cpu_millis;
    }
    gang.shapes.push_back(
        {r.demand.cpu_millis, r.demand.memory_bytes, r.demand.gpus, r.demand.gpu_type});
    specs.push_back(std::move(spec));
  }
  // One call for the whole run: a cluster backend makes one allocation for the gang.
  size_t launched = 0;
  Status st = executor_.LaunchGang(specs, gang, &launched);
  for (size_t i = 0; i < run.size(); ++i) {
    if (!st.ok() && i >= launched) break;
    run[i]->spec = std::move(specs[i]);
    run[i]->has_spec = true;
    run[i]->launched = true;
  }
  if (!st.ok()) return st;
  // A built-in algorithm's job says so from its start (compat §4).
  if (trial_id.empty()) SetBuiltInOutputLocked(aj, false);
  return Status::Ok();
}

}  // namespace trainyard::scheduler
