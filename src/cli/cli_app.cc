// The command tree: CLI11 parsing, gcloud-style error prefixes, dispatch to the handlers.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <ostream>

#include "commands.h"
#include "log_commands.h"

#ifndef TRAINYARD_VERSION
#define TRAINYARD_VERSION "unknown"
#endif

namespace trainyard::cli {

// --- Invocation ------------------------------------------------------------------------------

namespace {

// http://127.0.0.1:8470, localhost:8470, [::1]:8470 ...
bool IsLoopbackEndpoint(const std::string& endpoint) {
  std::string rest = endpoint;
  if (size_t p = rest.find("://"); p != std::string::npos) rest = rest.substr(p + 3);
  rest = rest.substr(0, rest.find('/'));
  std::string host = rest;
  if (!host.empty() && host[0] == '[') {
    host = host.substr(1, host.find(']') - 1);
  } else {
    host = host.substr(0, host.rfind(':') == std::string::npos ? host.size() : host.rfind(':'));
  }
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

client::ClientOptions Invocation::ResolvedClientOptions() const {
  // Flags, then the environment, then the config file (docs/cli.md), then the defaults.
  client::ClientOptions o = client::OptionsFromEnvironment();
  CliConfig file = ReadCliConfig();
  auto env_set = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0';
  };
  if (!env_set("TRAINYARD_ENDPOINT") && !file.endpoint.empty()) o.endpoint = file.endpoint;
  if (!env_set("TRAINYARD_PROJECT") && !file.project.empty()) o.project = file.project;
  if (o.token.empty()) o.token = ReadTokenFile(file.token_file);
  if (!globals.endpoint.empty()) o.endpoint = globals.endpoint;
  if (!globals.project.empty()) o.project = globals.project;
  if (!globals.token_file.empty()) o.token = ReadTokenFile(globals.token_file);
  if (!globals.token.empty()) o.token = globals.token;
  // Last resort on this machine: the local daemon's administrator token, when readable (docs/
  // security.md). Only for loopback endpoints, so it never goes to another host.
  if (o.token.empty() && IsLoopbackEndpoint(o.endpoint)) {
    o.token = ReadTokenFile(LocalAdminTokenFile());
  }
  return o;
}

std::unique_ptr<client::Client> Invocation::MakeClient() const {
  return std::make_unique<client::Client>(ResolvedClientOptions());
}

int Invocation::Fail(const std::string& message) const {
  Err() << "ERROR: (" << command_path << ") " << message << "\n";
  return kExitError;
}

int Invocation::Fail(const Status& status) const {
  if (client::IsConnectionError(status)) return Fail(status.message());
  if (status.code() == StatusCode::kUnauthenticated) {
    return Fail(status.ToString() +
                "\nGive an API token with --token-file FILE, TRAINYARD_TOKEN or token_file in " +
                CliConfigPath() + " (docs/security.md).");
  }
  return Fail(status.ToString());
}

void Invocation::Warn(const std::string& message) const { Err() << "WARNING: " << message << "\n"; }

std::string Invocation::ProjectHint() const {
  return globals.project.empty() ? "" : " --project " + globals.project;
}

namespace {

// Collects option values bound to std::optional<std::string> and copies them after parsing.
class Binder {
 public:
  CLI::Option* Add(CLI::App* app, const std::string& name, std::optional<std::string>* target,
                   const std::string& help) {
    auto holder = std::make_shared<std::string>();
    CLI::Option* opt =
        app->add_option(name, *holder, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    finalizers_.push_back([opt, holder, target] {
      if (opt->count() > 0) *target = *holder;
    });
    return opt;
  }
  void Finalize() {
    for (auto& f : finalizers_) f();
  }

 private:
  std::vector<std::function<void()>> finalizers_;
};

struct Leaf {
  std::function<int(const Invocation&)> run;
  bool accepts_user_args = false;
};

class CommandTree {
 public:
  CommandTree() = default;

  void Build(CLI::App* root) {
    root->require_subcommand(1);
    AddCommands(root);
    AddGcloudConfig(root);
    CLI::App* ai = root->add_subcommand("ai-platform",
                                        "The same commands under gcloud's `ai-platform` group.");
    ai->require_subcommand(1);
    AddCommands(ai);
  }

  const Leaf* Find(CLI::App* app) const {
    auto it = leaves_.find(app);
    return it == leaves_.end() ? nullptr : &it->second;
  }

  void Finalize() { binder_.Finalize(); }

 private:
  template <typename T>
  T* Keep() {
    auto p = std::make_shared<T>();
    keep_.push_back(p);
    return p.get();
  }

