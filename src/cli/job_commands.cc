// jobs submit training / describe / list / cancel / update (stream-logs: log_commands.cc).
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#include "commands.h"
#include "formats.h"
#include "job_builder.h"
#include "log_commands.h"
#include "packaging.h"
#include "printers.h"
#include "time_format.h"
#include "trainyard/core/util.h"
#include "trainyard/model/job_json.h"
#include "trainyard/resource/filter.h"

namespace trainyard::cli {

using json = nlohmann::json;

namespace {

constexpr int kMaxListPageSize = 100;

std::atomic<bool> g_interrupted{false};

extern "C" void OnInterrupt(int /*sig*/) { g_interrupted.store(true); }

// Installs a SIGINT handler for the lifetime of the object (submit --stream-logs).
class InterruptScope {
 public:
  InterruptScope() {
    g_interrupted.store(false);
    struct sigaction sa {};
    sa.sa_handler = OnInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_);
  }
  ~InterruptScope() { sigaction(SIGINT, &old_, nullptr); }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  struct sigaction old_ {};
};

Result<int64_t> ParseInt(std::string_view flag, std::string_view text) {
  int64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    return InvalidArgument("argument " + std::string(flag) + ": invalid int value: '" +
                           std::string(text) + "'");
  }
  return v;
}

json ParseJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json::object() : j;
}

std::string StringField(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "";
  const json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  return "";
}

std::string FollowUpMessage(const Invocation& inv, const std::string& job) {
  std::string p = inv.user_prefix;
  std::string proj = inv.ProjectHint();
  return "Your job is still active. You may view the status of your job with the command\n\n"
         "  $ " +
         p + " jobs describe " + job + proj +
         "\n\nor continue streaming the logs with the command\n\n"
         "  $ " +
         p + " jobs stream-logs " + job + proj + "\n";
}

// submit's default display: yaml(jobId, state, startTime.date(tz=LOCAL), endTime.date(...)).
Result<std::string> RenderSubmitted(const std::string& job_json, const OutputFormat& format) {
  if (!format.is_default) return RenderResource(job_json, format);
  json j = ParseJson(job_json);
  nlohmann::ordered_json view = nlohmann::ordered_json::object();
  view["jobId"] = StringField(j, "jobId");
  view["state"] = StringField(j, "state");
  std::string start = StringField(j, "startTime");
  std::string end = StringField(j, "endTime");
  if (!start.empty()) view["startTime"] = LocalDateTime(start);
  if (!end.empty()) view["endTime"] = LocalDateTime(end);
  YamlOptions o;
  o.sort_keys = false;
  return JsonToYaml(view.dump(), o);
}

// Splits --packages into gs:// URIs and local files, keeping their order.
void SplitPackages(const std::optional<std::string>& packages, std::vector<std::string>* remote,
                   std::vector<std::string>* local) {
  if (!packages) return;
  for (const auto& p : SplitCommaList(*packages)) (IsGcsUri(p) ? remote : local)->push_back(p);
}

// The descriptions of a model validation Status, without the "Field: x Error: " framing.
std::string Describe(const Status& s) {
  if (s.violations().empty()) return s.message();
  std::string out;
  for (const auto& v : s.violations()) out += (out.empty() ? "" : "; ") + v.description;
  return out;
}

std::string FlagError(const std::string& flag, const Status& s) {
  const std::string m = Describe(s);
  if (m.rfind("argument ", 0) == 0 || m.rfind("The ", 0) == 0) return m;
  return "argument " + flag + ": " + m;
}

// Parses the replica flags of one kind into ReplicaFlags.
Status ParseReplica(const std::optional<std::string>& type, const std::optional<std::string>& count,
                    const std::optional<std::string>& accelerator,
                    const std::optional<std::string>& image, const std::string& name,
                    ReplicaFlags* r) {
  r->machine_type = type;
  r->image_uri = image;
  if (count) {
    TRAINYARD_ASSIGN_OR_RETURN(int64_t n, ParseInt("--" + name + "-count", *count));
    r->count = n;
  }
  if (accelerator) {
    auto acc = ParseAcceleratorFlag(*accelerator);
    if (!acc.ok()) return InvalidArgument(FlagError("--" + name + "-accelerator", acc.status()));
    r->accelerator = *acc;
  }
  return Status::Ok();
}

