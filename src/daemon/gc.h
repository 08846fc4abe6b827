// Retention and garbage collection of what finished jobs leave on disk (docs/operations.md):
// their stored log lines, replica work dirs (trial dirs included) and raw `log` files, the
// Python environment cache, and the packages the CLI staged for them. Job records stay (AI
// Platform has no job deletion) unless an admin purge asks for it.
//
// Two halves: PlanGc is the policy (pure: what to remove given an inventory, a policy and the
// time), and GarbageCollector takes the inventory from the store and the disk and carries a
// plan out (or only reports it, for a dry run).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/core/time.h"
#include "trainyard/storage/bucket_store.h"
#include "trainyard/store/job_store.h"

namespace trainyard::daemon {

// Per kind: an age (0 = no age limit) and a total size (0 = no size limit). Ages count from a
// job's end (logs, work dirs, staged packages) or an environment's last use.
struct GcPolicy {
  Duration job_logs_age = 0;
  int64_t job_logs_max_bytes = 0;
  Duration work_dirs_age = 0;
  int64_t work_dirs_max_bytes = 0;
  Duration envs_age = 0;
  int64_t envs_max_bytes = 0;
  Duration staged_packages_age = 0;
};

struct GcItem {
  enum class Kind {
    kJobLogs,        // a finished job's stored log lines
    kWorkDir,        // a finished job's work dir (<jobs_dir>/<project>/<job>, trials included)
    kRawLog,         // a replica's `log` file whose lines are all stored (always removed)
    kEnvironment,    // a cached Python environment (<env_cache_dir>/<sha256>)
    kStagedPackage,  // a package the CLI staged (gs://B/.../<sha256>/<file>) for finished jobs
    kJobRecord,      // a job record with its logs and work dir (Purge only; never planned)
  };
  Kind kind = Kind::kWorkDir;
  std::string path;  // the file or directory; for kStagedPackage the gs:// URI
  std::string project;
  std::string job_id;
  int64_t bytes = 0;
  Timestamp time = 0;   // when the job ended, or the environment was last used
  bool in_use = false;  // never removed (an unfinished job's, an environment a replica uses)
};

struct GcAction {
  GcItem item;
  std::string reason;  // e.g. "older than work_dirs_age (7d)"
};

// Name of a kind as logs and reports say it: "job logs", "work dir", ...
const char* GcKindName(GcItem::Kind kind);

// What the policy removes from `items` at `now`: raw logs always; items older than their
// kind's age; then, while a kind's total (in-use items included) exceeds its size, its oldest
// removable items. Items in use are never chosen. Oldest first within each kind.
std::vector<GcAction> PlanGc(const std::vector<GcItem>& items, const GcPolicy& policy,
                             Timestamp now);

struct GcReport {
  bool dry_run = false;
  std::vector<GcAction> actions;  // done (or, for a dry run, to do)
  std::vector<std::string> errors;
  int64_t bytes = 0;  // freed (or to free)
  std::string ToJson() const;
};

struct GcContext {
  std::string jobs_dir;       // <data_dir>/jobs (replica work dirs)
  std::string env_cache_dir;  // <data_dir>/envs ("" = not collected, e.g. node-local on Slurm)
  store::JobStore* store = nullptr;
  storage::BucketStore* buckets = nullptr;
};

class GarbageCollector {
 public:
  GarbageCollector(GcContext context, GcPolicy policy)
      : ctx_(std::move(context)), policy_(policy) {}
  // Takes the inventory, plans with PlanGc and (unless dry_run) removes; logs each removal.
  GcReport Run(bool dry_run, Timestamp now);
  // The inventory alone (for tests and /metrics' environment cache size).
  Result<std::vector<GcItem>> Inventory(Timestamp now);
  // Deletes the records of jobs that finished before `before` (with their logs, history and
  // work dirs): an explicit admin purge.
  GcReport Purge(Timestamp before, bool dry_run);
  const GcPolicy& policy() const { return policy_; }

 private:
  GcContext ctx_;
  GcPolicy policy_;
};

// Bytes a file or directory tree takes on disk (allocated blocks; symlinks not followed).
int64_t DiskBytes(const std::string& path);

}  // namespace trainyard::daemon