  void AddCommands(CLI::App* parent) {
    CLI::App* jobs = parent->add_subcommand("jobs", "Submit and manage training jobs.");
    jobs->require_subcommand(1);
    AddSubmit(jobs);
    AddDescribe(jobs);
    AddList(jobs);
    AddCancel(jobs);
    AddUpdate(jobs);
    AddStreamLogs(jobs);
    AddLogs(jobs);
    AddTrialsAndQueue(jobs);

    CLI::App* local = parent->add_subcommand("local", "Run a trainer locally, without a daemon.");
    local->require_subcommand(1);
    AddLocalTrain(local);

    CLI::App* buckets = parent->add_subcommand("buckets", "Create and list storage buckets.");
    AddBuckets(buckets);
    CLI::App* storage = parent->add_subcommand("storage", "Storage commands (gcloud's shape).");
    storage->require_subcommand(1);
    AddBuckets(storage->add_subcommand("buckets", "Create and list storage buckets."));

    AddCopy(parent);

    CLI::App* admin = parent->add_subcommand("admin", "Daemon administration.");
    admin->require_subcommand(1);
    AddAdmin(admin, "pause", "Stop admitting queued jobs (running jobs continue).",
             AdminAction::kPause);
    AddAdmin(admin, "resume", "Resume admitting queued jobs.", AdminAction::kResume);
    AddAdmin(admin, "status", "Show whether admission is paused.", AdminAction::kStatus);
    AddAdminStop(admin);
    AddAdminGc(admin);
    AddAdminBackup(admin);
    AddAuthAdmin(admin);
  }

  // trainyard admin principals|tokens|projects|buckets|audit|roles (docs/security.md).
  void AddAuthAdmin(CLI::App* admin) {
    auto* a = Keep<AuthAdminArgs>();
    auto leaf = [this, a](CLI::App* c, AuthAdminAction action) {
      leaves_[c] =
          Leaf{[a, action](const Invocation& inv) { return RunAuthAdmin(inv, action, *a); }, false};
    };
    CLI::App* principals = admin->add_subcommand("principals", "Users and service accounts.");
    principals->require_subcommand(1);
    CLI::App* c = principals->add_subcommand("create", "Create a principal.");
    c->add_option("EMAIL", a->email, "Its email address.")->required();
    c->add_flag("--service-account", a->service_account, "A service account, not a user.");
    c->add_flag("--admin", a->admin, "An administrator (every permission everywhere).");
    binder_.Add(c, "--description", &a->description, "A note for administrators.");
    leaf(c, AuthAdminAction::kCreatePrincipal);
    leaf(principals->add_subcommand("list", "List principals."), AuthAdminAction::kListPrincipals);
    c = principals->add_subcommand("disable", "Disable a principal (its tokens stop working).");
    c->add_option("EMAIL", a->email, "The principal.")->required();
    leaf(c, AuthAdminAction::kDisablePrincipal);
    c = principals->add_subcommand("enable", "Enable a disabled principal.");
    c->add_option("EMAIL", a->email, "The principal.")->required();
    leaf(c, AuthAdminAction::kEnablePrincipal);

    CLI::App* tokens = admin->add_subcommand("tokens", "API tokens.");
    tokens->require_subcommand(1);
    c = tokens->add_subcommand("create",
                               "Create an API token for a principal; prints it once (stdout, or "
                               "--output-file with mode 0600).");
    c->add_option("EMAIL", a->email, "The principal.")->required();
    binder_.Add(c, "--ttl", &a->ttl, "Lifetime, e.g. 12h or 90d (default: no expiry).");
    binder_.Add(c, "--description", &a->description, "What the token is for.");
    binder_.Add(c, "--output-file", &a->output_file, "Write the token here (mode 0600).");
    leaf(c, AuthAdminAction::kCreateToken);
    c = tokens->add_subcommand("list", "List tokens (ids, never secrets).");
    c->add_option("EMAIL", a->email, "Only this principal's.");
    leaf(c, AuthAdminAction::kListTokens);
    c = tokens->add_subcommand("revoke", "Revoke a token by its id.");
    c->add_option("TOKEN_ID", a->token_id, "The token's id (16 hex digits).")->required();
    leaf(c, AuthAdminAction::kRevokeToken);

    for (const char* kind : {"projects", "buckets"}) {
      const bool project = std::string(kind) == "projects";
      CLI::App* group =
          admin->add_subcommand(kind, project ? "Project IAM policies." : "Bucket IAM policies.");
      group->require_subcommand(1);
      const char* what = project ? "PROJECT" : "BUCKET";
      c = group->add_subcommand("get-iam-policy", "Print the policy (JSON).");
      c->add_option(what, a->resource, "The resource.")->required();
      leaf(c, project ? AuthAdminAction::kGetProjectPolicy : AuthAdminAction::kGetBucketPolicy);
      c = group->add_subcommand("set-iam-policy",
                                "Replace the policy with a JSON file's (its etag is checked).");
      c->add_option(what, a->resource, "The resource.")->required();
      c->add_option("POLICY_FILE", a->policy_file, "google.iam.v1.Policy JSON.")->required();
      leaf(c, project ? AuthAdminAction::kSetProjectPolicy : AuthAdminAction::kSetBucketPolicy);
      for (bool add : {true, false}) {
        c = group->add_subcommand(add ? "add-iam-policy-binding" : "remove-iam-policy-binding",
                                  add ? "Grant a role to a member." : "Take a role from a member.");
        c->add_option(what, a->resource, "The resource.")->required();
        c->add_option("--member", a->member,
                      "user:EMAIL, serviceAccount:EMAIL or "
                      "allAuthenticatedUsers.")
            ->required();
        c->add_option("--role", a->role, "e.g. roles/ml.developer.")->required();
        leaf(c, project ? (add ? AuthAdminAction::kAddProjectBinding
                               : AuthAdminAction::kRemoveProjectBinding)
                        : (add ? AuthAdminAction::kAddBucketBinding
                               : AuthAdminAction::kRemoveBucketBinding));
      }
    }
    c = admin->add_subcommand("audit",
                              "Print audit records (who did what, when, with what "
                              "result), oldest first.");
    c->add_option("--filter-project", a->resource, "Only this project's records.");
    leaf(c, AuthAdminAction::kAudit);
    leaf(admin->add_subcommand("roles", "List the predefined roles and their permissions."),
         AuthAdminAction::kRoles);
    leaf(admin->add_subcommand("whoami", "Print the principal the credential belongs to."),
         AuthAdminAction::kWhoAmI);
  }

