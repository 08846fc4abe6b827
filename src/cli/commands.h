// The `trainyard` command handlers. cli_app.cc parses the command line with CLI11 into these
// argument structs (unset optional = flag not given) and calls the matching Run* function.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli_context.h"

namespace trainyard::cli {

// Runs the command line (argv[0] is ignored); returns the process exit status.
int RunCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
           bool err_is_tty);

struct SubmitTrainingArgs {
  std::string job;
  std::optional<std::string> package_path;
  std::optional<std::string> packages;  // comma-separated
  std::optional<std::string> module_name;
  std::optional<std::string> region;
  std::optional<std::string> config;
  std::optional<std::string> staging_bucket;
  std::optional<std::string> job_dir;
  std::optional<std::string> scale_tier;
  std::optional<std::string> master_machine_type;
  std::optional<std::string> worker_machine_type;
  std::optional<std::string> worker_count;
  std::optional<std::string> parameter_server_machine_type;
  std::optional<std::string> parameter_server_count;
  std::optional<std::string> master_accelerator;
  std::optional<std::string> worker_accelerator;
  std::optional<std::string> parameter_server_accelerator;
  std::optional<std::string> master_image_uri;
  std::optional<std::string> worker_image_uri;
  std::optional<std::string> parameter_server_image_uri;
  std::optional<std::string> use_chief_in_tf_config;
  std::optional<std::string> runtime_version;
  std::optional<std::string> python_version;
  std::optional<std::string> labels;
  std::optional<std::string> service_account;
  std::optional<std::string> kms_key, kms_keyring, kms_location, kms_project;
  bool enable_web_access = false;
  bool stream_logs = false;
  bool async = false;
  std::optional<std::string> polling_interval;
  std::optional<std::string> format;
};
int RunSubmitTraining(const Invocation& inv, const SubmitTrainingArgs& args);

struct DescribeArgs {
  std::string job;
  bool summarize = false;
  std::optional<std::string> format;
};
int RunDescribe(const Invocation& inv, const DescribeArgs& args);

struct ListArgs {
  std::optional<std::string> filter;
  std::optional<std::string> limit;
  std::optional<std::string> page_size;
  std::optional<std::string> sort_by;
  std::optional<std::string> format;
};
int RunList(const Invocation& inv, const ListArgs& args);

int RunCancel(const Invocation& inv, const std::string& job);

struct UpdateArgs {
  std::string job;
  std::optional<std::string> update_labels;
  std::optional<std::string> remove_labels;
  bool clear_labels = false;
};
int RunUpdate(const Invocation& inv, const UpdateArgs& args);

struct StreamLogsArgs {
  std::string job;
  std::optional<std::string> task_name;
  std::optional<std::string> polling_interval;
  bool allow_multiline_logs = false;
};
int RunStreamLogs(const Invocation& inv, const StreamLogsArgs& args);

struct LocalTrainArgs {
  std::optional<std::string> module_name;
  std::optional<std::string> package_path;
  std::optional<std::string> job_dir;
  bool distributed = false;
  std::optional<std::string> parameter_server_count;
  std::optional<std::string> worker_count;
  std::optional<std::string> evaluator_count;
  std::optional<std::string> start_port;
};
// In local_train.cc, with the TF_CONFIG and environment builders (local_train.h).
int RunLocalTrain(const Invocation& inv, const LocalTrainArgs& args);

int RunBucketsCreate(const Invocation& inv, const std::string& bucket_uri);
int RunBucketsList(const Invocation& inv);
int RunCopy(const Invocation& inv, const std::string& source, const std::string& destination);

struct GcloudConfigArgs {
  bool apply = false;
  bool activate = false;
  std::optional<std::string> name;
  std::optional<std::string> tls_endpoint;
  std::optional<std::string> region;
};
// Prints, or with --apply writes, the gcloud configuration and gsutil boto file that point
// Google's clients at the daemon (gcloud_config.h, docs/gcloud.md).
int RunGcloudConfig(const Invocation& inv, const GcloudConfigArgs& args);

enum class AdminAction { kPause, kResume, kStatus };
int RunAdmin(const Invocation& inv, AdminAction action);

