// The daemon's operator duties, on a thread of their own (docs/operations.md): free space on
// the data dir (and the Slurm shared dir) watched, with admission held while it is below
// disk_min_free and resumed by itself; retention (gc.h) run every gc_interval and on request;
// the figures /metrics adds for operators (disk, environment cache, GC, per-job CPU and memory
// from the replicas' cgroups, GPUs through nvidia-smi).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gc.h"
#include "trainyard/api/api_server.h"
#include "trainyard/executor/executor.h"
#include "trainyard/scheduler/job_service.h"

namespace trainyard::daemon {

// A disk_min_free setting: bytes ("1GiB") or a share of the filesystem ("5%").
struct DiskThreshold {
  int64_t bytes = 0;
  double ratio = 0;  // 0.05 for "5%"
  int64_t For(int64_t total_bytes) const {
    return ratio > 0 ? static_cast<int64_t>(static_cast<double>(total_bytes) * ratio) : bytes;
  }
  std::string Text() const;
};
Result<DiskThreshold> ParseDiskThreshold(const std::string& text);

struct DiskSpace {
  int64_t free_bytes = -1;  // for unprivileged writes (f_bavail); -1 = unknown
  int64_t total_bytes = -1;
};
DiskSpace StatDisk(const std::string& path);

// The reason admission is held when `free` is below `threshold` on the directory `what`
// (`name` names it, e.g. "data dir"); "" when there is room.
std::string DiskHoldReason(const std::string& name, const std::string& path, const DiskSpace& free,
                           const DiskThreshold& threshold);

// One GPU as nvidia-smi reports it.
struct GpuSample {
  int index = 0;
  double utilization_ratio = 0;  // 0..1
  int64_t memory_used_bytes = 0;
  int64_t memory_total_bytes = 0;
};
// Parses `nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total
// --format=csv,noheader,nounits` (MiB); lines it cannot read are skipped.
std::vector<GpuSample> ParseNvidiaSmi(const std::string& text);

struct OpsOptions {
  // Directories whose filesystems are watched: (name for messages and metrics, path).
  std::vector<std::pair<std::string, std::string>> watched;
  DiskThreshold disk_min_free;
  Duration disk_check_interval = 10 * kMicrosPerSecond;
  Duration gc_interval = 3600 * kMicrosPerSecond;  // 0 = only on request
  std::string env_cache_dir;                       // measured for /metrics ("" = not)
  std::string nvidia_smi;                          // "" = no GPU figures
};

class OpsMonitor final : public api::Operations {
 public:
  OpsMonitor(OpsOptions options, GarbageCollector& gc, scheduler::JobService& scheduler,
             executor::Executor& executor);
  ~OpsMonitor() override;
  // Checks the disks once now (admission is held before the first job is admitted), then
  // starts the thread.
  void Start();
  void Stop();
  // One disk check now; returns the hold reason ("" = none).
  std::string CheckDisks();

  // api::Operations.
  std::string MetricsText() override;
  Result<std::string> Gc(bool dry_run) override;
  Result<std::string> Purge(Timestamp finished_before, bool dry_run) override;

 private:
  void Loop();
  GcReport RunGc(bool dry_run);
  void MeasureCaches();

  const OpsOptions options_;
  GarbageCollector& gc_;
  scheduler::JobService& scheduler_;
  executor::Executor& executor_;

  std::mutex gc_mu_;  // one GC (or purge) at a time

  mutable std::mutex mu_;  // guards what follows
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<DiskSpace> disks_;  // per options_.watched
  std::string hold_reason_;
  int64_t env_cache_bytes_ = -1;
  int64_t env_cache_count_ = 0;
  std::vector<GpuSample> gpus_;
  int64_t gc_runs_ = 0;
  int64_t gc_removed_bytes_ = 0;
  int64_t gc_removed_items_ = 0;
  int64_t gc_errors_ = 0;
  Timestamp gc_last_run_ = 0;
  std::thread thread_;
};

}  // namespace trainyard::daemon
