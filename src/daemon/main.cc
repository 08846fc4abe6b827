// trainyardd: the composition root. Parses settings, builds the store, bucket store, executor,
// scheduler and API server, recovers unfinished jobs, and serves until SIGTERM or SIGINT.
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <tuple>

#include "config.h"
#include "data_dir_lock.h"
#include "gc.h"
#include "ops.h"
#include "python_support.h"
#include "slurm_setup.h"
#include "trainyard/api/api_server.h"
#include "trainyard/auth/auth_store.h"
#include "trainyard/core/failpoint.h"
#include "trainyard/core/log.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"
#include "trainyard/executor/cgroups.h"
#include "trainyard/executor/executor.h"
#include "trainyard/executor/slurm.h"
#include "trainyard/scheduler/job_service.h"
#include "trainyard/storage/bucket_store.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::daemon {
namespace {

// The node's capacity for admission: detected or configured CPUs, memory and GPUs, with the
// overcommit factors applied to CPUs and memory (never to GPUs).
scheduler::NodeCapacity NodeFromConfig(const DaemonConfig& config) {
  scheduler::NodeCapacity node;
  node.cpus = config.node_cpus;
  if (node.cpus <= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    node.cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    if (node.cpus <= 0) node.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  }
  if (!config.node_memory.empty()) {
    node.physical_memory_bytes = ParseByteSize(config.node_memory).value();
  } else {
    node.physical_memory_bytes =
        static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  }
  node.cpu_overcommit = config.cpu_overcommit;
  node.memory_overcommit = config.memory_overcommit;
  node.cpu_millis = static_cast<int64_t>(node.cpus * 1000.0 * config.cpu_overcommit);
  node.memory_bytes = static_cast<int64_t>(static_cast<double>(node.physical_memory_bytes) *
                                           config.memory_overcommit);
  std::string gpu_note;
  if (config.gpus == "auto") {
    node.gpus = scheduler::DetectGpus(&gpu_note);
  } else {
    node.gpus = scheduler::ParseGpuList(config.gpus).value();
    gpu_note = "configured";
  }
  std::string gpu_text;
  for (const auto& g : node.gpus) {
    gpu_text += (gpu_text.empty() ? "" : ", ") + std::to_string(g.index) + ":" + g.type;
    if (!g.name.empty()) gpu_text += " (" + g.name + ")";
  }
  TY_LOG_INFO("daemon",
              "node capacity: {} CPUs x {} overcommit, {:.1f} GiB x {} overcommit, {} GPU(s){}{}",
              node.cpus, config.cpu_overcommit,
              static_cast<double>(node.physical_memory_bytes) / (1LL << 30),
              config.memory_overcommit, node.gpus.size(), gpu_text.empty() ? "" : ": ",
              gpu_text.empty() ? " (" + gpu_note + ")" : gpu_text);
  return node;
}

// Executor events reach the scheduler, which is built after the executor.
class ListenerProxy : public executor::ExecutorListener {
 public:
  void Set(executor::ExecutorListener* target) { target_ = target; }
  void OnReplicaAllocated(const executor::ReplicaKey& key) override {
    target_->OnReplicaAllocated(key);
  }
  void OnReplicaRunning(const executor::ReplicaKey& key) override {
    target_->OnReplicaRunning(key);
  }
  Status OnReplicaLogs(std::span<model::LogEntry> entries) override {
    return target_->OnReplicaLogs(entries);
  }
  void OnReplicaMetrics(const executor::ReplicaKey& key,
                        std::span<const executor::MetricRecord> records, bool ended) override {
    target_->OnReplicaMetrics(key, records, ended);
  }
  void OnReplicaExit(const executor::ReplicaKey& key, const executor::ReplicaExit& exit) override {
    target_->OnReplicaExit(key, exit);
  }