// gcloud's KMS key resource argument: a full key name, or the key id completed by
// --kms-keyring, --kms-location and --kms-project (default: the command's project).
Result<std::optional<std::string>> KmsKeyName(const SubmitTrainingArgs& a,
                                              const std::string& project) {
  using Name = std::optional<std::string>;
  if (!a.kms_key && !a.kms_keyring && !a.kms_location && !a.kms_project) return Name();
  const std::string kNotFull = "argument --kms-key: Encryption key not fully specified.";
  if (a.kms_key && a.kms_key->rfind("projects/", 0) == 0) return Name(*a.kms_key);
  if (!a.kms_key || !a.kms_keyring || !a.kms_location || a.kms_key->empty() ||
      a.kms_keyring->empty() || a.kms_location->empty()) {
    return InvalidArgument(kNotFull);
  }
  return Name("projects/" + a.kms_project.value_or(project) + "/locations/" + *a.kms_location +
              "/keyRings/" + *a.kms_keyring + "/cryptoKeys/" + *a.kms_key);
}

}  // namespace

// --- jobs submit training ----------------------------------------------------------------

int RunSubmitTraining(const Invocation& inv, const SubmitTrainingArgs& a) {
  Status valid_id = model::ValidateJobId(a.job);
  if (!valid_id.ok()) return inv.Fail("argument JOB: " + Describe(valid_id));
  TrainingFlags f;
  f.job_id = a.job;
  f.module_name = a.module_name;
  f.region = a.region;
  f.job_dir = a.job_dir;
  f.runtime_version = a.runtime_version;
  f.python_version = a.python_version;
  f.service_account = a.service_account;
  f.enable_web_access = a.enable_web_access;
  {
    auto kms = KmsKeyName(a, inv.ResolvedClientOptions().project);
    if (!kms.ok()) return inv.Fail(kms.status().message());
    f.kms_key_name = *kms;
  }
  const char* env_region = std::getenv("TRAINYARD_REGION");
  if (env_region != nullptr && *env_region != '\0') f.default_region = env_region;
  if (inv.has_user_args) f.args = inv.user_args;
  if (a.scale_tier) {
    auto tier = NormalizeScaleTier(*a.scale_tier);
    if (!tier.ok()) return inv.Fail(FlagError("--scale-tier", tier.status()));
    f.scale_tier = *tier;
  }
  if (a.labels) {
    auto labels = ParseLabelsFlag(*a.labels);
    if (!labels.ok()) return inv.Fail(FlagError("--labels", labels.status()));
    f.labels = *labels;
  }
  if (a.use_chief_in_tf_config) {
    auto b = ParseBoolValue(*a.use_chief_in_tf_config);
    if (!b.ok()) return inv.Fail(FlagError("--use-chief-in-tf-config", b.status()));
    f.use_chief_in_tf_config = *b;
  }
  static const std::optional<std::string> kNoCount;
  Status replica = ParseReplica(a.master_machine_type, kNoCount, a.master_accelerator,
                                a.master_image_uri, "master", &f.master);
  if (replica.ok()) {
    replica = ParseReplica(a.worker_machine_type, a.worker_count, a.worker_accelerator,
                           a.worker_image_uri, "worker", &f.worker);
  }
  if (replica.ok()) {
    replica = ParseReplica(a.parameter_server_machine_type, a.parameter_server_count,
                           a.parameter_server_accelerator, a.parameter_server_image_uri,
                           "parameter-server", &f.parameter_server);
  }
  if (!replica.ok()) return inv.Fail(replica.message());
  auto interval = ParsePollingInterval(a.polling_interval);
  if (!interval.ok()) return inv.Fail(interval.status().message());
  auto format = ParseOutputFormat(a.format.value_or(""));
  if (!format.ok()) return inv.Fail(format.status().message());
  if (a.async) {
    inv.Warn(
        "The --async flag is deprecated, as the default behavior is to submit the job "
        "asynchronously; it can be omitted. For synchronous behavior, please pass "
        "--stream-logs.");
  }

  std::string config_json;
  if (a.config) {
    auto text = ReadFile(*a.config);
    if (!text.ok())
      return inv.Fail("Unable to read file [" + *a.config + "]: " + text.status().message());
    auto parsed = model::ConfigFileToJobJson(*text);
    if (!parsed.ok()) {
      return inv.Fail("Invalid --config file [" + *a.config + "]: " + parsed.status().message());
    }
    config_json = *parsed;
  }

  std::vector<std::string> remote, local;
  SplitPackages(a.packages, &remote, &local);
  bool package_flags = a.packages.has_value() || a.package_path.has_value();
  // Check everything that does not depend on the upload before building and uploading.
  {
    TrainingFlags probe = f;
    if (package_flags) probe.package_uris = std::vector<std::string>{"gs://probe/probe"};
    auto built = BuildTrainingJobJson(config_json, probe);
    if (!built.ok()) return inv.Fail(built.status().message());
  }

  // The module must be in the package before anything is built or uploaded (issue 16).
  if (a.package_path) {
    auto module = a.module_name;
    if (!module && !config_json.empty()) {
      std::string m = StringField(ParseJson(config_json)["trainingInput"], "pythonModule");
      if (!m.empty()) module = m;
    }
    if (module) {
      Status in_package =
          CheckModuleInPackage(*a.package_path, *module, !remote.empty() || !local.empty());
      if (!in_package.ok()) return inv.Fail(in_package.message());
    }
  }

  auto c = inv.MakeClient();
  std::vector<std::pair<std::string, std::string>> staged;  // (bucket, object) added here
  if (package_flags) {
    std::vector<std::string> uris = remote;
    TempDir tmp;
    if (!tmp.ok()) return inv.Fail("cannot create a temporary directory");
    if (a.package_path) {
      auto built = BuildPackages(*a.package_path, RuntimePython(), tmp.path() + "/output",
                                 tmp.path() + "/work");
      if (!built.ok()) return inv.Fail(built.status().message());
      local.insert(local.end(), built->begin(), built->end());
    }
    if (!local.empty()) {
      auto staging =
          GetStagingLocation(a.job, a.staging_bucket.value_or(""), a.job_dir.value_or(""));
      if (!staging.ok()) return inv.Fail(staging.status().message());
      if (!staging->has_value()) {
        // Neither --staging-bucket nor a gs:// --job-dir (a local --job-dir cannot hold
        // packages the daemon reads): the project's default staging bucket, made on first use.
        StagingLocation def = DefaultStagingLocation(inv.ResolvedClientOptions().project, a.job);
        auto exists = c->BucketExists(def.bucket);
        if (!exists.ok()) return inv.Fail(exists.status());
        if (!*exists) {
          Status made = c->CreateBucket(def.bucket);
          if (!made.ok() && made.code() != StatusCode::kAlreadyExists) return inv.Fail(made);
        }
        inv.Err() << "Staging the packages in gs://" << def.bucket << "/" << def.prefix
                  << " (no --staging-bucket and no gs:// --job-dir was given).\n";
        *staging = def;
      }
      Status dup = CheckDuplicateBasenames(local);
      if (!dup.ok()) return inv.Fail(dup.message());
      std::vector<std::string> contents;
      std::string all;
      for (const auto& path : local) {
        auto data = ReadFile(path);
        if (!data.ok())
          return inv.Fail("Unable to read file [" + path + "]: " + data.status().message());
        all += *data;
        contents.push_back(std::move(*data));
      }
      std::string digest = Sha256Hex(all);
      const StagingLocation& loc = **staging;
      for (size_t i = 0; i < local.size(); ++i) {
        std::string object = StagingObjectName(loc, digest, Basename(local[i]));
        // Objects this submit adds are removed again if the daemon refuses the job (a rejected
        // submit leaves nothing behind); one that was there already may be another job's.
        auto existing = c->ListObjects(loc.bucket, object);
        const bool was_there = existing.ok() && std::find(existing->begin(), existing->end(),
                                                          object) != existing->end();
        auto up = c->UploadObject(loc.bucket, object, contents[i]);
        if (!up.ok()) {
          if (up.status().code() == StatusCode::kNotFound) {
            return inv.Fail(up.status().ToString() +
                            "\nCreate the bucket with: " + inv.user_prefix +
                            " buckets create gs://" + loc.bucket + inv.ProjectHint());
          }
          return inv.Fail(up.status());
        }
        uris.push_back("gs://" + loc.bucket + "/" + object);
        if (!was_there) staged.emplace_back(loc.bucket, object);
      }
    }
    f.package_uris = uris;
  }

  auto body = BuildTrainingJobJson(config_json, f);
  if (!body.ok()) return inv.Fail(body.status().message());
  auto created = c->CreateJob(*body);
  if (!created.ok()) {
    for (const auto& [bucket, object] : staged) (void)c->DeleteObject(bucket, object);
    return inv.Fail(created.status());
  }
  std::string job_id = StringField(ParseJson(*created), "jobId");
  if (job_id.empty()) job_id = a.job;

  inv.Err() << "Job [" << job_id << "] submitted successfully.\n";
  if (!a.stream_logs) {
    inv.Err() << FollowUpMessage(inv, job_id);
    auto out = RenderSubmitted(*created, *format);
    if (!out.ok()) return inv.Fail(out.status());
    inv.Out() << *out;
    return kExitOk;
  }

  StreamOptions so;
  so.job = job_id;
  so.interval_s = *interval;
  so.log_out = inv.err;
  so.interrupted = &g_interrupted;
  Status streamed;
  {
    InterruptScope scope;
    streamed = StreamJobLogs(inv, *c, so);
  }
  if (streamed.code() == StatusCode::kCancelled) {
    inv.Err() << "Received keyboard interrupt.\n\n" << FollowUpMessage(inv, job_id);
  } else if (!streamed.ok()) {
    if (client::IsConnectionError(streamed)) return inv.Fail(streamed);
    inv.Err() << "Polling logs failed:\n"
              << streamed.ToString() << "\n\n"
              << FollowUpMessage(inv, job_id);
  }
  auto final_job = c->GetJob(job_id);
  if (!final_job.ok()) return inv.Fail(final_job.status());
  auto out = RenderSubmitted(*final_job, *format);
  if (!out.ok()) return inv.Fail(out.status());
  inv.Out() << *out;
  return StringField(ParseJson(*final_job), "state") == "SUCCEEDED" ? kExitOk : kExitError;
}

