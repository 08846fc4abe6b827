#include "job_validate.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "trainyard/core/time.h"
#include "trainyard/model/machine_types.h"
#include "trainyard/registry/image_reference.h"
#include "trainyard/tuning/study.h"

namespace trainyard::model::internal {
namespace {

using nlohmann::json;

// ---- Reading a normalised message (absent == proto3 default) -----------------------------------

const json* Get(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string Str(const json& obj, std::string_view key) {
  const json* v = Get(obj, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

int64_t Int(const json& obj, std::string_view key) {
  const json* v = Get(obj, key);
  return v != nullptr && v->is_number_integer() ? v->get<int64_t>() : 0;
}

bool Bool(const json& obj, std::string_view key) {
  const json* v = Get(obj, key);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

size_t Len(const json& obj, std::string_view key) {
  const json* v = Get(obj, key);
  return v != nullptr && v->is_array() ? v->size() : 0;
}

const json& Msg(const json& obj, std::string_view key) {
  static const json kEmpty = json::object();
  const json* v = Get(obj, key);
  return v != nullptr && v->is_object() ? *v : kEmpty;
}

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

// Shortest readable text of a double for messages ("0", "1e-05", "0.5").
std::string Num(double d) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

class Checker {
 public:
  explicit Checker(Violations* out) : out_(out) {}
  void Invalid(std::string field, std::string description) {
    out_->invalid.push_back({std::move(field), std::move(description)});
  }
  void Unimplemented(std::string field, std::string description) {
    out_->unimplemented.push_back({std::move(field), std::move(description)});
  }

 private:
  Violations* out_;
};

// ---- Machine types (compat §8.2, §8.3): the catalog in machine_types.cc
// --------------------------

constexpr std::string_view kCloudTpu = "cloud_tpu";

bool IsComputeEngineMachineType(std::string_view t) {
  const MachineType* m = FindMachineType(t);
  return m != nullptr && !m->legacy;
}

// ---- Versions (compat §13.2) --------------------------------------------------------------------

struct Version {
  int major = 0;
  int minor = 0;
  bool operator<(const Version& o) const {
    return major != o.major ? major < o.major : minor < o.minor;
  }
  bool operator<=(const Version& o) const { return !(o < *this); }
};

// "MAJOR.MINOR" with decimal parts.
bool ParseVersion(std::string_view s, Version* v) {
  size_t dot = s.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == s.size()) return false;
  auto parse = [](std::string_view p, int* out) {
    if (p.size() > 4) return false;
    for (char c : p) {
      if (c < '0' || c > '9') return false;
    }
    auto r = std::from_chars(p.data(), p.data() + p.size(), *out);
    return r.ec == std::errc();
  };
  return parse(s.substr(0, dot), &v->major) && parse(s.substr(dot + 1), &v->minor);
}

// Which runtime versions a Python version runs with. AI Platform's published pairs are
//   2.7 with runtime <= 1.15,  3.5 with runtime 1.4-1.14,  3.7 with runtime >= 1.15;
// Trainyard additionally accepts modern Python 3.8 and later with runtime 2.1 or later (the first
// runtime without Python 2.7). Any other Python version is refused. Returns "" when `python` is
// a known version and compatible with `runtime` (or `runtime` is null); otherwise the reason.
std::string CheckPythonForRuntime(const Version& py, const Version* runtime,
                                  const std::string& py_text, const std::string& rt_text) {
  bool known = (py.major == 2 && py.minor == 7) || (py.major == 3 && py.minor == 5) ||
               (py.major == 3 && py.minor >= 7);
  if (!known) {
    return "pythonVersion " + Quote(py_text) +
           " is not supported; use 2.7, 3.5, 3.7 or a Python 3 release from 3.8 on";
  }
  if (runtime == nullptr) return "";
  bool ok = false;
  if (py.major == 2) {
    ok = *runtime <= Version{1, 15};
  } else if (py.minor == 5) {
    ok = Version{1, 4} <= *runtime && *runtime <= Version{1, 14};
  } else if (py.minor == 7) {
    ok = Version{1, 15} <= *runtime;
  } else {
    ok = Version{2, 1} <= *runtime;
  }
  if (ok) return "";
  return "The specified runtime version " + Quote(rt_text) + " with the Python version " +
         Quote(py_text) + " is not supported or is deprecated";
}

// ---- Replicas -----------------------------------------------------------------------------------

struct ReplicaKeys {
  std::string_view name;        // "master", used in messages
  std::string_view type_key;    // "masterType"
  std::string_view config_key;  // "masterConfig"
  std::string_view count_key;   // "" for the master
};

constexpr ReplicaKeys kReplicas[] = {
    {"master", "masterType", "masterConfig", ""},
    {"worker", "workerType", "workerConfig", "workerCount"},
    {"parameter server", "parameterServerType", "parameterServerConfig", "parameterServerCount"},
    {"evaluator", "evaluatorType", "evaluatorConfig", "evaluatorCount"},
};

// Bounds that keep a plan finite (a Compute Engine VM has at most 16 GPUs; 1000 replicas of
// one role is far beyond what one Trainyard runs, and AI Platform's quotas were lower).
constexpr int64_t kMaxReplicasPerRole = 1000;
constexpr int64_t kMaxAcceleratorsPerReplica = 16;

constexpr std::string_view kNoMultiReplica = "Trainyard does not run multi-replica jobs yet";
constexpr std::string_view kNoGpus = "Trainyard does not run GPU jobs yet";
constexpr std::string_view kNoContainers = "Trainyard does not run custom-container jobs yet";
constexpr std::string_view kNoTpus = "Trainyard has no Cloud TPUs";

void CheckMachineTypes(const json& ti, const std::string& tier, const Capabilities& caps,
                       Checker* c) {
  const bool custom = tier == "CUSTOM";
  const std::string master_type = Str(ti, "masterType");
  if (custom && master_type.empty()) {
    c->Invalid("trainingInput.masterType", "masterType is required when scaleTier is CUSTOM");
  }
  for (const ReplicaKeys& r : kReplicas) {
    const std::string field = "trainingInput." + std::string(r.type_key);
    const std::string type = Str(ti, r.type_key);
    if (!r.count_key.empty()) {
      const std::string count_field = "trainingInput." + std::string(r.count_key);
      int64_t count = Int(ti, r.count_key);
      if (count < 0) {
        c->Invalid(count_field, std::string(r.count_key) + " must not be negative");
      } else if (count > kMaxReplicasPerRole) {
        c->Invalid(count_field, std::string(r.count_key) + " is " + std::to_string(count) +
                                    "; at most " + std::to_string(kMaxReplicasPerRole) +
                                    " replicas of one role are allowed");
      } else if (count > 0) {
        if (!custom) {
          c->Invalid(count_field,
                     std::string(r.count_key) + " may only be set when scaleTier is CUSTOM");
        } else if (type.empty()) {
          c->Invalid(field, std::string(r.type_key) + " is required when " +
                                std::string(r.count_key) + " is greater than 0");
        }
        if (!caps.multi_replica) {
          c->Unimplemented(count_field, std::string(r.count_key) + " is " + std::to_string(count) +
                                            ": " + std::string(kNoMultiReplica));
        }
      }
    }
    if (type.empty()) continue;
    if (!custom) {
      c->Invalid(field, std::string(r.type_key) + " may only be set when scaleTier is CUSTOM");
      continue;
    }
    if (type == kCloudTpu) {
      c->Invalid(field, "machine type cloud_tpu is not available: " + std::string(kNoTpus));
      continue;
    }
    const MachineType* machine = FindMachineType(type);
    if (machine == nullptr) {
      c->Invalid(field, "unknown machine type " + Quote(type) +
                            "; use a legacy machine type such as \"standard\" or "
                            "\"complex_model_m\", or a Compute Engine machine type such as "
                            "\"n1-standard-8\"");
      continue;
    }
    // The master is the reference category; an unknown masterType has its own violation.
    const MachineType* master = FindMachineType(master_type);
    if (!r.count_key.empty() && master != nullptr && machine->legacy != master->legacy) {
      c->Invalid(field, std::string(r.type_key) + " " + Quote(type) + " is a " +
                            (machine->legacy ? "legacy" : "Compute Engine") +
                            " machine type but masterType " + Quote(master_type) +
                            " is not; all replicas must use the same category");
    }
    if (machine->gpu_count > 0 && !caps.gpus) {
      c->Unimplemented(field, "machine type " + Quote(type) + " has GPUs: " + std::string(kNoGpus));
    }
  }
}

void CheckReplicaConfigs(const json& ti, const std::string& tier, const Capabilities& caps,
                         Checker* c) {
  const bool custom = tier == "CUSTOM";
  const std::string master_image = Str(Msg(ti, "masterConfig"), "imageUri");
  const bool has_args = Len(ti, "args") > 0;
  for (const ReplicaKeys& r : kReplicas) {
    const json* cfg = Get(ti, r.config_key);
    if (cfg == nullptr) continue;
    const std::string base = "trainingInput." + std::string(r.config_key);
    // Machine type this replica runs on: masterType under CUSTOM, the tier's legacy type else.
    const std::string type = custom ? Str(ti, r.type_key) : std::string();
    if (const json* acc = Get(*cfg, "acceleratorConfig")) {
      const std::string field = base + ".acceleratorConfig";
      if (!custom || type.empty() || !IsComputeEngineMachineType(type)) {
        std::string what = type.empty() ? std::string(r.type_key) + " is not set"
                                        : std::string(r.type_key) + " is " + Quote(type);
        if (!custom) what = "scaleTier " + tier + " uses legacy machine types";
        c->Invalid(field, "acceleratorConfig is only allowed with Compute Engine machine types (" +
                              what + ")");
      } else if (const MachineType* m = FindMachineType(type); m != nullptr && m->gpu_count > 0) {
        c->Invalid(field, "machine type " + Quote(type) + " comes with " +
                              std::to_string(m->gpu_count) + " " + std::string(m->gpu_type) +
                              " GPU(s) of its own; acceleratorConfig cannot be added to it");
      }
      const std::string acc_type = Str(*acc, "type");
      const int64_t count = Int(*acc, "count");
      bool tpu = acc_type.rfind("TPU_", 0) == 0;
      if (acc_type.empty() || acc_type == "ACCELERATOR_TYPE_UNSPECIFIED") {
        c->Invalid(field + ".type", "acceleratorConfig.type is required");
      } else if (tpu) {
        c->Invalid(field + ".type",
                   "accelerator type " + acc_type + " is not available: " + std::string(kNoTpus));
      }
      if (count <= 0) {
        c->Invalid(field + ".count", "The count of the accelerator must be greater than 0");
      } else if (count > kMaxAcceleratorsPerReplica) {
        c->Invalid(field + ".count", "The count of the accelerator must be at most " +
                                         std::to_string(kMaxAcceleratorsPerReplica));
      }
      if (!caps.gpus && !tpu) {
        c->Unimplemented(field, "acceleratorConfig asks for GPUs: " + std::string(kNoGpus));
      }
    }
    const std::string image = Str(*cfg, "imageUri");
    // An image reference as container engines take it (never starting with '-', so it
    // cannot be read as an engine flag).
    if (auto ref = registry::ParseImageReference(image); !image.empty() && !ref.ok()) {
      c->Invalid(base + ".imageUri", "imageUri " + Quote(image) +
                                         " is not an image reference such as "
                                         "gcr.io/project/trainer:1 or localhost/trainer@sha256:"
                                         "...: " +
                                         ref.status().message());
    }
    const std::string effective_image = image.empty() ? master_image : image;
    const bool has_command = Len(*cfg, "containerCommand") > 0;
    const bool has_cargs = Len(*cfg, "containerArgs") > 0;
    if (!caps.containers) {
      if (!image.empty()) c->Unimplemented(base + ".imageUri", std::string(kNoContainers));
      if (has_command) c->Unimplemented(base + ".containerCommand", std::string(kNoContainers));
      if (has_cargs) c->Unimplemented(base + ".containerArgs", std::string(kNoContainers));
    }
    for (std::string_view key : {"containerCommand", "containerArgs"}) {
      if (Len(*cfg, key) == 0) continue;
      if (effective_image.empty()) {
        c->Invalid(base + "." + std::string(key),
                   std::string(key) + " is only allowed with a custom container (imageUri)");
      }
      if (has_args) {
        c->Invalid("trainingInput.args", "args cannot be combined with " +
                                             std::string(r.config_key) + "." + std::string(key) +
                                             "; put the arguments in containerArgs");
      }
    }
    if (!Str(*cfg, "tpuTfVersion").empty()) {
      c->Invalid(base + ".tpuTfVersion",
                 "tpuTfVersion is only for Cloud TPU workers: " + std::string(kNoTpus));
    }
    if (const json* disk = Get(*cfg, "diskConfig")) {
      const std::string disk_type = Str(*disk, "bootDiskType");
      if (!disk_type.empty() && disk_type != "pd-ssd" && disk_type != "pd-standard") {
        c->Invalid(base + ".diskConfig.bootDiskType",
                   "bootDiskType must be \"pd-ssd\" or \"pd-standard\", got " + Quote(disk_type));
      }
      if (Int(*disk, "bootDiskSizeGb") < 0) {
        c->Invalid(base + ".diskConfig.bootDiskSizeGb", "bootDiskSizeGb must not be negative");
      }
    }
  }
}

void CheckVersions(const json& ti, Checker* c) {
  const std::string runtime = Str(ti, "runtimeVersion");
  const std::string python = Str(ti, "pythonVersion");
  const std::string image = Str(Msg(ti, "masterConfig"), "imageUri");
  if (!runtime.empty() && !image.empty()) {
    c->Invalid("trainingInput.runtimeVersion",
               "only one of runtimeVersion and masterConfig.imageUri may be set");
  }
  Version rt, py;
  bool rt_ok = false;
  if (!runtime.empty()) {
    rt_ok = ParseVersion(runtime, &rt);
    if (!rt_ok) {
      c->Invalid("trainingInput.runtimeVersion",
                 "runtimeVersion must be MAJOR.MINOR, e.g. \"2.11\", got " + Quote(runtime));
    }
  }
  if (!python.empty()) {
    if (!ParseVersion(python, &py)) {
      c->Invalid("trainingInput.pythonVersion",
                 "pythonVersion must be MAJOR.MINOR, e.g. \"3.7\", got " + Quote(python));
      return;
    }
    std::string why = CheckPythonForRuntime(py, rt_ok ? &rt : nullptr, python, runtime);
    if (!why.empty()) c->Invalid("trainingInput.pythonVersion", why);
  }
}

void CheckPackages(const json& ti, Checker* c) {
  const bool container = !Str(Msg(ti, "masterConfig"), "imageUri").empty();
  const size_t packages = Len(ti, "packageUris");
  if (packages > 100) {
    c->Invalid("trainingInput.packageUris",
               "at most 100 packageUris are allowed, got " + std::to_string(packages));
  }
  if (const json* uris = Get(ti, "packageUris")) {
    for (size_t i = 0; i < uris->size() && i < 100; ++i) {
      if ((*uris)[i].is_string() && (*uris)[i].get_ref<const std::string&>().empty()) {
        c->Invalid("trainingInput.packageUris[" + std::to_string(i) + "]",
                   "package URI must not be empty");
      }
    }
  }
  if (container) return;
  if (packages == 0) {
    c->Invalid("trainingInput.packageUris",
               "Non-custom jobs must have packages: packageUris is required unless "
               "masterConfig.imageUri is set");
  }
  if (Str(ti, "pythonModule").empty()) {
    c->Invalid("trainingInput.pythonModule",
               "pythonModule is required unless masterConfig.imageUri is set");
  }
}

// `python -m MODULE` takes a dotted name of identifiers ("trainer.task").
bool IsPythonModuleName(std::string_view name) {
  if (name.empty() || name.size() > 1024) return false;
  size_t start = 0;
  for (;;) {
    size_t end = name.find('.', start);
    std::string_view part =
        name.substr(start, end == std::string_view::npos ? name.npos : end - start);
    if (part.empty() || std::isdigit(static_cast<unsigned char>(part[0]))) return false;
    for (char ch : part) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
    }
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

void CheckPythonModule(const json& ti, Checker* c) {
  std::string module = Str(ti, "pythonModule");
  if (!module.empty() && !IsPythonModuleName(module)) {
    c->Invalid("trainingInput.pythonModule",
               "pythonModule \"" + module +
                   "\" is not a Python module name (dotted identifiers of letters, digits and "
                   "'_', such as trainer.task)");
  }
}

// The regions of compat §13.1.
constexpr std::string_view kRegions[] = {"asia-east1",
                                         "asia-northeast1",
                                         "asia-southeast1",
                                         "australia-southeast1",
                                         "europe-west1",
                                         "europe-west2",
                                         "europe-west3",
                                         "europe-west4",
                                         "us-central1",
                                         "us-east1",
                                         "northamerica-northeast1",
                                         "us-east4",
                                         "us-west1"};

void CheckRegion(const json& ti, Checker* c) {
  std::string region = Str(ti, "region");
  if (region.empty()) {
    c->Invalid("trainingInput.region", "region is required");
    return;
  }
  if (std::find(std::begin(kRegions), std::end(kRegions), region) != std::end(kRegions)) return;
  std::string all;
  for (std::string_view r : kRegions) all += (all.empty() ? "" : ", ") + std::string(r);
  c->Invalid(
      "trainingInput.region",
      "region \"" + region + "\" is not an AI Platform Training region (one of " + all + ")");
}

void CheckScheduling(const json& ti, Checker* c) {
  const json* s = Get(ti, "scheduling");
  if (s == nullptr) return;
  if (const json* wait = Get(*s, "maxWaitTime")) {
    if (wait->get<int64_t>() < 1800 * kMicrosPerSecond) {
      c->Invalid(
          "trainingInput.scheduling.maxWaitTime",
          "maxWaitTime must be at least 1800s, got " + Quote(FormatDuration(wait->get<int64_t>())));
    }
  }
  if (const json* run = Get(*s, "maxRunningTime")) {
    if (run->get<int64_t>() <= 0) {
      c->Invalid(
          "trainingInput.scheduling.maxRunningTime",
          "maxRunningTime must be positive, got " + Quote(FormatDuration(run->get<int64_t>())));
    }
  }
  int64_t priority = Int(*s, "priority");
  if (priority < 0 || priority > 1000) {
    c->Invalid("trainingInput.scheduling.priority",
               "priority must be between 0 and 1000, got " + std::to_string(priority));
  }
}

// "projects/{projectNumber}/global/networks/{network}".
bool ValidNetwork(std::string_view n) {
  constexpr std::string_view kPrefix = "projects/";
  if (n.substr(0, kPrefix.size()) != kPrefix) return false;
  n.remove_prefix(kPrefix.size());
  size_t slash = n.find('/');
  if (slash == 0 || slash == std::string_view::npos) return false;
  for (char ch : n.substr(0, slash)) {
    if (ch < '0' || ch > '9') return false;
  }
  n.remove_prefix(slash);
  constexpr std::string_view kMid = "/global/networks/";
  if (n.substr(0, kMid.size()) != kMid) return false;
  n.remove_prefix(kMid.size());
  return !n.empty() && n.find('/') == std::string_view::npos;
}

// "projects/*/locations/*/keyRings/*/cryptoKeys/*".
bool ValidKmsKeyName(std::string_view k) {
  constexpr std::string_view kParts[] = {"projects", "locations", "keyRings", "cryptoKeys"};
  for (std::string_view part : kParts) {
    if (k.substr(0, part.size() + 1) != std::string(part) + "/") return false;
    k.remove_prefix(part.size() + 1);
    size_t slash = k.find('/');
    std::string_view id = k.substr(0, slash);
    if (id.empty()) return false;
    if (part == "cryptoKeys") return slash == std::string_view::npos;
    if (slash == std::string_view::npos) return false;
    k.remove_prefix(slash + 1);
  }
  return false;
}

void CheckEnvironment(const json& ti, Checker* c) {
  const std::string network = Str(ti, "network");
  if (!network.empty() && !ValidNetwork(network)) {
    c->Invalid("trainingInput.network",
               "network must be projects/{projectNumber}/global/networks/{network}, got " +
                   Quote(network));
  }
  const std::string sa = Str(ti, "serviceAccount");
  if (!sa.empty() && (sa.find('@') == std::string::npos || sa.front() == '@' || sa.back() == '@')) {
    c->Invalid("trainingInput.serviceAccount",
               "serviceAccount must be a service account email, got " + Quote(sa));
  }
  if (const json* enc = Get(ti, "encryptionConfig")) {
    const std::string key = Str(*enc, "kmsKeyName");
    if (key.empty()) {
      c->Invalid("trainingInput.encryptionConfig.kmsKeyName",
                 "kmsKeyName is required when encryptionConfig is set");
    } else if (!ValidKmsKeyName(key)) {
      c->Invalid("trainingInput.encryptionConfig.kmsKeyName",
                 "kmsKeyName must be projects/{PROJECT_ID}/locations/{REGION}/keyRings/"
                 "{KEY_RING_NAME}/cryptoKeys/{KEY_NAME}, got " +
                     Quote(key));
    }
  }
  if (Bool(ti, "enableWebAccess")) {
    c->Unimplemented("trainingInput.enableWebAccess",
                     "Trainyard does not offer interactive shells (web access) yet");
  }
}

void CheckHyperparameters(const json& ti, const Capabilities& caps, Checker* c) {
  const json* hp = Get(ti, "hyperparameters");
  if (hp == nullptr) return;
  const std::string base = "trainingInput.hyperparameters";
  if (!caps.tuning) {
    c->Unimplemented(base, "Trainyard does not run hyperparameter tuning jobs yet");
  }
  // maxParallelTrials, params and every ParameterSpec rule are the tuning engine's (one parser
  // for the API and trainyard-tuner); the fields the engine does not read are checked here.
  for (std::string_view key : {"maxTrials", "maxFailedTrials"}) {
    if (Int(*hp, key) < 0) {
      c->Invalid(base + "." + std::string(key), std::string(key) + " must not be negative");
    }
  }
  const std::string resume = Str(*hp, "resumePreviousJobId");
  if (!resume.empty()) {
    std::vector<FieldViolation> v;
    CheckJobId(resume, base + ".resumePreviousJobId", &v);
    for (auto& e : v) c->Invalid(std::move(e.field), std::move(e.description));
  }
  auto config = tuning::ParseStudyConfig(hp->dump());
  if (!config.ok()) {
    for (const auto& v : config.status().violations()) {
      c->Invalid(base + "." + v.field, v.description);
    }
    if (config.status().violations().empty()) c->Invalid(base, config.status().message());
    return;
  }
  // The engine runs a one-value INTEGER range; the API keeps AI Platform's minValue < maxValue.
  for (size_t i = 0; i < config->params.size(); ++i) {
    const tuning::ParameterSpec& p = config->params[i];
    if (p.type == tuning::ParameterType::kInteger && p.min_value == p.max_value) {
      c->Invalid(base + ".params[" + std::to_string(i) + "].maxValue",
                 "maxValue (" + Num(p.max_value) + ") must be greater than minValue (" +
                     Num(p.min_value) + ")");
    }
  }
}

void ValidateTrainingInput(const json& ti, const Capabilities& caps, Checker* c) {
  CheckRegion(ti, c);
  CheckPythonModule(ti, c);
  std::string tier = Str(ti, "scaleTier");
  if (tier.empty()) tier = "BASIC";
  if (tier == "BASIC_TPU") {
    c->Invalid("trainingInput.scaleTier",
               "scale tier BASIC_TPU is not available: " + std::string(kNoTpus));
  } else if ((tier == "STANDARD_1" || tier == "PREMIUM_1") && !caps.multi_replica) {
    c->Unimplemented("trainingInput.scaleTier", "scale tier " + tier + " runs several replicas: " +
                                                    std::string(kNoMultiReplica));
  } else if (tier == "BASIC_GPU" && !caps.gpus) {
    c->Unimplemented("trainingInput.scaleTier",
                     "scale tier BASIC_GPU runs on a GPU: " + std::string(kNoGpus));
  }
  CheckMachineTypes(ti, tier, caps, c);
  CheckReplicaConfigs(ti, tier, caps, c);
  CheckPackages(ti, c);
  CheckVersions(ti, c);
  CheckScheduling(ti, c);
  CheckEnvironment(ti, c);
  CheckHyperparameters(ti, caps, c);
}

// ---- Labels: Unicode classes by code point (approximate tables, no ICU) -------------------------

// Decodes one UTF-8 code point at s[*i]; false on malformed input.
bool NextCodePoint(std::string_view s, size_t* i, char32_t* cp) {
  auto b = static_cast<unsigned char>(s[*i]);
  int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (len == 0 || *i + static_cast<size_t>(len) > s.size()) return false;
  char32_t v = len == 1 ? b : len == 2 ? (b & 0x1f) : len == 3 ? (b & 0x0f) : (b & 0x07);
  for (int k = 1; k < len; ++k) {
    auto cb = static_cast<unsigned char>(s[*i + static_cast<size_t>(k)]);
    if ((cb & 0xc0) != 0x80) return false;
    v = (v << 6) | (cb & 0x3f);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return false;
  *i += static_cast<size_t>(len);
  *cp = v;
  return true;
}

struct Range {
  char32_t lo, hi;
};

bool InRanges(char32_t c, std::initializer_list<Range> ranges) {
  for (const Range& r : ranges) {
    if (c >= r.lo && c <= r.hi) return true;
  }
  return false;
}

// \p{Ll} or \p{Lo}: ASCII a-z plus lower-case Latin-1/Latin Extended-A, Greek, Cyrillic and
// Armenian letters, and the caseless letters of the major scripts (Hebrew, Arabic, Indic, Thai,
// Georgian, Hangul, Kana, CJK).
bool IsLowerOrOtherLetter(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z';
  if (c >= 0x100 && c <= 0x17f) {  // Latin Extended-A alternates upper/lower case
    if (c == 0x138 || c == 0x149 || c == 0x17f) return true;
    if (c == 0x178) return false;
    if (c <= 0x137 || (c >= 0x14a && c <= 0x177)) return (c & 1) == 1;
    return (c & 1) == 0;
  }
  if (c >= 0x460 && c <= 0x481) return (c & 1) == 1;  // Cyrillic historic letters
  return InRanges(
      c, {{0xaa, 0xaa},     {0xb5, 0xb5},      {0xba, 0xba},     {0xdf, 0xf6},     {0xf8, 0xff},
          {0x3ac, 0x3ce},   {0x430, 0x45f},    {0x561, 0x587},   {0x5d0, 0x5ea},   {0x5ef, 0x5f2},
          {0x620, 0x63f},   {0x641, 0x64a},    {0x671, 0x6d3},   {0x904, 0x939},   {0x958, 0x961},
          {0x985, 0x9b9},   {0xe01, 0xe30},    {0xe40, 0xe45},   {0x10d0, 0x10fa}, {0x1100, 0x11ff},
          {0x3041, 0x3096}, {0x30a1, 0x30fa},  {0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xac00, 0xd7a3},
          {0xf900, 0xfaff}, {0x20000, 0x2fa1f}});
}

// \p{N}: ASCII digits, Latin-1 superscripts/fractions and the common script digit blocks.
bool IsNumber(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return InRanges(c, {{0xb2, 0xb3},
                      {0xb9, 0xb9},
                      {0xbc, 0xbe},
                      {0x660, 0x669},
                      {0x6f0, 0x6f9},
                      {0x966, 0x96f},
                      {0x9e6, 0x9ef},
                      {0xe50, 0xe59},
                      {0x2070, 0x2070},
                      {0x2074, 0x2079},
                      {0x2080, 0x2089},
                      {0x2150, 0x2189},
                      {0x2460, 0x249b},
                      {0x3007, 0x3007},
                      {0x3021, 0x3029},
                      {0xff10, 0xff19}});
}

// Checks a label key ([\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}) or value
// ([\p{Ll}\p{Lo}\p{N}_-]{0,63}), counting code points. Returns "" or the reason.
std::string CheckLabelText(std::string_view s, bool is_key) {
  size_t i = 0;
  size_t count = 0;
  while (i < s.size()) {
    char32_t cp = 0;
    if (!NextCodePoint(s, &i, &cp)) return "is not valid UTF-8";
    bool letter = IsLowerOrOtherLetter(cp);
    if (count == 0 && is_key && !letter) return "must start with a lowercase letter";
    if (!letter && !IsNumber(cp) && cp != '_' && cp != '-') {
      return "may contain only lowercase letters, digits, underscores and dashes";
    }
    ++count;
  }
  if (is_key && count == 0) return "must not be empty";
  if (count > 63) return "must be at most 63 characters long";
  return "";
}

}  // namespace

void CheckJobId(std::string_view job_id, const std::string& field,
                std::vector<FieldViolation>* out) {
  if (job_id.empty()) {
    out->push_back({field, "jobId is required"});
    return;
  }
  auto alpha = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); };
  if (!alpha(job_id[0])) {
    out->push_back({field, "job id " + Quote(job_id) + " must start with a letter"});
  }
  for (char ch : job_id) {
    if (!alpha(ch) && !(ch >= '0' && ch <= '9') && ch != '_') {
      out->push_back(
          {field, "job id " + Quote(job_id) + " may contain only letters, digits and underscores"});
      break;
    }
  }
  if (job_id.size() > 128) {
    out->push_back({field, "job id must be at most 128 characters long, got " +
                               std::to_string(job_id.size())});
  }
}

void CheckLabels(const std::map<std::string, std::string>& labels, const std::string& field,
                 std::vector<FieldViolation>* out) {
  if (labels.size() > 64) {
    out->push_back({field, "at most 64 labels are allowed, got " + std::to_string(labels.size())});
  }
  for (const auto& [key, value] : labels) {
    std::string why = CheckLabelText(key, true);
    if (!why.empty()) out->push_back({field, "label key " + Quote(key) + " " + why});
    why = CheckLabelText(value, false);
    if (!why.empty()) {
      out->push_back({field, "value " + Quote(value) + " of label " + Quote(key) + " " + why});
    }
  }
}

void ValidateJob(const json& job, const Capabilities& caps, Violations* out) {
  Checker c(out);
  CheckJobId(Str(job, "jobId"), "jobId", &out->invalid);
  if (const json* labels = Get(job, "labels")) {
    std::map<std::string, std::string> m;
    for (auto it = labels->begin(); it != labels->end(); ++it) {
      if (it->is_string()) m[it.key()] = it->get<std::string>();
    }
    CheckLabels(m, "labels", &out->invalid);
  }
  const json* ti = Get(job, "trainingInput");
  const bool prediction = Get(job, "predictionInput") != nullptr;
  if (ti != nullptr && prediction) {
    c.Invalid("predictionInput", "only one of trainingInput and predictionInput may be set");
  } else if (prediction) {
    c.Unimplemented("predictionInput",
                    "Trainyard runs training jobs only; batch prediction is not supported");
  } else if (ti == nullptr) {
    c.Invalid("trainingInput", "trainingInput is required");
  }
  if (ti != nullptr) ValidateTrainingInput(*ti, caps, &c);
}

Status ViolationStatus(StatusCode code, std::vector<FieldViolation> violations) {
  std::string message;
  for (const FieldViolation& v : violations) {
    if (!message.empty()) message += "\n";
    message += "Field: " + v.field + " Error: " + v.description;
  }
  Status s(code, std::move(message));
  for (FieldViolation& v : violations) s.AddViolation(std::move(v.field), std::move(v.description));
  return s;
}

}  // namespace trainyard::model::internal