  void AddSubmit(CLI::App* jobs) {
    CLI::App* submit = jobs->add_subcommand("submit", "Submit jobs.");
    submit->require_subcommand(1);
    CLI::App* c = submit->add_subcommand(
        "training",
        "Submit a training job. Everything after a literal `--` is passed to the trainer as "
        "trainingInput.args.");
    auto* a = Keep<SubmitTrainingArgs>();
    c->add_option("JOB", a->job, "Name (jobId) of the job.")->required();
    auto add = [&](const char* name, std::optional<std::string>* t, const char* help) {
      return binder_.Add(c, name, t, help);
    };
    add("--package-path", &a->package_path,
        "Local package directory; built with setuptools sdist from its parent directory.");
    add("--packages", &a->packages,
        "Comma-separated trainer packages: local files (uploaded) or gs:// URIs.");
    add("--module-name", &a->module_name, "Python module to run (trainingInput.pythonModule).");
    add("--region", &a->region,
        "Region of the job (default: the config file's, else $TRAINYARD_REGION, else "
        "us-central1).");
    add("--config", &a->config, "YAML or JSON file with a Job; flags override its fields.");
    add("--staging-bucket", &a->staging_bucket, "gs://BUCKET where local packages are staged.");
    add("--job-dir", &a->job_dir, "Job directory (trainingInput.jobDir), passed as --job-dir.");
    add("--scale-tier", &a->scale_tier,
        "basic, standard-1, premium-1, basic-gpu, basic-tpu or custom.");
    add("--master-machine-type", &a->master_machine_type, "Machine type of the master.");
    add("--worker-machine-type", &a->worker_machine_type, "Machine type of the workers.");
    add("--worker-count", &a->worker_count, "Number of workers.");
    add("--parameter-server-machine-type", &a->parameter_server_machine_type,
        "Machine type of the parameter servers.");
    add("--parameter-server-count", &a->parameter_server_count, "Number of parameter servers.");
    add("--master-accelerator", &a->master_accelerator,
        "Accelerators of the master: count=N,type=T.");
    add("--worker-accelerator", &a->worker_accelerator,
        "Accelerators of each worker: count=N,type=T.");
    add("--parameter-server-accelerator", &a->parameter_server_accelerator,
        "Accelerators of each parameter server: count=N,type=T.");
    add("--master-image-uri", &a->master_image_uri, "Container image of the master.");
    add("--worker-image-uri", &a->worker_image_uri, "Container image of the workers.");
    add("--parameter-server-image-uri", &a->parameter_server_image_uri,
        "Container image of the parameter servers.");
    add("--use-chief-in-tf-config", &a->use_chief_in_tf_config,
        "true/false: name the primary `chief` in TF_CONFIG (custom containers).");
    add("--runtime-version", &a->runtime_version, "Runtime version, e.g. 2.11.");
    add("--python-version", &a->python_version, "Python version, e.g. 3.7.");
    add("--labels", &a->labels, "Labels: KEY=VALUE,...");
    add("--service-account", &a->service_account, "Service account the job runs as.");
    add("--kms-key", &a->kms_key,
        "Cloud KMS key (projects/P/locations/L/keyRings/R/cryptoKeys/K, or the key id with "
        "--kms-keyring and --kms-location) stored as trainingInput.encryptionConfig.kmsKeyName.");
    add("--kms-keyring", &a->kms_keyring, "The KMS keyring of --kms-key.");
    add("--kms-location", &a->kms_location, "The Google Cloud location of --kms-key.");
    add("--kms-project", &a->kms_project, "The project of --kms-key (default: --project).");
    add("--polling-interval", &a->polling_interval,
        "Seconds between log polls with --stream-logs (default 1).");
    add("--format", &a->format, "Output format: yaml (default), json or value(FIELD,...).");
    c->add_flag("--enable-web-access", a->enable_web_access, "Enable interactive shell access.");
    CLI::Option* stream = c->add_flag("--stream-logs", a->stream_logs,
                                      "Wait for the job, streaming its logs to stderr; exit 0 "
                                      "only when it SUCCEEDED.");
    CLI::Option* async =
        c->add_flag("--async", a->async, "Deprecated no-op (submitting is asynchronous).");
    stream->excludes(async);
    leaves_[c] = Leaf{[a](const Invocation& inv) { return RunSubmitTraining(inv, *a); }, true};
  }

