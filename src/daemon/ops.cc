#include "ops.h"

#include <sys/statvfs.h>

#include <cstdio>
#include <map>
#include <sstream>

#include "config.h"
#include "trainyard/core/log.h"
#include "trainyard/core/units.h"
#include "trainyard/core/util.h"
#include "trainyard/executor/subprocess.h"

namespace trainyard::daemon {

namespace {

constexpr const char* kLog = "ops";
constexpr Duration kCacheMeasureInterval = 60 * kMicrosPerSecond;
constexpr Duration kGpuSampleInterval = 15 * kMicrosPerSecond;

std::string Label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string DiskThreshold::Text() const {
  if (ratio > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g%%", ratio * 100);
    return buf;
  }
  return FormatBytes(bytes);
}

Result<DiskThreshold> ParseDiskThreshold(const std::string& text) {
  DiskThreshold t;
  if (!text.empty() && text.back() == '%') {
    try {
      size_t pos = 0;
      const std::string num = text.substr(0, text.size() - 1);
      const double pct = std::stod(num, &pos);
      if (pos != num.size() || !(pct >= 0 && pct < 100)) throw std::invalid_argument(text);
      t.ratio = pct / 100;
      return t;
    } catch (...) {
      return InvalidArgument("\"" + text + "\" is not a share such as 5%");
    }
  }
  TRAINYARD_ASSIGN_OR_RETURN(t.bytes, ParseByteSize(text));
  return t;
}

DiskSpace StatDisk(const std::string& path) {
  DiskSpace d;
  struct statvfs fs;
  if (::statvfs(path.c_str(), &fs) != 0) return d;
  d.free_bytes = static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
  d.total_bytes = static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize);
  return d;
}

std::string DiskHoldReason(const std::string& name, const std::string& path, const DiskSpace& free,
                           const DiskThreshold& threshold) {
  if (free.free_bytes < 0) return "";
  const int64_t min = threshold.For(free.total_bytes);
  if (min <= 0 || free.free_bytes >= min) return "";
  return "Admission is paused: the " + name + " " + path + " has " + FormatBytes(free.free_bytes) +
         " free, less than disk_min_free (" + threshold.Text() +
         (threshold.ratio > 0 ? " = " + FormatBytes(min) : "") +
         "). Queued jobs start by themselves once space is freed; `trainyard admin gc` removes "
         "what the retention policy allows.";
}

std::vector<GpuSample> ParseNvidiaSmi(const std::string& text) {
  std::vector<GpuSample> out;
  for (const std::string& line : Split(text, '\n')) {
    const std::vector<std::string> f = Split(line, ',');
    if (f.size() < 4) continue;
    try {
      GpuSample g;
      g.index = std::stoi(Trim(f[0]));
      g.utilization_ratio = std::stod(Trim(f[1])) / 100;
      g.memory_used_bytes = static_cast<int64_t>(std::stod(Trim(f[2])) * 1048576);
      g.memory_total_bytes = static_cast<int64_t>(std::stod(Trim(f[3])) * 1048576);
      out.push_back(g);
    } catch (...) {
      // "[N/A]" and the like: not a figure.
    }
  }
  return out;
}

OpsMonitor::OpsMonitor(OpsOptions options, GarbageCollector& gc, scheduler::JobService& scheduler,
                       executor::Executor& executor)
    : options_(std::move(options)), gc_(gc), scheduler_(scheduler), executor_(executor) {}

OpsMonitor::~OpsMonitor() { Stop(); }

void OpsMonitor::Start() {
  CheckDisks();
  thread_ = std::thread([this] { Loop(); });
}

void OpsMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string OpsMonitor::CheckDisks() {
  std::vector<DiskSpace> disks;
  std::string reason;
  for (const auto& [name, path] : options_.watched) {
    disks.push_back(StatDisk(path));
    if (reason.empty()) reason = DiskHoldReason(name, path, disks.back(), options_.disk_min_free);
  }
  bool started = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    disks_ = std::move(disks);
    started = hold_reason_.empty() && !reason.empty();
    hold_reason_ = reason;
  }
  scheduler_.SetAdmissionHold(reason);  // logs the change
  if (started && options_.gc_interval > 0) {
    // What the retention policy allows goes now rather than at the next interval.
    RunGc(/*dry_run=*/false);
  }
  return reason;
}

