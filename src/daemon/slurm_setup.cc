#include "slurm_setup.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "trainyard/core/log.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"
#include "trainyard/executor/subprocess.h"

namespace trainyard::daemon {

namespace {

constexpr Duration kTimeout = 20 * kMicrosPerSecond;

Result<executor::CommandResult> Slurm(const std::vector<std::string>& argv) {
  auto r = executor::RunCommand(argv, {}, kTimeout);
  if (!r.ok() && r.status().code() == StatusCode::kNotFound) {
    return FailedPrecondition("executor: slurm needs the Slurm client commands on PATH (" +
                              argv[0] + " not found); install slurm-client on this machine");
  }
  if (!r.ok() && r.status().code() == StatusCode::kDeadlineExceeded) {
    // A client that cannot read its configuration, or reach the controller, retries for a
    // minute before it says so.
    const char* conf = std::getenv("SLURM_CONF");
    return DeadlineExceeded(
        r.status().message() + " (SLURM_CONF " +
        (conf != nullptr ? std::string("is ") + conf : std::string("is not set")) +
        "; check that it names the cluster's slurm.conf and that slurmctld "
        "answers)");
  }
  return r;
}

// GPUs in a GRES list such as "gpu:fake:2,gpu:a100:4(S:0-1)" or "(null)".
int CountGpus(const std::string& gres) {
  int n = 0;
  for (const std::string& item : Split(gres, ',')) {
    std::string g = Trim(item);
    if (const size_t paren = g.find('('); paren != std::string::npos) g = g.substr(0, paren);
    if (!StartsWith(g, "gpu")) continue;
    const size_t colon = g.rfind(':');
    if (colon == std::string::npos) continue;
    n += std::atoi(g.c_str() + colon + 1);
  }
  return n;
}

}  // namespace

Status JudgeAccountCheck(const std::string& setting, const std::string& account,
                         const std::string& qos, const executor::CommandResult& r,
                         std::string* warning) {
  warning->clear();
  if (r.exit_code == 0) return Status::Ok();
  const std::string err = executor::CommandError(r);
  std::string lower = err;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Slurm's words for an account it does not let this user submit to (slurmdbd with
  // AccountingStorageEnforce=associations), and for a QOS the association may not use.
  if (lower.find("invalid account") != std::string::npos ||
      lower.find("association") != std::string::npos) {
    return InvalidArgument(setting + ": Slurm refuses the account " + account + " (" + err + ")");
  }
  if (lower.find("invalid qos") != std::string::npos) {
    return InvalidArgument("slurm.qos: Slurm refuses the QOS " + qos + " for the account " +
                           account + " (from " + setting + "; " + err + ")");
  }
  // Anything else (nodes not yet registered after a controller restart, ...) is not about the
  // account: it cannot be checked now, and Slurm checks it again at every submission.
  *warning = "could not check the account " + account + " (" + setting +
             ") with sbatch --test-only: " + err +
             "; not a refusal of the account, which Slurm checks again when a job is submitted";
  return Status::Ok();
}

Result<SinfoTotals> SumSinfo(const std::string& text, const std::string& partition) {
  SinfoTotals t;
  std::set<std::string> partitions;
  std::set<std::string> nodes;
  std::string wanted = partition;
  // The default partition is the one sinfo marks with '*'.
  for (const std::string& line : Split(text, '\n')) {
    auto f = Split(Trim(line), '|');
    if (f.size() < 5) continue;
    std::string p = f[1];
    if (EndsWith(p, "*")) {
      p.pop_back();
      if (wanted.empty()) wanted = p;
    }
    partitions.insert(p);
  }
  if (wanted.empty() || partitions.count(wanted) == 0) {
    std::string have;
    for (const auto& p : partitions) have += (have.empty() ? "" : ", ") + p;
    return NotFound(wanted.empty() ? "the cluster has no default partition (set slurm.partition; "
                                     "partitions: " +
                                         have + ")"
                                   : "slurm.partition " + wanted +
                                         " is not a partition of this cluster (partitions: " +
                                         (have.empty() ? "none" : have) + ")");
  }
  t.partition = wanted;
  for (const std::string& line : Split(text, '\n')) {
    auto f = Split(Trim(line), '|');
    if (f.size() < 5) continue;
    std::string p = f[1];
    if (EndsWith(p, "*")) p.pop_back();
    if (p != wanted || !nodes.insert(f[0]).second) continue;
    ++t.nodes;
    t.cpus += std::atoll(f[2].c_str());
    t.memory_mb += std::atoll(f[3].c_str());
    t.gpus += CountGpus(f[4]);
  }
  return t;
}

Status CheckGpuTypes(const std::string& text, const std::vector<std::string>& partitions,
                     const std::map<std::string, std::string>& gpu_types) {
  std::set<std::string> types;  // the typed GPUs the partitions' nodes have
  std::set<std::string> wanted(partitions.begin(), partitions.end());
  for (const std::string& line : Split(text, '\n')) {
    auto f = Split(Trim(line), '|');
    if (f.size() < 5) continue;
    std::string p = f[1];
    if (EndsWith(p, "*")) p.pop_back();
    if (wanted.count(p) == 0) continue;
    for (const std::string& item : Split(f[4], ',')) {
      std::string g = Trim(item);
      if (const size_t paren = g.find('('); paren != std::string::npos) g = g.substr(0, paren);
      auto parts = Split(g, ':');
      if (parts.size() == 3 && parts[0] == "gpu") types.insert(parts[1]);  // gpu:TYPE:COUNT
    }
  }
  for (const auto& [name, type] : gpu_types) {
    if (types.count(type) != 0) continue;
    std::string have;
    for (const auto& t : types) have += (have.empty() ? "" : ", ") + t;
    std::string where;
    for (const auto& p : wanted) where += (where.empty() ? "" : ", ") + p;
    return InvalidArgument("slurm.gpu_types: " + name + " maps to the GPU type " + type +
                           ", which no node of partition" + (wanted.size() > 1 ? "s " : " ") +
                           where + " has (their GPU types: " + (have.empty() ? "none" : have) +
                           ")");
  }
  return Status::Ok();
}

Result<SlurmSetup> PrepareSlurm(const DaemonConfig& config, const std::string& jobs_dir) {
  const auto& sc = config.slurm;
  if (sc.shared_dir.empty()) {
    return InvalidArgument(
        "executor: slurm needs slurm.shared_dir, a directory mounted at the same path on this "
        "machine and every node");
  }
  if (Status st = MakeDirs(jobs_dir); !st.ok()) {
    return InvalidArgument("slurm.shared_dir " + sc.shared_dir +
                           " is not writable: " + st.message());
  }
  const std::string probe = sc.shared_dir + "/.trainyard-write-test";
  if (Status st = WriteFileAtomic(probe, "ok\n", /*durable=*/false); !st.ok()) {
    return InvalidArgument("slurm.shared_dir " + sc.shared_dir +
                           " is not writable: " + st.message());
  }
  ::unlink(probe.c_str());
  for (const char* cmd : {"sbatch", "squeue", "scancel", "srun"}) {
    TRAINYARD_ASSIGN_OR_RETURN(auto r, Slurm({cmd, "--version"}));
    if (r.exit_code != 0) {
      return FailedPrecondition(std::string("executor: slurm: ") + cmd +
                                " --version failed: " + executor::CommandError(r));
    }
  }
  TRAINYARD_ASSIGN_OR_RETURN(auto ping, Slurm({"scontrol", "ping"}));
  if (ping.exit_code != 0 || ping.out.find("UP") == std::string::npos) {
    return Unavailable("executor: slurm: the Slurm controller does not answer (scontrol ping: " +
                       executor::CommandError(ping) + "); check SLURM_CONF and slurmctld");
  }
  TRAINYARD_ASSIGN_OR_RETURN(auto info, Slurm({"sinfo", "-h", "-N", "-o", "%N|%P|%c|%m|%G"}));
  if (info.exit_code != 0) {
    return Unavailable("executor: slurm: sinfo failed: " + executor::CommandError(info));
  }
  TRAINYARD_ASSIGN_OR_RETURN(SinfoTotals totals, SumSinfo(info.out, sc.partition));

  // Heterogeneous jobs are started by the backfill scheduler only.
  TRAINYARD_ASSIGN_OR_RETURN(auto config_dump, Slurm({"scontrol", "show", "config"}));
  bool backfill = false;
  std::string sacct;  // how Slurm's verdict on a job gone from squeue is read
  for (const std::string& line : Split(config_dump.out, '\n')) {
    if (StartsWith(Trim(line), "SchedulerType")) {
      backfill = line.find("sched/backfill") != std::string::npos;
    }
    if (StartsWith(Trim(line), "AccountingStorageType") &&
        line.find("slurmdbd") != std::string::npos) {
      sacct = "db";
    }
    if (StartsWith(Trim(line), "JobCompType") && line.find("filetxt") != std::string::npos &&
        sacct.empty()) {
      sacct = "jobcomp";
    }
  }
  TRAINYARD_ASSIGN_OR_RETURN(auto project_accounts, ParseKeyValueList(sc.project_accounts));
  // Partitions jobs may pick by label must exist.
  for (const std::string& p : sc.label_partitions) {
    auto t = SumSinfo(info.out, p);
    if (!t.ok()) {
      std::string msg = t.status().message();
      if (size_t at = msg.find(" (partitions: "); at != std::string::npos) msg = msg.substr(at);
      return InvalidArgument("slurm.label_partitions: " + p +
                             " is not a partition of this cluster" + msg);
    }
  }
  // Every GPU type jobs may ask for must be on some node where they run.
  {
    std::vector<std::string> partitions = sc.label_partitions;
    partitions.push_back(totals.partition);
    TRAINYARD_ASSIGN_OR_RETURN(auto gpu_types, ParseKeyValueList(sc.gpu_types));
    TRAINYARD_RETURN_IF_ERROR(CheckGpuTypes(info.out, partitions, gpu_types));
  }
  // Every account Slurm will be given must be one it takes (with slurmdbd and
  // AccountingStorageEnforce it refuses unknown ones; without, it takes any): one
  // `sbatch --test-only` per distinct account, which submits nothing.
  std::map<std::string, std::string> accounts;  // account -> the setting that names it
  if (!sc.account.empty()) accounts.emplace(sc.account, "slurm.account");
  for (const auto& [project, account] : project_accounts) {
    accounts.emplace(account, "slurm.project_accounts (project " + project + ")");
  }
  for (const auto& [account, setting] : accounts) {
    std::vector<std::string> argv = {"sbatch", "--test-only", "--account=" + account,
                                     "--output=/dev/null", "--time=1"};
    if (!sc.partition.empty()) argv.push_back("--partition=" + sc.partition);
    if (!sc.qos.empty()) argv.push_back("--qos=" + sc.qos);
    argv.insert(argv.end(), {"--wrap", "true"});
    TRAINYARD_ASSIGN_OR_RETURN(auto r, Slurm(argv));
    std::string warning;
    TRAINYARD_RETURN_IF_ERROR(JudgeAccountCheck(setting, account, sc.qos, r, &warning));
    if (!warning.empty()) TY_LOG_WARN("slurm", "{}", warning);
  }

  SlurmSetup setup;
  executor::SlurmOptions& o = setup.executor;
  o.heterogeneous = sc.heterogeneous;
  o.het_components_max = totals.nodes;
  o.backfill = backfill;
  o.launcher_path = config.launcher_path;
  o.jobs_dir = jobs_dir;
  o.partition = sc.partition;
  o.account = sc.account;
  o.qos = sc.qos;
  o.extra_sbatch_args = sc.extra_sbatch_args;
  if (auto m = ParseKeyValueList(sc.gpu_types); m.ok()) o.gpu_types = *m;
  o.cpu_scale = sc.cpu_scale;
  o.memory_scale = sc.memory_scale;
  o.port_range = sc.port_range;
  o.poll_interval = ParseDuration(sc.poll_interval).value();
  o.time_limit_margin = ParseDuration(sc.time_limit_margin).value();
  o.cancel_grace = ParseDuration(config.cancel_grace).value();
  char tag[9];
  std::snprintf(tag, sizeof tag, "%08x",
                static_cast<unsigned>(std::hash<std::string>{}(jobs_dir)&0xffffffffu));
  o.name_prefix = std::string("ty-") + tag + "-";
  o.default_partition = totals.partition;
  o.project_accounts = project_accounts;
  o.label_partitions = sc.label_partitions;
  o.sacct = sacct;
  o.cancel_orphans = sc.cancel_orphans;

  // In machine-type units: what the partition has, through the scales.
  setup.capacity.cpu_millis = static_cast<int64_t>(totals.cpus * 1000 / sc.cpu_scale);
  setup.capacity.memory_bytes =
      static_cast<int64_t>(static_cast<double>(totals.memory_mb) * 1048576.0 / sc.memory_scale);
  setup.capacity.gpus = totals.gpus;
  setup.capacity.max_submitted = sc.max_submitted_jobs;
  setup.summary = "partition " + totals.partition + ": " + std::to_string(totals.nodes) +
                  " nodes, " + std::to_string(totals.cpus) + " CPUs, " +
                  std::to_string(totals.memory_mb) + " MiB, " + std::to_string(totals.gpus) +
                  " GPUs; heterogeneous jobs " +
                  (sc.heterogeneous == "never" ? std::string("off")
                   : backfill || sc.heterogeneous == "always"
                       ? "up to " + std::to_string(totals.nodes) + " shapes"
                       : std::string("off (SchedulerType is not sched/backfill)")) +
                  "; work dirs in " + jobs_dir + "; Slurm's verdict after squeue: " +
                  (sacct == "db"        ? std::string("sacct")
                   : sacct == "jobcomp" ? std::string("sacct -c (jobcomp/filetxt)")
                                        : std::string("none (no accounting)"));
  return setup;
}

int RunSlurmCheck(const DaemonConfig& config, const std::string& jobs_dir, std::ostream& out) {
  auto setup = PrepareSlurm(config, jobs_dir);
  if (!setup.ok()) {
    out << "FAIL  start-up checks: " << setup.status().message() << "\n";
    return 1;
  }
  out << "ok    client, controller, partition, shared_dir: " << setup->summary << "\n";
  const auto& sc = config.slurm;
  char token[17];
  std::snprintf(
      token, sizeof token, "%016llx",
      static_cast<unsigned long long>(NowMicros()) ^ (0x9e3779b97f4a7c15ULL * ::getpid()));
  const std::string probe = sc.shared_dir + "/.trainyard-slurm-check-" + token;
  std::vector<std::string> argv = {"srun",
                                   "--ntasks=1",
                                   "--nodes=1",
                                   "--time=2",
                                   "--job-name=trainyard-slurm-check",
                                   "--quit-on-interrupt"};
  if (!sc.partition.empty()) argv.push_back("--partition=" + sc.partition);
  if (!sc.account.empty()) argv.push_back("--account=" + sc.account);
  if (!sc.qos.empty()) argv.push_back("--qos=" + sc.qos);
  // On the node: the launcher runs, and what it prints lands in the shared directory.
  argv.insert(argv.end(), {"/bin/sh", "-c", "\"$1\" --version > \"$2\" && hostname >> \"$2\"",
                           "check", config.launcher_path, probe});
  const int64_t start = MonotonicMicros();
  auto r = executor::RunCommand(argv, {}, 120 * kMicrosPerSecond);
  if (!r.ok() || r->exit_code != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    out << "FAIL  a 1-task job (" << cmd
        << "): " << (r.ok() ? executor::CommandError(*r) : r.status().message()) << "\n";
    ::unlink(probe.c_str());
    return 1;
  }
  auto text = ReadFile(probe);
  ::unlink(probe.c_str());
  if (!text.ok()) {
    out << "FAIL  the 1-task job wrote " << probe
        << " on its node, and this host cannot read it: slurm.shared_dir is not shared ("
        << text.status().message() << ")\n";
    return 1;
  }
  auto lines = Split(Trim(*text), '\n');
  out << "ok    a 1-task job ran " << config.launcher_path << " ("
      << (lines.empty() ? "" : Trim(lines[0])) << ") on "
      << (lines.size() > 1 ? Trim(lines[1]) : std::string("?")) << " and wrote to slurm.shared_dir "
      << "in " << FormatDuration(MonotonicMicros() - start) << "\n";
  out << "Slurm is ready for executor: slurm\n";
  return 0;
}

}  // namespace trainyard::daemon