  void AddDescribe(CLI::App* jobs) {
    CLI::App* c = jobs->add_subcommand("describe", "Describe a job.");
    auto* a = Keep<DescribeArgs>();
    c->add_option("JOB", a->job, "Name of the job.")->required();
    c->add_flag("--summarize", a->summarize, "Summarize the job in human-readable tables.");
    binder_.Add(c, "--format", &a->format,
                "Output format: yaml (default), json or value(FIELD,...).");
    leaves_[c] = Leaf{[a](const Invocation& inv) { return RunDescribe(inv, *a); }, false};
  }

  void AddList(CLI::App* jobs) {
    CLI::App* c = jobs->add_subcommand("list", "List the jobs of the project.");
    auto* a = Keep<ListArgs>();
    binder_.Add(c, "--filter", &a->filter,
                "Server-side filter, e.g. 'jobId:census* AND state:FAILED'.");
    binder_.Add(c, "--limit", &a->limit, "Print at most this many jobs.");
    binder_.Add(c, "--page-size", &a->page_size, "Jobs fetched per request (at most 100).");
    binder_.Add(c, "--sort-by", &a->sort_by,
                "Comma-separated fields to sort by (jobId, state, createTime); ~ reverses.");
    binder_.Add(c, "--format", &a->format,
                "Output format: table (default), json, yaml or value(FIELD,...).");
    leaves_[c] = Leaf{[a](const Invocation& inv) { return RunList(inv, *a); }, false};
  }

  void AddCancel(CLI::App* jobs) {
    CLI::App* c = jobs->add_subcommand("cancel", "Cancel a job (no-op for finished jobs).");
    auto* job = Keep<std::string>();
    c->add_option("JOB", *job, "Name of the job.")->required();
    leaves_[c] = Leaf{[job](const Invocation& inv) { return RunCancel(inv, *job); }, false};
  }

  void AddUpdate(CLI::App* jobs) {
    CLI::App* c = jobs->add_subcommand("update", "Update a job's labels.");
    auto* a = Keep<UpdateArgs>();
    c->add_option("JOB", a->job, "Name of the job.")->required();
    binder_.Add(c, "--update-labels", &a->update_labels, "Labels to add or change: KEY=VALUE,...");
    CLI::Option* remove =
        binder_.Add(c, "--remove-labels", &a->remove_labels, "Label keys to remove: KEY,...");
    CLI::Option* clear = c->add_flag("--clear-labels", a->clear_labels, "Remove all labels.");
    clear->excludes(remove);
    leaves_[c] = Leaf{[a](const Invocation& inv) { return RunUpdate(inv, *a); }, false};
  }