void OpsMonitor::MeasureCaches() {
  int64_t bytes = -1;
  int64_t count = 0;
  if (!options_.env_cache_dir.empty()) {
    bytes = DiskBytes(options_.env_cache_dir);
    if (auto items = gc_.Inventory(NowMicros()); items.ok()) {
      for (const GcItem& item : *items) count += item.kind == GcItem::Kind::kEnvironment;
    }
  }
  std::vector<GpuSample> gpus;
  if (!options_.nvidia_smi.empty()) {
    auto r = executor::RunCommand(
        {options_.nvidia_smi, "--query-gpu=index,utilization.gpu,memory.used,memory.total",
         "--format=csv,noheader,nounits"},
        {}, 10 * kMicrosPerSecond);
    if (r.ok() && r->exit_code == 0) gpus = ParseNvidiaSmi(r->out);
  }
  std::lock_guard<std::mutex> lock(mu_);
  env_cache_bytes_ = bytes;
  env_cache_count_ = count;
  gpus_ = std::move(gpus);
}

void OpsMonitor::Loop() {
  const int64_t start = MonotonicMicros();
  int64_t next_disk = start + options_.disk_check_interval;
  // The first GC soon after start (recovery is done), then every gc_interval.
  int64_t next_gc = options_.gc_interval > 0 ? start + 30 * kMicrosPerSecond : INT64_MAX;
  int64_t next_measure = start;
  int64_t next_gpu = start;
  while (true) {
    const int64_t now = MonotonicMicros();
    if (now >= next_disk) {
      CheckDisks();
      next_disk = now + options_.disk_check_interval;
    }
    if (now >= next_gc) {
      RunGc(/*dry_run=*/false);
      next_gc = now + options_.gc_interval;
    }
    if (now >= next_measure || now >= next_gpu) {
      MeasureCaches();
      next_measure = now + kCacheMeasureInterval;
      next_gpu = now + kGpuSampleInterval;
    }
    const int64_t wake = std::min({next_disk, next_gc, next_measure, next_gpu});
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::microseconds(std::max<int64_t>(wake - now, 1000)),
                     [this] { return stopping_; })) {
      return;
    }
  }
}

GcReport OpsMonitor::RunGc(bool dry_run) {
  std::lock_guard<std::mutex> gc_lock(gc_mu_);
  GcReport report = gc_.Run(dry_run, NowMicros());
  if (!dry_run) {
    TY_LOG_INFO(
        kLog, "garbage collection: removed {} item(s), {} freed{}", report.actions.size(),
        FormatBytes(report.bytes),
        report.errors.empty() ? "" : ", " + std::to_string(report.errors.size()) + " error(s)");
    std::lock_guard<std::mutex> lock(mu_);
    ++gc_runs_;
    gc_removed_bytes_ += report.bytes;
    gc_removed_items_ += static_cast<int64_t>(report.actions.size());
    gc_errors_ += static_cast<int64_t>(report.errors.size());
    gc_last_run_ = NowMicros();
  }
  return report;
}

Result<std::string> OpsMonitor::Gc(bool dry_run) {
  GcReport report = RunGc(dry_run);
  // Freed space may lift a hold at once.
  if (!dry_run) CheckDisks();
  return report.ToJson();
}

Result<std::string> OpsMonitor::Purge(Timestamp finished_before, bool dry_run) {
  std::lock_guard<std::mutex> gc_lock(gc_mu_);
  GcReport report = gc_.Purge(finished_before, dry_run);
  return report.ToJson();
}