// --- jobs describe -------------------------------------------------------------------------

namespace {

std::string SummaryCell(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return "";
  const json& v = obj[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return FormatGcloudFloat(v.get<double>());
  if (v.is_number()) return v.dump();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  return "";
}

std::string JobSummary(const json& job) {
  std::string out = FormatBoxTable(
      "Job Overview", {"JOB_ID", "CREATE_TIME", "START_TIME", "END_TIME", "STATE"},
      {{SummaryCell(job, "jobId"), SummaryCell(job, "createTime"), SummaryCell(job, "startTime"),
        SummaryCell(job, "endTime"), SummaryCell(job, "state")}});

  const json ti = job.contains("trainingInput") ? job["trainingInput"] : json::object();
  struct Col {
    const char* key;
    const char* label;
    bool optional;
  };
  static const Col kInputCols[] = {
      {"runtimeVersion", "RUNTIME_VERSION", true},
      {"region", "REGION", false},
      {"scaleTier", "SCALE_TIER", true},
      {"pythonModule", "PYTHON_MODULE", false},
      {"parameterServerType", "PARAMETER_SERVER_TYPE", true},
      {"parameterServerCount", "PARAMETER_SERVER_COUNT", true},
      {"masterType", "MASTER_TYPE", true},
      {"workerType", "WORKER_TYPE", true},
      {"workerCount", "WORKER_COUNT", true},
      {"jobDir", "JOB_DIR", true},
  };
  std::vector<std::string> headers, row;
  for (const auto& col : kInputCols) {
    if (col.optional && (!ti.is_object() || !ti.contains(col.key))) continue;
    headers.push_back(col.label);
    row.push_back(SummaryCell(ti, col.key));
  }
  out += FormatBoxTable("Training Input Summary", headers, {row});

  if (job.contains("trainingOutput") && job["trainingOutput"].is_object()) {
    const json& to = job["trainingOutput"];
    std::vector<std::string> oh, orow;
    if (to.contains("completedTrialCount")) {
      oh.push_back("TRIALS");
      orow.push_back(SummaryCell(to, "completedTrialCount"));
    }
    oh.push_back("ML_UNITS");
    orow.push_back(SummaryCell(to, "consumedMLUnits"));
    out += FormatBoxTable("Training Output Summary", oh, {orow});

    // Trainyard's additions (before the trials table, whose shape is gcloud's): the job's
    // message, the median rule's state and what individual trials have to say (a missing metric
    // tag, why one was stopped early).
    std::vector<std::vector<std::string>> notes;
    if (const std::string msg = SummaryCell(job, "errorMessage"); !msg.empty()) {
      notes.push_back({"job", msg});
    }
    if (to.contains("earlyStopping") && to["earlyStopping"].is_object()) {
      const json& es = to["earlyStopping"];
      const std::string refs = SummaryCell(es, "referenceTrialCount");
      notes.push_back(
          {"early stopping", es.value("active", false)
                                 ? "active: " + refs + " completed trials as references, " +
                                       SummaryCell(es, "stoppedTrialCount") + " trials stopped"
                                 : "waiting: the median rule needs " +
                                       SummaryCell(es, "minReferenceTrialCount") +
                                       " completed trials with intermediate reports, has " + refs});
    }
    if (to.contains("trials") && to["trials"].is_array()) {
      for (const json& t : to["trials"]) {
        if (const std::string msg = SummaryCell(t, "message"); !msg.empty()) {
          notes.push_back({"trial " + SummaryCell(t, "trialId"), msg});
        }
      }
    }
    if (!notes.empty()) out += FormatBoxTable("Training Output Notes", {"ABOUT", "NOTE"}, notes);

    if (to.contains("trials") && to["trials"].is_array() && !to["trials"].empty()) {
      bool minimize = ti.is_object() && ti.contains("hyperparameters") &&
                      ti["hyperparameters"].is_object() &&
                      SummaryCell(ti["hyperparameters"], "goal") == "MINIMIZE";
      std::vector<json> trials(to["trials"].begin(), to["trials"].end());
      auto objective = [](const json& t, double* v) {
        if (!t.contains("finalMetric") || !t["finalMetric"].is_object()) return false;
        const json& m = t["finalMetric"];
        if (!m.contains("objectiveValue") || !m["objectiveValue"].is_number()) return false;
        *v = m["objectiveValue"].get<double>();
        return true;
      };
      auto trial_num = [](const json& t) {
        std::string id = SummaryCell(t, "trialId");
        char* end = nullptr;
        long long n = std::strtoll(id.c_str(), &end, 10);
        return (end != id.c_str()) ? n : 0LL;
      };
      // Best first for the job's goal; trials without an objective last, by trial id.
      std::stable_sort(trials.begin(), trials.end(), [&](const json& x, const json& y) {
        double vx = 0, vy = 0;
        bool hx = objective(x, &vx), hy = objective(y, &vy);
        if (hx != hy) return hx;
        if (hx && vx != vy) return minimize ? vx < vy : vx > vy;
        return trial_num(x) < trial_num(y);
      });
      std::vector<std::vector<std::string>> rows;
      for (const auto& t : trials) {
        std::string hp;
        if (t.contains("hyperparameters") && t["hyperparameters"].is_object()) {
          for (auto it = t["hyperparameters"].begin(); it != t["hyperparameters"].end(); ++it) {
            if (!hp.empty()) hp += "\n";
            hp += it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
          }
        }
        const json metric = t.contains("finalMetric") ? t["finalMetric"] : json::object();
        rows.push_back({SummaryCell(t, "trialId"), SummaryCell(metric, "objectiveValue"),
                        SummaryCell(metric, "trainingStep"), hp});
      }
      // gcloud's columns (its flags.py _JOB_TRAIN_OUTPUT_TRIALS_FORMAT); gcloud sorts by
      // trialId, Trainyard puts the best trial first.
      out += FormatBoxTable("Training Output Trials",
                            {"TRIAL", "OBJECTIVE_VALUE", "STEP", "HYPERPARAMETERS"}, rows);
    }
  }
  return out;
}

}  // namespace

int RunDescribe(const Invocation& inv, const DescribeArgs& a) {
  auto format = ParseOutputFormat(a.format.value_or(""));
  if (!format.ok()) return inv.Fail(format.status().message());
  auto c = inv.MakeClient();
  auto job = c->GetJob(a.job);
  if (!job.ok()) return inv.Fail(job.status());
  if (a.summarize) {
    if (a.format) inv.Warn("--format is ignored when --summarize is present");
    inv.Out() << JobSummary(ParseJson(*job));
  } else {
    auto out = RenderResource(*job, *format);
    if (!out.ok()) return inv.Fail(out.status());
    inv.Out() << *out;
  }
  inv.Out().flush();
  std::string id = StringField(ParseJson(*job), "jobId");
  if (id.empty()) id = a.job;
  // As gcloud points at the Cloud Console, the daemon's own console (docs/console.md) on the
  // endpoint the command used.
  const client::ClientOptions co = inv.ResolvedClientOptions();
  std::string base = co.endpoint;
  if (base.find("://") == std::string::npos) base = "http://" + base;
  while (!base.empty() && base.back() == '/') base.pop_back();
  inv.Err() << "\nView job in the Trainyard console at:\n  " << base << "/mlengine/jobs/"
            << PercentEncode(id) << "?project=" << PercentEncode(co.project) << "\n";
  inv.Err() << "\nView logs with:\n  " << inv.user_prefix << " jobs stream-logs " << id
            << inv.ProjectHint() << "\n";
  return kExitOk;
}

// --- jobs list -----------------------------------------------------------------------------

namespace {

// The daemon's orderBy for a --sort-by key, when it has one.
struct ServerOrder {
  std::string field;     // the Job field ("" = the daemon cannot order by this key)
  bool reverse = false;  // "~field"
  std::string order_by;  // the orderBy parameter
};

ServerOrder ServerOrderOf(std::string key) {
  ServerOrder out;
  while (!key.empty() && key[0] == '~') {
    key.erase(0, 1);
    out.reverse = true;
  }
  for (const char* field : {"createTime", "startTime", "endTime", "jobId", "state"}) {
    if (key == field) {
      out.field = key;
      out.order_by = key + (out.reverse ? " desc" : "");
    }
  }
  return out;
}

// A field's value as gcloud's --sort-by compares it: the JSON string, "None" when absent.
std::string ShownValue(const json& job, const std::string& field) {
  auto it = job.find(field);
  if (it == job.end() || it->is_null()) return "None";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// The daemon breaks ties of orderBy in creation order in the key's direction: oldest first
// when ascending. gcloud's stable sort leaves ties in the listing's order, newest first: so
// each run of equal values of an ascending key is reversed.
void RestoreListingOrderInTies(const ServerOrder& order, std::vector<json>* jobs) {
  if (order.reverse) return;
  auto run = jobs->begin();
  while (run != jobs->end()) {
    const std::string value = ShownValue(*run, order.field);
    auto end = std::find_if(run, jobs->end(),
                            [&](const json& j) { return ShownValue(j, order.field) != value; });
    std::reverse(run, end);
    run = end;
  }
}

}  // namespace

int RunList(const Invocation& inv, const ListArgs& a) {
  auto format = ParseOutputFormat(a.format.value_or(""), kJobsListFormat);
  if (!format.ok()) return inv.Fail(format.status().message());
  int64_t limit = -1;
  if (a.limit) {
    auto v = ParseInt("--limit", *a.limit);
    if (!v.ok()) return inv.Fail(v.status().message());
    if (*v < 1)
      return inv.Fail("argument --limit: Value must be greater than or equal to 1; received: " +
                      *a.limit);
    limit = *v;
  }
  int page_size = kMaxListPageSize;
  if (a.page_size) {
    auto v = ParseInt("--page-size", *a.page_size);
    if (!v.ok()) return inv.Fail(v.status().message());
    if (*v < 1)
      return inv.Fail("argument --page-size: Value must be greater than or equal to 1; received: " +
                      *a.page_size);
    page_size = static_cast<int>(std::min<int64_t>(*v, kMaxListPageSize));
  } else if (limit > 0 && limit < kMaxListPageSize) {
    page_size = static_cast<int>(limit);
  }
  std::vector<std::string> sort_keys;
  if (a.sort_by) sort_keys = SplitCommaList(*a.sort_by);
  const OutputFormat& list_format = *format;
  // gcloud evaluates --filter on the client, on every job of the listing (it sends no filter
  // to the server), with its own filter language: so does trainyard.
  std::unique_ptr<resource::Filter> filter;
  if (a.filter && !Trim(*a.filter).empty()) {
    auto compiled = resource::Filter::Compile(*a.filter);
    if (!compiled.ok()) return inv.Fail("argument --filter: " + compiled.status().message());
    filter = std::move(*compiled);
  }

  // gcloud sorts every job of the listing (newest first) on the client, stably, then applies
  // --limit. When the first sort key is one the daemon orders by (its orderBy extension,
  // docs/api.md), the daemon's pages come in that key's order, so the listing can stop once
  // --limit jobs are in and the last one's key value is complete (a job past it was seen);
  // the sort below then puts those jobs exactly where sorting every job would.
  const ServerOrder server_order = sort_keys.empty() ? ServerOrder{} : ServerOrderOf(sort_keys[0]);
  auto c = inv.MakeClient();
  std::vector<json> jobs;
  std::string token;
  bool enough = false;
  do {
    auto page = c->ListJobs("", page_size, token, server_order.order_by);
    if (!page.ok()) return inv.Fail(page.status());
    std::string last_value;
    for (const std::string& text : page->jobs) {
      json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) return inv.Fail("the daemon answered with invalid JSON");
      if (!server_order.field.empty()) last_value = ShownValue(j, server_order.field);
      if (filter) {
        auto keep = filter->Matches(j);
        if (!keep.ok()) return inv.Fail("argument --filter: " + keep.status().message());
        if (!*keep) continue;
      }
      jobs.push_back(std::move(j));
    }
    token = page->next_page_token;
    const bool have_limit = limit >= 0 && static_cast<int64_t>(jobs.size()) >= limit;
    if (sort_keys.empty()) {
      enough = have_limit;
    } else if (!server_order.field.empty() && have_limit) {
      enough = last_value != ShownValue(jobs[static_cast<size_t>(limit - 1)], server_order.field);
    }
  } while (!token.empty() && !enough);
  if (!server_order.field.empty()) RestoreListingOrderInTies(server_order, &jobs);
  if (filter) {
    for (const std::string& w : filter->Warnings()) inv.Warn(w);
    std::vector<std::string> missing = filter->MissingKeys();
    if (!missing.empty()) {
      std::string names;
      for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
      inv.Warn("The following filter keys were not present in any resource : " + names);
    }
  }