  void AddStreamLogs(CLI::App* jobs) {
    CLI::App* c =
        jobs->add_subcommand("stream-logs", "Show a job's logs, following until it ends.");
    auto* a = Keep<StreamLogsArgs>();
    c->add_option("JOB", a->job, "Name of the job.")->required();
    binder_.Add(c, "--task-name", &a->task_name, "Only this task, e.g. master-replica-0.");
    binder_.Add(c, "--polling-interval", &a->polling_interval,
                "Seconds between polls (default 1; gcloud's default is 60).");
    c->add_flag("--allow-multiline-logs", a->allow_multiline_logs,
                "Print multi-line messages as single records.");
    leaves_[c] = Leaf{[a](const Invocation& inv) { return RunStreamLogs(inv, *a); }, false};
  }

  void AddLogs(CLI::App* jobs) {
    CLI::App* c = jobs->add_subcommand(
        "logs", "Show a job's logs in time order, without following (see stream-logs).");
    auto* a = Keep<LogsArgs>();
    c->add_option("JOB", a->job, "Name of the job.")->required();
    binder_.Add(c, "--tail", &a->tail, "Only the last N lines.");
    binder_.Add(c, "--since", &a->since,
                "Only lines at or after this time: RFC 3339 (2024-01-01T12:00:00Z) or a "
                "duration before now (30s, 10m, 2h, 1d, 1h30m).");
    binder_.Add(c, "--severity", &a->severity,
                "Only lines at least this severe (DEBUG, INFO, WARNING, ERROR, ...).");
    binder_.Add(c, "--task-name", &a->task_name, "Only this task, e.g. master-replica-0.");
    binder_.Add(c, "--trial", &a->trial, "Only this hyperparameter tuning trial, e.g. 3.");
    binder_.Add(c, "--format", &a->format,
                "text (default: stream-logs' tab-separated lines) or json (the entries); with "
                "--download, text (time, severity, task, message) or message.");
    c->add_flag("--allow-multiline-logs", a->allow_multiline_logs,
                "Print multi-line messages as single records.");
    c->add_flag("--download", a->download,
                "Write the whole log (or --task-name, --trial, --severity) as the daemon's "
                "text export, streamed: trainyard jobs logs JOB --download > JOB.log");
    binder_.Add(c, "--search", &a->search,
                "Only the lines containing this text (any case), each prefixed by its line "
                "number.");
    c->add_flag("--match-case", a->match_case, "With --search: letters' case must match.");
    leaves_[c] = Leaf{[a](const Invocation& inv) { return RunJobLogs(inv, *a); }, false};
  }

  // Trainyard additions (the console's routes): a tuning job's trials with their intermediate
  // reports, and the queue.
  void AddTrialsAndQueue(CLI::App* jobs) {
    CLI::App* c = jobs->add_subcommand(
        "trials", "Show a tuning job's trials with their intermediate metric reports.");
    auto* a = Keep<JobTrialsArgs>();
    c->add_option("JOB", a->job, "Name of the job.")->required();
    binder_.Add(c, "--trial", &a->trial, "Only this trial, e.g. 3.");
    binder_.Add(c, "--format", &a->format, "table (default) or json (allMetrics included).");
    c->add_flag("--show-metrics", a->show_metrics,
                "Print each trial's reports (step:value) under its row.");
    leaves_[c] = Leaf{[a](const Invocation& inv) { return RunJobTrials(inv, *a); }, false};
    c = jobs->add_subcommand("queue",
                             "Show what runs (with replicas and GPUs), what waits and why, and the "
                             "node's capacity.");
    auto* q = Keep<JobsQueueArgs>();
    binder_.Add(c, "--page-size", &q->page_size, "Queued jobs to show (default 50, at most 500).");
    binder_.Add(c, "--format", &q->format, "table (default) or json.");
    leaves_[c] = Leaf{[q](const Invocation& inv) { return RunJobsQueue(inv, *q); }, false};
    c = jobs->add_subcommand("history",
                             "Show a job's state changes: when it was queued, admitted, started "
                             "and ended, and why.");
    auto* h = Keep<JobHistoryArgs>();
    c->add_option("JOB", h->job, "Name of the job.")->required();
    binder_.Add(c, "--format", &h->format, "table (default) or json.");
    leaves_[c] = Leaf{[h](const Invocation& inv) { return RunJobHistory(inv, *h); }, false};
  }