std::string OpsMonitor::MetricsText() {
  std::ostringstream out;
  std::lock_guard<std::mutex> lock(mu_);
  out << "# HELP trainyard_disk_free_bytes Free space for the daemon's writes on the filesystem "
         "of a watched directory.\n# TYPE trainyard_disk_free_bytes gauge\n";
  for (size_t i = 0; i < disks_.size() && i < options_.watched.size(); ++i) {
    out << "trainyard_disk_free_bytes{dir=\"" << options_.watched[i].first << "\",path=\""
        << Label(options_.watched[i].second) << "\"} " << disks_[i].free_bytes << "\n";
  }
  out << "# HELP trainyard_disk_size_bytes Size of the filesystem of a watched directory.\n"
      << "# TYPE trainyard_disk_size_bytes gauge\n";
  for (size_t i = 0; i < disks_.size() && i < options_.watched.size(); ++i) {
    out << "trainyard_disk_size_bytes{dir=\"" << options_.watched[i].first << "\",path=\""
        << Label(options_.watched[i].second) << "\"} " << disks_[i].total_bytes << "\n";
  }
  out << "# HELP trainyard_disk_min_free_bytes Free space below which admission is held "
         "(disk_min_free).\n# TYPE trainyard_disk_min_free_bytes gauge\n";
  for (size_t i = 0; i < disks_.size() && i < options_.watched.size(); ++i) {
    out << "trainyard_disk_min_free_bytes{dir=\"" << options_.watched[i].first << "\",path=\""
        << Label(options_.watched[i].second) << "\"} "
        << options_.disk_min_free.For(disks_[i].total_bytes) << "\n";
  }
  out << "# HELP trainyard_admission_held 1 while admission is held for low disk space.\n"
      << "# TYPE trainyard_admission_held gauge\n"
      << "trainyard_admission_held{reason=\"disk_space\"} " << (hold_reason_.empty() ? 0 : 1)
      << "\n";
  if (env_cache_bytes_ >= 0) {
    out << "# HELP trainyard_env_cache_bytes Disk space of the cached Python environments.\n"
        << "# TYPE trainyard_env_cache_bytes gauge\n"
        << "trainyard_env_cache_bytes " << env_cache_bytes_ << "\n"
        << "# HELP trainyard_env_cache_environments Cached Python environments.\n"
        << "# TYPE trainyard_env_cache_environments gauge\n"
        << "trainyard_env_cache_environments " << env_cache_count_ << "\n";
  }
  out << "# HELP trainyard_gc_runs_total Garbage collection runs (periodic and requested).\n"
      << "# TYPE trainyard_gc_runs_total counter\n"
      << "trainyard_gc_runs_total " << gc_runs_ << "\n"
      << "# HELP trainyard_gc_removed_bytes_total Disk space garbage collection freed.\n"
      << "# TYPE trainyard_gc_removed_bytes_total counter\n"
      << "trainyard_gc_removed_bytes_total " << gc_removed_bytes_ << "\n"
      << "# HELP trainyard_gc_removed_items_total Items garbage collection removed.\n"
      << "# TYPE trainyard_gc_removed_items_total counter\n"
      << "trainyard_gc_removed_items_total " << gc_removed_items_ << "\n"
      << "# HELP trainyard_gc_errors_total Items garbage collection could not remove.\n"
      << "# TYPE trainyard_gc_errors_total counter\n"
      << "trainyard_gc_errors_total " << gc_errors_ << "\n"
      << "# HELP trainyard_gc_last_run_timestamp_seconds When garbage collection last ran (0 = "
         "not yet).\n# TYPE trainyard_gc_last_run_timestamp_seconds gauge\n"
      << "trainyard_gc_last_run_timestamp_seconds " << gc_last_run_ / kMicrosPerSecond << "\n";
  if (!gpus_.empty()) {
    out << "# HELP trainyard_gpu_utilization_ratio GPU utilization (nvidia-smi), 0 to 1.\n"
        << "# TYPE trainyard_gpu_utilization_ratio gauge\n";
    for (const GpuSample& g : gpus_) {
      out << "trainyard_gpu_utilization_ratio{gpu=\"" << g.index << "\"} " << g.utilization_ratio
          << "\n";
    }
    out << "# HELP trainyard_gpu_memory_used_bytes GPU memory in use (nvidia-smi).\n"
        << "# TYPE trainyard_gpu_memory_used_bytes gauge\n";
    for (const GpuSample& g : gpus_) {
      out << "trainyard_gpu_memory_used_bytes{gpu=\"" << g.index << "\"} " << g.memory_used_bytes
          << "\n";
    }
    out << "# HELP trainyard_gpu_memory_total_bytes GPU memory (nvidia-smi).\n"
        << "# TYPE trainyard_gpu_memory_total_bytes gauge\n";
    for (const GpuSample& g : gpus_) {
      out << "trainyard_gpu_memory_total_bytes{gpu=\"" << g.index << "\"} " << g.memory_total_bytes
          << "\n";
    }
  }
  // Per job, summed over its running replicas (the cgroups their launchers made).
  struct JobUse {
    int64_t memory = 0;
    double cpu = 0;
    bool has_memory = false, has_cpu = false;
  };
  std::map<std::pair<std::string, std::string>, JobUse> jobs;
  for (const executor::ReplicaUsage& u : executor_.Usage()) {
    JobUse& j = jobs[{u.key.project, u.key.job_id}];
    if (u.memory_bytes >= 0) {
      j.memory += u.memory_bytes;
      j.has_memory = true;
    }
    if (u.cpu_seconds >= 0) {
      j.cpu += u.cpu_seconds;
      j.has_cpu = true;
    }
  }
  out << "# HELP trainyard_job_memory_bytes Memory in use by a running job's replicas (their "
         "memory cgroups).\n# TYPE trainyard_job_memory_bytes gauge\n";
  for (const auto& [key, j] : jobs) {
    if (j.has_memory) {
      out << "trainyard_job_memory_bytes{project=\"" << Label(key.first) << "\",job_id=\""
          << Label(key.second) << "\"} " << j.memory << "\n";
    }
  }
  out << "# HELP trainyard_job_cpu_seconds_total CPU time of a running job's replicas' "
         "processes.\n# TYPE trainyard_job_cpu_seconds_total counter\n";
  for (const auto& [key, j] : jobs) {
    if (j.has_cpu) {
      out << "trainyard_job_cpu_seconds_total{project=\"" << Label(key.first) << "\",job_id=\""
          << Label(key.second) << "\"} " << j.cpu << "\n";
    }
  }
  return out.str();
}

}  // namespace trainyard::daemon