 private:
  executor::ExecutorListener* target_ = nullptr;
};

[[noreturn]] void Fatal(const std::string& message) {
  std::fprintf(stderr, "trainyardd: %s\n", message.c_str());
  std::exit(1);
}

int Run(int argc, char** argv) {
  CLI::App app{"trainyardd: the Trainyard daemon (AI Platform Training's ml v1 API, served here)"};
  std::string config_file, listen, data_dir, log_level;
  bool paused = false, print_config = false, config_reference = false, version = false;
  app.add_option("--config", config_file, "YAML config file (also TRAINYARD_CONFIG)");
  app.add_option("--listen", listen, "HOST:PORT to listen on (default 127.0.0.1:8470)");
  app.add_option("--data-dir", data_dir, "data directory (default ~/.local/share/trainyard)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
  std::string pidfile;
  app.add_option("--pidfile", pidfile, "write the daemon's pid here (removed on a clean exit)");
  app.add_flag("--admission-paused", paused, "start with admission paused");
  app.add_flag("--print-config", print_config, "print the effective configuration and exit");
  app.add_flag("--config-reference", config_reference, "print the settings table and exit");
  bool slurm_check = false;
  app.add_flag("--slurm-check", slurm_check,
               "check that executor: slurm can work (client, controller, partition, shared "
               "directory, a 1-task job on a node) and exit");
  app.add_flag("--version", version, "print the version and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (version) {
    std::cout << "trainyardd " TRAINYARD_VERSION "\n";
    return 0;
  }
  if (config_reference) {
    std::cout << ConfigReference();
    return 0;
  }

  DaemonConfig config;
  if (config_file.empty()) {
    if (const char* f = std::getenv("TRAINYARD_CONFIG")) config_file = f;
  }
  if (!config_file.empty()) {
    if (Status st = ApplyConfigFile(config_file, config); !st.ok()) Fatal(st.message());
  }
  if (Status st = ApplyEnvironment(config); !st.ok()) Fatal(st.message());
  if (!listen.empty()) {
    if (Status st = SetConfigValue(config, "listen", listen); !st.ok()) Fatal(st.message());
  }
  if (!data_dir.empty()) config.data_dir = data_dir;
  if (!log_level.empty()) config.log_level = log_level;
  if (paused) config.admission_paused = true;
  if (Status st = FinalizeConfig(config); !st.ok()) Fatal(st.message());
  if (slurm_check) {
    const std::string shared =
        config.slurm.shared_dir.empty() ? config.data_dir : config.slurm.shared_dir;
    return RunSlurmCheck(config, shared + "/jobs", std::cout);
  }
  if (print_config) {
    std::cout << DumpConfig(config);
    return 0;
  }
  SetLogLevel(config.log_level);
  SetLogFormat(config.log_format);
  // Failpoints are for fault tests (docs/faults.md): a typo must not pass for "none armed".
  if (!failpoint::ConfigError().empty()) Fatal(failpoint::ConfigError());
  if (std::string armed = failpoint::Describe(); !armed.empty()) {
    TY_LOG_WARN("daemon", "failpoints armed (TRAINYARD_FAILPOINTS, for fault tests only): {}",
                armed);
  }

  // One daemon per data dir, held until exit: refuse before touching the store or any job.
  auto lock = DataDirLock::Acquire(config.data_dir);
  if (!lock.ok()) Fatal(lock.status().message());
  if (!pidfile.empty()) {
    if (Status st = (*lock)->WritePidfile(pidfile); !st.ok()) Fatal(st.message());
  }

  // Block the stop signals in every thread; one thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  const std::string& dd = config.data_dir;
  for (const char* sub : {"", "/buckets", "/envs", "/jobs"}) {
    if (Status st = MakeDirs(dd + sub); !st.ok()) Fatal(st.message());
  }
  // On Slurm, what replicas read and write lives on the shared filesystem: their work dirs,
  // the bucket store (staged packages, job dirs) and the hypertune module. The store stays
  // here, on local disk (SQLite over NFS is unsafe).
  const bool on_slurm = config.executor == "slurm";
  const std::string shared = on_slurm ? config.slurm.shared_dir : dd;
  const std::string jobs_dir = shared + "/jobs";
  std::optional<SlurmSetup> slurm;
  if (on_slurm) {
    auto setup = PrepareSlurm(config, jobs_dir);
    if (!setup.ok()) Fatal(setup.status().message());
    slurm = std::move(setup).value();
    if (Status st = MakeDirs(shared + "/buckets"); !st.ok()) Fatal(st.message());
    TY_LOG_INFO("daemon", "executor: slurm ({})", slurm->summary);
  }
  store::SqliteOptions so;
  so.path = dd + "/trainyard.db";
  so.synchronous = config.sqlite_synchronous;
  auto store = store::OpenSqliteJobStore(so);
  if (!store.ok()) Fatal("cannot open the job store " + so.path + ": " + store.status().message());
  storage::BucketStore buckets(shared + "/buckets");
  buckets.SetLocalJobDirRoots(config.job_dir_roots);
  // Uploads cut off by the last daemon's end (a kill mid-request) left temp files that nothing
  // can finish; this daemon holds the data dir lock, so none of them is a request in flight.
  if (int n = buckets.RemoveAbandonedUploads(); n > 0) {
    TY_LOG_INFO("daemon", "removed {} temp file(s) of uploads cut off by the last stop", n);
  }

  ListenerProxy proxy;
  std::unique_ptr<executor::Executor> executor;
  std::unique_ptr<scheduler::Admission> cluster_admission;
  if (slurm) {
    executor = executor::NewSlurmExecutor(slurm->executor, &proxy);
    cluster_admission = scheduler::NewClusterAdmission(slurm->capacity);
  } else {
    executor::LocalExecutorOptions eo;
    eo.launcher_path = config.launcher_path;
    eo.jobs_dir = jobs_dir;
    executor = executor::NewLocalExecutor(eo, &proxy);
  }

  scheduler::SchedulerOptions opts;
  opts.jobs_dir = jobs_dir;
  opts.env_cache_dir = on_slurm ? config.slurm.env_cache_dir : dd + "/envs";
  opts.admission = cluster_admission.get();
  opts.runtimes = config.runtimes;
  opts.cancel_grace = ParseDuration(config.cancel_grace).value();
  opts.max_running_jobs = config.max_running_jobs;
  opts.admission_paused = config.admission_paused;
  opts.pip_index_url = config.pip_index_url;
  opts.pip_find_links = config.pip_find_links;
  opts.node = NodeFromConfig(config);
  opts.exact_gpu_type = config.gpu_type_match == "exact";
  opts.oversize_jobs = scheduler::ParseOversizePolicy(config.oversize_jobs).value();
  opts.replica_restarts = config.replica_restarts;
  if (auto dir = daemon::InstallPythonSupport(shared + "/python"); dir.ok()) {
    opts.python_support_dir = *dir;
  } else {
    TY_LOG_WARN("daemon", "trainers will not find the hypertune module: {}",
                dir.status().message());
  }
  if (on_slurm) {
    TY_LOG_INFO("daemon", "replica limits: Slurm's (each step gets its own CPUs and memory)");
  } else if (config.resource_limits) {
    executor::CgroupProbe probe = executor::ProbeCgroupV1(config.cgroup_root);
    if (probe.usable) {
      opts.cgroup_root = config.cgroup_root;
      TY_LOG_INFO("daemon", "replica limits: cgroup v1 under {} (memory and CPU per machine type)",
                  config.cgroup_root);
    } else {
      TY_LOG_WARN("daemon",
                  "replicas run without memory/CPU limits: cgroup v1 is not usable under {} ({})",
                  config.cgroup_root, probe.reason);
    }
  } else {
    TY_LOG_INFO("daemon", "replica limits are off (resource_limits: false)");
  }
  {
    // Where the engine is looked for: PATH, plus the sbin directories runc may live in.
    const char* path = std::getenv("PATH");
    const std::string path_env = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
    auto engine = ResolveContainerEngine(config.container_engine, path_env);
    if (!engine.ok()) Fatal(engine.status().message());
    opts.container_engine = *engine;
    opts.container_limits = config.container_limits;
    if (opts.container_engine.empty()) {
      TY_LOG_INFO("daemon", "custom containers are off: {}",
                  config.container_engine == "none" ? "container_engine is none"
                                                    : "neither podman nor docker found");
    } else {
      auto env = PrepareContainerEngineEnv(opts.container_engine, dd,
                                           path_env + ":/usr/local/sbin:/usr/sbin:/sbin");
      if (!env.ok()) Fatal("cannot prepare the container engine: " + env.status().message());
      opts.container_engine_env = *env;
      auto conf = env->find("CONTAINERS_CONF");
      TY_LOG_INFO("daemon", "custom containers run with {}{}{}", opts.container_engine,
                  conf != env->end() ? " (CONTAINERS_CONF=" + conf->second + ")" : "",
                  config.container_limits ? "" : ", without memory/CPU limits");
    }
  }
  // Principals, tokens, policies and the audit log (docs/security.md).
  auto auth_store = auth::AuthStore::Open(dd + "/auth.db");
  if (!auth_store.ok()) Fatal("cannot open the auth store: " + auth_store.status().message());
  if (config.auth) {
    // Each job's replicas reach its project's buckets with a credential that dies with the job.
    auth::AuthStore* as = auth_store->get();
    opts.job_credential = [as](const std::string& project, const std::string& job) {
      return as->JobToken(project, job);
    };
  }
  if (!opts.container_engine.empty()) {
    auto registry = RegistrySettingsFromConfig(config);
    if (!registry.ok()) Fatal(registry.status().message());
    opts.registry = *registry;
    std::string mirrors;
    std::string insecure;
    for (const std::string& r : registry->insecure) insecure += (insecure.empty() ? "" : ", ") + r;
    for (const auto& m : registry->mirrors) {
      mirrors += (mirrors.empty() ? "" : ", ") + m.prefix + " -> " + m.target;
    }
    TY_LOG_INFO("daemon", "image pulls: policy {}{}{}{}",
                registry::PullPolicyName(registry->policy),
                mirrors.empty() ? "" : "; mirrors " + mirrors,
                insecure.empty() ? "" : "; without TLS verification: " + insecure,
                registry->auth_file.empty() ? "" : "; credentials in " + registry->auth_file);
    for (const std::string& r : registry->insecure) {
      if (!registry::IsLoopbackRegistry(r)) {
        TY_LOG_WARN("daemon",
                    "registry_insecure: {} is not a loopback address; images from it are pulled "
                    "without TLS verification, over the network",
                    r);
      }
    }
  }
  scheduler::JobService sched(opts, **store, *executor, buckets);
  proxy.Set(&sched);

  api::ApiOptions ao;
  std::tie(ao.host, ao.port) = ParseHostPort(config.listen).value();
  ao.threads = config.api_threads;
  ao.default_project = config.default_project;
  if (!config.tls_listen.empty()) {
    std::tie(ao.tls_host, ao.tls_port) = ParseHostPort(config.tls_listen).value();
    ao.tls_cert_file = config.tls_cert_file;
    ao.tls_key_file = config.tls_key_file;
    if (ao.tls_cert_file.empty()) {
      ao.tls_cert_file = dd + "/tls/cert.pem";
      ao.tls_key_file = dd + "/tls/key.pem";
      if (Status st = api::EnsureSelfSignedCertificate(ao.tls_cert_file, ao.tls_key_file);
          !st.ok()) {
        Fatal("cannot make the self-signed TLS certificate: " + st.message());
      }
    }
  }
  ao.auth = config.auth;
  ao.allow_insecure_http = config.allow_insecure_http;
  if (config.auth) {
    const std::string token_file = dd + "/admin-token";
    auto made = auth::BootstrapAdmin(**auth_store, config.admin_email, token_file, NowMicros());
    if (!made.ok()) Fatal("cannot create the first administrator: " + made.status().message());
    if (*made) {
      // Once, on the first start: where the administrator's token is (never the token).
      TY_LOG_WARN("daemon",
                  "first start with authentication on: created the administrator {}; its API "
                  "token is in {} (mode 0600). Use it with `trainyard --token-file {}` or "
                  "TRAINYARD_TOKEN, create principals and tokens with `trainyard admin`, and "
                  "keep or delete the file",
                  config.admin_email, token_file, token_file);
    }
  } else {
    TY_LOG_INFO("daemon",
                "authentication is off (auth: false): every request acts as an "
                "administrator; loopback listeners only");
  }
  api::ApiServer server(ao, sched, **store, buckets);
  server.SetAuthStore(auth_store->get());
  auto port = server.Bind();
  if (!port.ok()) Fatal(port.status().message());
  std::string endpoint = "http://" + ao.host + ":" + std::to_string(*port);
  std::string tls_endpoint;
  if (server.tls_port() >= 0) {
    tls_endpoint = "https://" + ao.tls_host + ":" + std::to_string(server.tls_port());
  }
  sched.SetStorageEndpoint(endpoint);

  // Retention, disk safety and the operators' figures (docs/operations.md).
  GcPolicy policy;
  policy.job_logs_age = ParseAge(config.retention.job_logs_age).value();
  policy.job_logs_max_bytes = ParseByteSize(config.retention.job_logs_max_bytes).value();
  policy.work_dirs_age = ParseAge(config.retention.work_dirs_age).value();
  policy.work_dirs_max_bytes = ParseByteSize(config.retention.work_dirs_max_bytes).value();
  policy.envs_age = ParseAge(config.retention.envs_age).value();
  policy.envs_max_bytes = ParseByteSize(config.retention.envs_max_bytes).value();
  policy.staged_packages_age = ParseAge(config.retention.staged_packages_age).value();
  // On Slurm the environments are node-local: each node's cache is not this daemon's to see.
  GarbageCollector gc({.jobs_dir = jobs_dir,
                       .env_cache_dir = on_slurm ? "" : opts.env_cache_dir,
                       .store = store->get(),
                       .buckets = &buckets},
                      policy);
  OpsOptions oo;
  oo.watched.emplace_back("data dir", dd);
  if (on_slurm) oo.watched.emplace_back("shared dir", shared);
  oo.disk_min_free = ParseDiskThreshold(config.disk_min_free).value();
  oo.disk_check_interval = ParseAge(config.disk_check_interval).value();
  if (oo.disk_check_interval <= 0) oo.disk_check_interval = 10 * kMicrosPerSecond;
  oo.gc_interval = ParseAge(config.gc_interval).value();
  oo.env_cache_dir = on_slurm ? "" : opts.env_cache_dir;
  {
    const char* path = std::getenv("PATH");
    for (const std::string& dir : Split(path != nullptr ? path : "/usr/bin:/bin", ':')) {
      const std::string candidate = (dir.empty() ? "." : dir) + "/nvidia-smi";
      if (!on_slurm && ::access(candidate.c_str(), X_OK) == 0) {
        oo.nvidia_smi = candidate;
        break;
      }
    }
  }
  OpsMonitor ops(oo, gc, sched, *executor);
  server.SetOperations(&ops);
  ops.CheckDisks();  // before the first admission

  if (Status st = sched.Start(); !st.ok()) Fatal("recovery failed: " + st.message());
  ops.Start();
  server.SetReady(true);

  // A stop signal may arrive before the server runs (during recovery, or right after the
  // address is printed): httplib's stop() is a no-op until listening starts, so the signal
  // thread keeps asking until Serve() has returned.
  std::atomic<bool> stop_requested{false};
  std::atomic<bool> serve_returned{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (serve_returned) return;  // woken by main at exit
    TY_LOG_INFO("daemon", "received {}, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    stop_requested = true;
    while (!serve_returned) {
      server.Stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  TY_LOG_INFO("daemon", "trainyardd {} listening on {} (data dir {}{})", TRAINYARD_VERSION,
              endpoint, dd, config.admission_paused ? ", admission paused" : "");
  if (!tls_endpoint.empty()) {
    TY_LOG_INFO("daemon", "TLS listener on {} (certificate {})", tls_endpoint, ao.tls_cert_file);
  }
  // The address on stdout, for scripts and tests that start the daemon on port 0; the TLS
  // address, when there is one, on the next line.
  std::printf("listening on %s\n", endpoint.c_str());
  if (!tls_endpoint.empty()) std::printf("tls listening on %s\n", tls_endpoint.c_str());
  std::fflush(stdout);
  if (!stop_requested) server.Serve();
  serve_returned = true;
  ops.Stop();
  sched.Stop();
  executor->Shutdown();
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  TY_LOG_INFO("daemon", "stopped");
  return 0;
}

}  // namespace
}  // namespace trainyard::daemon

int main(int argc, char** argv) {
  // Jobs, logs and objects are the users' data: files 0600 and directories 0700 (issue 17).
  ::umask(077);
  // Two malloc arenas instead of one per thread: with 16+ HTTP threads, per-thread arenas kept
  // tens of MB of freed SQLite page-cache memory stranded (measured in bench/bench_list.py).
  mallopt(M_ARENA_MAX, 2);
  return trainyard::daemon::Run(argc, argv);
}