  void AddLocalTrain(CLI::App* local) {
    CLI::App* c = local->add_subcommand(
        "train",
        "Run a trainer in the foreground as `python -m MODULE ARGS`, with the TF_CONFIG gcloud "
        "sets; with --distributed, a local cluster of them. Everything after a literal `--` is "
        "passed to the trainer.");
    auto* a = Keep<LocalTrainArgs>();
    binder_.Add(c, "--module-name", &a->module_name, "Python module to run.")->required();
    binder_.Add(c, "--package-path", &a->package_path,
                "Package directory (default: the current directory); the trainer runs in its "
                "parent.");
    binder_.Add(c, "--job-dir", &a->job_dir, "Appended to the trainer's args as --job-dir DIR.");
    c->add_flag("--distributed", a->distributed,
                "Run a local cluster: parameter servers, workers and evaluators in the "
                "background, the primary in the foreground, each with its TF_CONFIG.");
    binder_.Add(c, "--parameter-server-count", &a->parameter_server_count,
                "Number of parameter servers. Ignored without --distributed. Default: 2");
    binder_.Add(c, "--worker-count", &a->worker_count,
                "Number of workers. Ignored without --distributed. Default: 2");
    binder_.Add(c, "--evaluator-count", &a->evaluator_count,
                "Number of evaluators. Ignored without --distributed. Default: 0");
    binder_.Add(c, "--start-port", &a->start_port,
                "First of the parameter-server-count + worker-count + 1 consecutive ports the "
                "cluster uses. Ignored without --distributed. Default: 27182");
    leaves_[c] = Leaf{[a](const Invocation& inv) { return RunLocalTrain(inv, *a); }, true};
  }

  void AddBuckets(CLI::App* buckets) {
    buckets->require_subcommand(1);
    CLI::App* create = buckets->add_subcommand("create", "Create a bucket.");
    auto* name = Keep<std::string>();
    create->add_option("BUCKET", *name, "gs://BUCKET")->required();
    leaves_[create] =
        Leaf{[name](const Invocation& inv) { return RunBucketsCreate(inv, *name); }, false};
    CLI::App* list = buckets->add_subcommand("list", "List the project's buckets.");
    leaves_[list] = Leaf{[](const Invocation& inv) { return RunBucketsList(inv); }, false};
  }

  void AddCopy(CLI::App* parent) {
    CLI::App* c = parent->add_subcommand(
        "cp", "Copy a file to or from a bucket: cp LOCAL gs://B/O or cp gs://B/O LOCAL.");
    auto* src = Keep<std::string>();
    auto* dst = Keep<std::string>();
    c->add_option("SOURCE", *src, "Local file or gs:// object.")->required();
    c->add_option("DESTINATION", *dst, "gs:// object or local path.")->required();
    leaves_[c] =
        Leaf{[src, dst](const Invocation& inv) { return RunCopy(inv, *src, *dst); }, false};
  }

  void AddGcloudConfig(CLI::App* root) {
    CLI::App* c = root->add_subcommand(
        "gcloud-config",
        "Print (or write with --apply) a gcloud configuration and a gsutil boto file that "
        "point Google's gcloud and gsutil at this daemon. See docs/gcloud.md.");
    auto* a = Keep<GcloudConfigArgs>();
    c->add_flag("--apply", a->apply,
                "Write the files: configurations/config_NAME, NAME.boto and NAME.access_token "
                "in $CLOUDSDK_CONFIG (default ~/.config/gcloud).");
    c->add_flag("--activate", a->activate,
                "With --apply, also make the configuration gcloud's active one.");
    binder_.Add(c, "--name", &a->name, "Name of the gcloud configuration (default trainyard).");
    binder_.Add(c, "--tls-endpoint", &a->tls_endpoint,
                "The daemon's TLS listener for gsutil, https://HOST:PORT (default: "
                "$TRAINYARD_TLS_ENDPOINT, else https://127.0.0.1:8471).");
    binder_.Add(c, "--region", &a->region,
                "compute/region, the jobs' region (default: $TRAINYARD_REGION, else "
                "us-central1).");
    leaves_[c] = Leaf{[a](const Invocation& inv) { return RunGcloudConfig(inv, *a); }, false};
  }

  void AddAdmin(CLI::App* admin, const char* name, const char* help, AdminAction action) {
    CLI::App* c = admin->add_subcommand(name, help);
    leaves_[c] = Leaf{[action](const Invocation& inv) { return RunAdmin(inv, action); }, false};
  }