struct AdminStopArgs {
  std::optional<std::string> data_dir;  // default: as trainyardd's (TRAINYARD_DATA_DIR, ...)
  std::optional<std::string> timeout;   // a duration, default 60s
};
// Sends SIGTERM to the trainyardd holding the data dir's lock (data_dir_lock.h) and waits until
// it has released the lock. A data dir no daemon holds is not an error (nothing to stop).
int RunAdminStop(const Invocation& inv, const AdminStopArgs& args);

struct AdminGcArgs {
  bool dry_run = false;
  std::optional<std::string> format;  // "json" = the daemon's report as is
  // purge only: RFC 3339 time, or a duration ago (e.g. 90d, 720h)
  std::optional<std::string> finished_before;
};
// Asks the daemon to garbage-collect by its retention policy (or, with --dry-run, what it
// would) and prints what was removed.
int RunAdminGc(const Invocation& inv, const AdminGcArgs& args);
// Asks the daemon to delete the records of jobs that finished before a time.
int RunAdminPurge(const Invocation& inv, const AdminGcArgs& args);

// --- authentication and IAM (auth_commands.cc, docs/security.md) ---------------------------

enum class AuthAdminAction {
  kCreatePrincipal,
  kListPrincipals,
  kDisablePrincipal,
  kEnablePrincipal,
  kCreateToken,
  kListTokens,
  kRevokeToken,
  kGetProjectPolicy,
  kSetProjectPolicy,
  kAddProjectBinding,
  kRemoveProjectBinding,
  kGetBucketPolicy,
  kSetBucketPolicy,
  kAddBucketBinding,
  kRemoveBucketBinding,
  kAudit,
  kRoles,
  kWhoAmI,
};
struct AuthAdminArgs {
  std::string email;
  bool service_account = false;
  bool admin = false;
  std::optional<std::string> description;
  std::optional<std::string> ttl;
  std::optional<std::string> output_file;
  std::string token_id;
  std::string resource;  // project or bucket
  std::string policy_file;
  std::string member;
  std::string role;
};
int RunAuthAdmin(const Invocation& inv, AuthAdminAction action, const AuthAdminArgs& args);

// The CLI's config file: $TRAINYARD_CLI_CONFIG, else $XDG_CONFIG_HOME/trainyard/cli.conf, else
// ~/.config/trainyard/cli.conf. INI: endpoint, project, token_file (any section).
struct CliConfig {
  std::string endpoint;
  std::string project;
  std::string token_file;
};
std::string CliConfigPath();
CliConfig ReadCliConfig();
// <data dir>/admin-token of a daemon on this machine with the default data dir
// ($TRAINYARD_DATA_DIR, else $XDG_DATA_HOME/trainyard, else ~/.local/share/trainyard): the
// credential of last resort for a loopback endpoint (whoever can read it is the administrator).
std::string LocalAdminTokenFile();
// The first line of `path` without surrounding blanks; "" when path is "" or unreadable.
std::string ReadTokenFile(const std::string& path);

struct AdminBackupArgs {
  std::string directory;                   // the backup's directory (new or empty)
  std::optional<std::string> data_dir;     // default: as trainyardd's
  std::optional<std::string> buckets_dir;  // default: <data_dir>/buckets
};
// An online backup of the data dir (store/backup.h, docs/backup.md): the daemon may run.
int RunAdminBackup(const Invocation& inv, const AdminBackupArgs& args);

struct AdminRestoreArgs {
  std::string backup;                      // a directory `admin backup` wrote
  std::optional<std::string> data_dir;     // required: the new (empty) data dir
  std::optional<std::string> buckets_dir;  // default: <data_dir>/buckets
};
int RunAdminRestore(const Invocation& inv, const AdminRestoreArgs& args);

// trainyard jobs trials JOB / trainyard jobs queue (console_commands.cc, docs/cli.md).
struct JobTrialsArgs {
  std::string job;
  std::optional<std::string> trial;
  std::optional<std::string> format;  // table (default) or json
  bool show_metrics = false;
};
int RunJobTrials(const Invocation& inv, const JobTrialsArgs& args);

// trainyard jobs history JOB: the job's state changes (GET …/jobs/J/history).
struct JobHistoryArgs {
  std::string job;
  std::optional<std::string> format;  // table (default) or json
};
int RunJobHistory(const Invocation& inv, const JobHistoryArgs& args);

struct JobsQueueArgs {
  std::optional<std::string> page_size;
  std::optional<std::string> format;  // table (default) or json
};
int RunJobsQueue(const Invocation& inv, const JobsQueueArgs& args);

}  // namespace trainyard::cli