  if (!sort_keys.empty()) {
    // The Job's proto map fields (compat §1, §4), which gcloud's sort cannot look into.
    Status sorted =
        resource::SortBy(sort_keys, &jobs, {"labels", "hyperparameters", "webAccessUris"});
    if (!sorted.ok()) return inv.Fail(sorted.message());
  }
  if (limit >= 0 && static_cast<int64_t>(jobs.size()) > limit)
    jobs.resize(static_cast<size_t>(limit));

  std::vector<std::string> texts;
  texts.reserve(jobs.size());
  for (const json& j : jobs) texts.push_back(j.dump());
  auto out = RenderList(texts, list_format);
  if (!out.ok()) return inv.Fail(out.status());
  inv.Out() << *out;
  if (jobs.empty()) inv.Err() << "Listed 0 items.\n";
  return kExitOk;
}

// --- jobs cancel / update --------------------------------------------------------------------

int RunCancel(const Invocation& inv, const std::string& job) {
  auto c = inv.MakeClient();
  Status s = c->CancelJob(job);
  if (!s.ok()) return inv.Fail(s);
  return kExitOk;
}

int RunUpdate(const Invocation& inv, const UpdateArgs& a) {
  if (!a.update_labels && !a.remove_labels && !a.clear_labels) {
    return inv.Fail(
        "At least one of --update-labels, --remove-labels, or --clear-labels must be "
        "specified.");
  }
  std::map<std::string, std::string> updates;
  if (a.update_labels) {
    auto parsed = ParseLabelsFlag(*a.update_labels);
    if (!parsed.ok()) return inv.Fail(FlagError("--update-labels", parsed.status()));
    updates = *parsed;
  }
  std::vector<std::string> removals;
  if (a.remove_labels) removals = SplitCommaList(*a.remove_labels);

  auto c = inv.MakeClient();
  auto job = c->GetJob(a.job);
  if (!job.ok()) return inv.Fail(job.status());
  json j = ParseJson(*job);
  std::map<std::string, std::string> old_labels;
  if (j.contains("labels") && j["labels"].is_object()) {
    for (auto it = j["labels"].begin(); it != j["labels"].end(); ++it) {
      if (it->is_string()) old_labels[it.key()] = it->get<std::string>();
    }
  }
  std::map<std::string, std::string> labels =
      a.clear_labels ? std::map<std::string, std::string>{} : old_labels;
  for (const auto& k : removals) labels.erase(k);
  for (const auto& [k, v] : updates) labels[k] = v;
  if (labels == old_labels) {
    inv.Err() << "No update to perform.\n";
    return kExitOk;
  }
  auto patched = c->PatchJobLabels(a.job, json(labels).dump(), StringField(j, "etag"));
  if (!patched.ok()) return inv.Fail(patched.status());
  inv.Err() << "Updated job [" << a.job << "].\n";
  return kExitOk;
}

}  // namespace trainyard::cli