  void AddAdminStop(CLI::App* admin) {
    auto* a = Keep<AdminStopArgs>();
    CLI::App* c = admin->add_subcommand(
        "stop",
        "Stop the trainyardd running on this machine's data dir cleanly (SIGTERM to the pid in "
        "its lock file) and wait until it has exited. Running replicas keep running and are "
        "re-attached when a daemon starts on the data dir again.");
    binder_.Add(c, "--data-dir", &a->data_dir,
                "The daemon's data dir (default: $TRAINYARD_DATA_DIR, else "
                "$XDG_DATA_HOME/trainyard, else ~/.local/share/trainyard).");
    binder_.Add(c, "--timeout", &a->timeout,
                "How long to wait for the daemon to exit, e.g. 30s or 2m (default 60s).");
    leaves_[c] = Leaf{[a](const Invocation& inv) { return RunAdminStop(inv, *a); }, false};
  }

  void AddAdminGc(CLI::App* admin) {
    auto* a = Keep<AdminGcArgs>();
    CLI::App* c = admin->add_subcommand(
        "gc",
        "Remove what the daemon's retention policy allows now (finished jobs' logs, work dirs "
        "and staged packages, unused environments, stored raw logs), and print what went. The "
        "daemon also does this every gc_interval.");
    c->add_flag("--dry-run", a->dry_run, "Print what would be removed; remove nothing.");
    binder_.Add(c, "--format", &a->format, "json: the daemon's report as it is.");
    leaves_[c] = Leaf{[a](const Invocation& inv) { return RunAdminGc(inv, *a); }, false};

    auto* p = Keep<AdminGcArgs>();
    CLI::App* purge = admin->add_subcommand(
        "purge",
        "Delete the records of jobs that finished before a time, with their logs and work "
        "dirs. AI Platform never deletes jobs; this is for operators only.");
    binder_
        .Add(purge, "--finished-before", &p->finished_before,
             "RFC 3339 time (2024-01-31T00:00:00Z), or an age such as 90d or 720h.")
        ->required();
    purge->add_flag("--dry-run", p->dry_run, "Print the jobs that would go; delete nothing.");
    binder_.Add(purge, "--format", &p->format, "json: the daemon's report as it is.");
    leaves_[purge] = Leaf{[p](const Invocation& inv) { return RunAdminPurge(inv, *p); }, false};
  }

  void AddAdminBackup(CLI::App* admin) {
    auto* b = Keep<AdminBackupArgs>();
    CLI::App* c = admin->add_subcommand(
        "backup",
        "Back up this machine's data dir into DIRECTORY while trainyardd keeps running: a "
        "consistent copy of the job store (SQLite's online backup API), then the bucket store "
        "and the data dir's other files (docs/backup.md).");
    c->add_option("DIRECTORY", b->directory, "A new (or empty) directory for the backup.")
        ->required();
    binder_.Add(c, "--data-dir", &b->data_dir,
                "The daemon's data dir (default: $TRAINYARD_DATA_DIR, else "
                "$XDG_DATA_HOME/trainyard, else ~/.local/share/trainyard).");
    binder_.Add(c, "--buckets-dir", &b->buckets_dir,
                "The bucket store's directory, if not <data-dir>/buckets (executor: slurm keeps "
                "it in <slurm.shared_dir>/buckets).");
    leaves_[c] = Leaf{[b](const Invocation& inv) { return RunAdminBackup(inv, *b); }, false};

    auto* r = Keep<AdminRestoreArgs>();
    c = admin->add_subcommand("restore",
                              "Restore a backup made by `trainyard admin backup` into a new data "
                              "dir, for a daemon to start on (docs/backup.md).");
    c->add_option("BACKUP", r->backup, "The backup's directory.")->required();
    binder_.Add(c, "--data-dir", &r->data_dir,
                "The data dir to restore into: new or empty (required).");
    binder_.Add(c, "--buckets-dir", &r->buckets_dir,
                "Where to restore the bucket store, if not <data-dir>/buckets.");
    leaves_[c] = Leaf{[r](const Invocation& inv) { return RunAdminRestore(inv, *r); }, false};
  }

  Binder binder_;
  std::vector<std::shared_ptr<void>> keep_;
  std::map<CLI::App*, Leaf> leaves_;
};

// The chain of parsed subcommands below root, outermost first.
std::vector<CLI::App*> ParsedChain(CLI::App* root) {
  std::vector<CLI::App*> chain;
  CLI::App* cur = root;
  while (true) {
    auto subs = cur->get_subcommands();
    if (subs.empty()) break;
    cur = subs.front();
    chain.push_back(cur);
  }
  return chain;
}

std::vector<const CLI::App*> AllSubcommands(const CLI::App* app) {
  std::function<bool(const CLI::App*)> all = [](const CLI::App*) { return true; };
  return app->get_subcommands(all);
}

std::string JoinNames(CLI::App* root, const std::vector<CLI::App*>& chain, char sep) {
  std::string out = root->get_name();
  for (CLI::App* a : chain) out += std::string(1, sep) + a->get_name();
  return out;
}

}  // namespace

int RunCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
           bool err_is_tty) {
  // Split at the first literal `--`: what follows is the trainer's (gcloud's USER_ARGS).
  std::vector<std::string> cli_args;
  Invocation inv;
  inv.out = &out;
  inv.err = &err;
  inv.err_is_tty = err_is_tty;
  for (size_t i = 1; i < argv.size(); ++i) {
    if (!inv.has_user_args && argv[i] == "--") {
      inv.has_user_args = true;
      continue;
    }
    (inv.has_user_args ? inv.user_args : cli_args).push_back(argv[i]);
  }

  CLI::App app("Trainyard: AI Platform Training's job service, self-hosted.", "trainyard");
  app.fallthrough();
  app.set_version_flag("--version", std::string("trainyard ") + TRAINYARD_VERSION);
  app.add_option("--endpoint", inv.globals.endpoint,
                 "Daemon URL (default: $TRAINYARD_ENDPOINT, else http://127.0.0.1:8470).");
  app.add_option("--project", inv.globals.project,
                 "Project (default: $TRAINYARD_PROJECT, else `default`).");
  app.add_option("--token-file", inv.globals.token_file,
                 "File whose first line is the API token (default: $TRAINYARD_TOKEN, "
                 "$TRAINYARD_TOKEN_FILE, else token_file in the config file).");
  app.add_option("--token", inv.globals.token,
                 "The API token itself (visible to other users in ps; prefer --token-file).");
  app.add_flag("-q,--quiet", inv.globals.quiet, "Accepted for gcloud compatibility; no prompts.");
  app.footer(
      "Environment: TRAINYARD_ENDPOINT, TRAINYARD_PROJECT, TRAINYARD_TOKEN, TRAINYARD_TOKEN_FILE, "
      "TRAINYARD_REGION, TRAINYARD_PYTHON, TRAINYARD_TLS_ENDPOINT, TRAINYARD_CLI_CONFIG. See "
      "docs/cli.md.");
  CommandTree tree;
  tree.Build(&app);

  std::vector<std::string> reversed(cli_args.rbegin(), cli_args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      return app.exit(e, out, err);
    }
    std::vector<CLI::App*> chain = ParsedChain(&app);
    inv.command_path = JoinNames(&app, chain, '.');
    CLI::App* last = chain.empty() ? &app : chain.back();
    std::string message = e.what();
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && tree.Find(last) == nullptr &&
        message.find("subcommand") != std::string::npos) {
      message = "Command name argument expected.";
    }
    err << "ERROR: (" << inv.command_path << ") " << message << "\n";
    if (tree.Find(last) == nullptr) {
      err << "\nAvailable commands for " << JoinNames(&app, chain, ' ') << ":\n\n";
      for (const CLI::App* sub : AllSubcommands(last)) {
        err << "      " << sub->get_name() << "\n";
      }
      err << "\n";
    }
    err << "For detailed information on this command and its flags, run:\n  "
        << JoinNames(&app, chain, ' ') << " --help\n";
    return kExitUsage;
  }

  tree.Finalize();
  std::vector<CLI::App*> chain = ParsedChain(&app);
  inv.command_path = JoinNames(&app, chain, '.');
  // The user prefix is root plus "ai-platform" when the user went through it.
  inv.user_prefix = "trainyard";
  if (!chain.empty() && chain.front()->get_name() == "ai-platform") {
    inv.user_prefix += " ai-platform";
  }
  const Leaf* leaf = chain.empty() ? nullptr : tree.Find(chain.back());
  if (leaf == nullptr) {
    err << "ERROR: (" << inv.command_path << ") Command name argument expected.\n";
    return kExitUsage;
  }
  if (inv.has_user_args && !leaf->accepts_user_args) {
    std::string extra;
    for (const auto& a : inv.user_args) extra += " " + a;
    err << "ERROR: (" << inv.command_path << ") unrecognized arguments: --" << extra << "\n";
    return kExitUsage;
  }
  // A token file that was named must be readable (a missing one is not "no credential").
  const char* env_file = std::getenv("TRAINYARD_TOKEN_FILE");
  for (const std::string& file :
       {inv.globals.token_file, std::string(env_file != nullptr ? env_file : "")}) {
    if (!file.empty() && ReadTokenFile(file).empty()) {
      err << "ERROR: (" << inv.command_path << ") Cannot read an API token from [" << file
          << "] (missing, unreadable or empty).\n";
      return kExitError;
    }
  }
  return leaf->run(inv);
}

}  // namespace trainyard::cli
