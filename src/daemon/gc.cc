#include "gc.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "trainyard/core/log.h"
#include "trainyard/core/util.h"

namespace trainyard::daemon {

namespace {

constexpr const char* kLog = "gc";

thread_local int64_t g_tree_bytes = 0;

int AddBlocks(const char*, const struct stat* st, int, struct FTW*) {
  g_tree_bytes += static_cast<int64_t>(st->st_blocks) * 512;
  return 0;
}

std::vector<std::string> Subdirs(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::lstat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.push_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

Timestamp MtimeOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<Timestamp>(st.st_mtim.tv_sec) * kMicrosPerSecond + st.st_mtim.tv_nsec / 1000;
}

bool IsHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Status RemovePath(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return Internal("cannot remove " + path + ": " + ec.message());
  return Status::Ok();
}

// A work dir's files that retention removes: every regular file except a trial's metric file
// (<replica>/hypertune/...), which a later job resuming the study reads (compat §7).
thread_local int64_t g_removable = 0;
int AddRemovable(const char* path, const struct stat* st, int type, struct FTW*) {
  if (type == FTW_F && std::string_view(path).find("/hypertune/") == std::string_view::npos) {
    g_removable += static_cast<int64_t>(st->st_blocks) * 512;
  }
  return 0;
}
int64_t RemovableBytes(const std::string& dir) {
  g_removable = 0;
  ::nftw(dir.c_str(), &AddRemovable, 16, FTW_PHYS);
  return g_removable;
}

// Removes `path` except its `hypertune` directories (see RemovableBytes); empty directories
// left behind go too.
Status RemoveKeepingMetrics(const std::filesystem::path& path) {
  std::error_code ec;
  bool kept = false;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    if (entry.path().filename() == "hypertune" && entry.is_directory(ec)) {
      kept = true;
      continue;
    }
    if (entry.is_directory(ec) && !entry.is_symlink(ec)) {
      TRAINYARD_RETURN_IF_ERROR(RemoveKeepingMetrics(entry.path()));
      if (std::filesystem::exists(entry.path(), ec)) kept = true;
    } else {
      std::filesystem::remove(entry.path(), ec);
      if (ec) return Internal("cannot remove " + entry.path().string() + ": " + ec.message());
    }
  }
  if (ec) return Internal("cannot list " + path.string() + ": " + ec.message());
  if (!kept) std::filesystem::remove(path, ec);
  return Status::Ok();
}

std::string AgeText(Duration d) {
  if (d % (86400 * kMicrosPerSecond) == 0)
    return std::to_string(d / 86400 / kMicrosPerSecond) + "d";
  if (d % (3600 * kMicrosPerSecond) == 0) return std::to_string(d / 3600 / kMicrosPerSecond) + "h";
  return FormatDuration(d);
}

// The replica directories of one job's work dir: <task>-replica-<i> and
// trial-<id>/<task>-replica-<i>.
std::vector<std::string> ReplicaDirs(const std::string& job_dir) {
  std::vector<std::string> out;
  for (const std::string& sub : Subdirs(job_dir)) {
    const std::string path = job_dir + "/" + sub;
    if (sub.rfind("trial-", 0) == 0) {
      for (const std::string& r : Subdirs(path)) out.push_back(path + "/" + r);
    } else {
      out.push_back(path);
    }
  }
  return out;
}

// A replica's raw log whose every byte was handed to the store (log.offset covers it).
bool LogFullyStored(const std::string& replica_dir, int64_t* bytes) {
  struct stat st;
  if (::stat((replica_dir + "/log").c_str(), &st) != 0) return false;
  auto offset = ReadFile(replica_dir + "/log.offset");
  if (!offset.ok()) return st.st_size == 0;
  char* end = nullptr;
  const long long stored = std::strtoll(offset->c_str(), &end, 10);
  if (end == offset->c_str() || stored < st.st_size) return false;
  *bytes = static_cast<int64_t>(st.st_blocks) * 512;
  return true;
}

}  // namespace

int64_t DiskBytes(const std::string& path) {
  g_tree_bytes = 0;
  ::nftw(path.c_str(), &AddBlocks, 16, FTW_PHYS);
  return g_tree_bytes;
}

const char* GcKindName(GcItem::Kind kind) {
  switch (kind) {
    case GcItem::Kind::kJobLogs:
      return "job logs";
    case GcItem::Kind::kWorkDir:
      return "work dir";
    case GcItem::Kind::kRawLog:
      return "raw replica log";
    case GcItem::Kind::kEnvironment:
      return "environment";
    case GcItem::Kind::kStagedPackage:
      return "staged package";
    case GcItem::Kind::kJobRecord:
      return "job record";
  }
  return "?";
}

std::vector<GcAction> PlanGc(const std::vector<GcItem>& items, const GcPolicy& policy,
                             Timestamp now) {
  struct Limits {
    Duration age;
    int64_t max_bytes;
    const char* age_key;
    const char* size_key;
  };
  auto limits = [&](GcItem::Kind k) -> Limits {
    switch (k) {
      case GcItem::Kind::kJobLogs:
        return {policy.job_logs_age, policy.job_logs_max_bytes, "retention.job_logs_age",
                "retention.job_logs_max_bytes"};
      case GcItem::Kind::kWorkDir:
        return {policy.work_dirs_age, policy.work_dirs_max_bytes, "retention.work_dirs_age",
                "retention.work_dirs_max_bytes"};
      case GcItem::Kind::kEnvironment:
        return {policy.envs_age, policy.envs_max_bytes, "retention.envs_age",
                "retention.envs_max_bytes"};
      case GcItem::Kind::kStagedPackage:
        return {policy.staged_packages_age, 0, "retention.staged_packages_age", ""};
      case GcItem::Kind::kRawLog:
      case GcItem::Kind::kJobRecord:
        break;
    }
    return {0, 0, "", ""};
  };
  std::vector<GcAction> out;
  std::set<std::string> removed_dirs;  // work dirs removed: their raw logs go with them
  for (GcItem::Kind kind : {GcItem::Kind::kJobLogs, GcItem::Kind::kWorkDir,
                            GcItem::Kind::kEnvironment, GcItem::Kind::kStagedPackage}) {
    std::vector<const GcItem*> of_kind;
    int64_t total = 0;
    for (const GcItem& item : items) {
      if (item.kind != kind) continue;
      of_kind.push_back(&item);
      total += item.bytes;
    }
    // Oldest first (then by path, so plans are deterministic).
    std::stable_sort(of_kind.begin(), of_kind.end(), [](const GcItem* a, const GcItem* b) {
      return a->time != b->time ? a->time < b->time : a->path < b->path;
    });
    const Limits lim = limits(kind);
    for (const GcItem* item : of_kind) {
      if (item->in_use) continue;
      std::string reason;
      if (lim.age > 0 && now - item->time > lim.age) {
        reason = (kind == GcItem::Kind::kEnvironment
                      ? "unused for more than " + AgeText(lim.age)
                      : "finished more than " + AgeText(lim.age) + " ago") +
                 " (" + lim.age_key + ")";
      } else if (lim.max_bytes > 0 && total > lim.max_bytes) {
        reason =
            std::string(kind == GcItem::Kind::kEnvironment ? "least recently used" : "oldest") +
            " while the total is over " + std::to_string(lim.max_bytes) + " bytes (" +
            lim.size_key + ")";
      } else {
        continue;
      }
      total -= item->bytes;
      if (kind == GcItem::Kind::kWorkDir) removed_dirs.insert(item->path + "/");
      out.push_back({*item, reason});
    }
  }
  for (const GcItem& item : items) {
    if (item.kind != GcItem::Kind::kRawLog || item.in_use) continue;
    bool covered = false;
    for (const std::string& dir : removed_dirs) {
      if (item.path.rfind(dir, 0) == 0) covered = true;
    }
    if (!covered) out.push_back({item, "its lines are stored"});
  }
  return out;
}

std::string GcReport::ToJson() const {
  nlohmann::json removed = nlohmann::json::array();
  for (const GcAction& a : actions) {
    nlohmann::json j = {{"kind", GcKindName(a.item.kind)},
                        {"path", a.item.path},
                        {"bytes", std::to_string(a.item.bytes)},
                        {"reason", a.reason}};
    if (!a.item.job_id.empty()) {
      j["project"] = a.item.project;
      j["jobId"] = a.item.job_id;
    }
    removed.push_back(std::move(j));
  }
  nlohmann::json j = {{"dryRun", dry_run},
                      {"removed", removed},
                      {"bytes", std::to_string(bytes)},
                      {"errors", errors}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::vector<GcItem>> GarbageCollector::Inventory(Timestamp now) {
  std::vector<GcItem> items;
  TRAINYARD_ASSIGN_OR_RETURN(auto finished, ctx_.store->ListFinishedJobs(0));
  std::map<std::pair<std::string, std::string>, Timestamp> ended;
  for (const auto& f : finished) {
    ended[{f.project, f.job_id}] = f.end_time;
    if (f.log_bytes > 0) {
      items.push_back(
          {GcItem::Kind::kJobLogs, "", f.project, f.job_id, f.log_bytes, f.end_time, false});
    }
  }
  // Work dirs and the raw logs in them.
  for (const std::string& project : Subdirs(ctx_.jobs_dir)) {
    for (const std::string& job : Subdirs(ctx_.jobs_dir + "/" + project)) {
      const std::string dir = ctx_.jobs_dir + "/" + project + "/" + job;
      GcItem item{GcItem::Kind::kWorkDir, dir, project, job, RemovableBytes(dir), 0, false};
      auto it = ended.find({project, job});
      if (it != ended.end()) {
        item.time = it->second;
      } else {
        auto stored = ctx_.store->GetJob(project, job);
        if (stored.ok() || stored.status().code() != StatusCode::kNotFound) {
          item.in_use = true;  // unfinished (or the store cannot say): never removed
        } else {
          item.time = MtimeOf(dir);  // no job of that name (purged): a leftover
        }
      }
      const bool finished_job = !item.in_use;
      if (finished_job && item.bytes == 0) continue;  // only trials' metric files are left
      items.push_back(item);
      if (!finished_job) continue;
      for (const std::string& replica : ReplicaDirs(dir)) {
        int64_t bytes = 0;
        if (LogFullyStored(replica, &bytes)) {
          items.push_back(
              {GcItem::Kind::kRawLog, replica + "/log", project, job, bytes, item.time, false});
        }
      }
    }
  }
  // Cached environments: last use is the mtime of .complete (the launcher touches it on every
  // use); one a replica uses is share-locked by its launcher.
  if (!ctx_.env_cache_dir.empty()) {
    for (const std::string& name : Subdirs(ctx_.env_cache_dir)) {
      if (!IsHex64(name)) continue;
      const std::string dir = ctx_.env_cache_dir + "/" + name;
      Timestamp used = MtimeOf(dir + "/.complete");
      if (used == 0) used = MtimeOf(dir);
      bool in_use = true;
      int fd = ::open((dir + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd >= 0) {
        in_use = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
        ::close(fd);
      }
      items.push_back({GcItem::Kind::kEnvironment, dir, "", "", DiskBytes(dir), used, in_use});
    }
  }
  // Packages staged for finished jobs (gs://B/.../<sha256>/<file>, the CLI's and gcloud's
  // layout), unless an unfinished job names them too. Only jobs past the age are read.
  if (ctx_.buckets != nullptr && policy_.staged_packages_age > 0) {
    std::set<std::string> active_uris;
    TRAINYARD_ASSIGN_OR_RETURN(auto active, ctx_.store->ListActiveJobs());
    for (const auto& job : active) {
      for (const auto& uri : job.spec.package_uris) active_uris.insert(uri);
    }
    std::set<std::string> seen;
    const Timestamp cutoff = now - policy_.staged_packages_age;
    for (const auto& f : finished) {
      if (f.end_time >= cutoff) break;  // oldest first
      auto job = ctx_.store->GetJob(f.project, f.job_id);
      if (!job.ok()) continue;
      for (const std::string& uri : job->spec.package_uris) {
        if (!seen.insert(uri).second) continue;
        auto loc = storage::ParseLocation(uri);
        if (!loc.ok() || loc->kind != storage::Location::Kind::kBucket) continue;
        const size_t slash = loc->object.rfind('/');
        if (slash == std::string::npos) continue;
        const std::string parent = loc->object.substr(0, slash);
        if (!IsHex64(parent.substr(
                parent.rfind('/') == std::string::npos ? 0 : parent.rfind('/') + 1))) {
          continue;
        }
        auto path = ctx_.buckets->LocalPathForUri(uri);
        if (!path.ok()) continue;
        struct stat st;
        if (::stat(path->c_str(), &st) != 0) continue;  // removed already
        items.push_back({GcItem::Kind::kStagedPackage, uri, f.project, f.job_id,
                         static_cast<int64_t>(st.st_blocks) * 512, f.end_time,
                         active_uris.contains(uri)});
      }
    }
  }
  return items;
}

GcReport GarbageCollector::Run(bool dry_run, Timestamp now) {
  GcReport report;
  report.dry_run = dry_run;
  auto items = Inventory(now);
  if (!items.ok()) {
    report.errors.push_back("cannot take the inventory: " + items.status().message());
    return report;
  }
  for (GcAction& a : PlanGc(*items, policy_, now)) {
    if (dry_run) {
      report.bytes += a.item.bytes;
      report.actions.push_back(std::move(a));
      continue;
    }
    Status st;
    switch (a.item.kind) {
      case GcItem::Kind::kJobLogs:
        st = ctx_.store->DeleteJobLogs(a.item.project, a.item.job_id);
        break;
      case GcItem::Kind::kWorkDir:
        st = RemoveKeepingMetrics(a.item.path);
        break;
      case GcItem::Kind::kRawLog:
        st = RemovePath(a.item.path);
        break;
      case GcItem::Kind::kEnvironment: {
        // Exclusively locked while it goes: a launcher that wants it waits, then rebuilds it.
        int fd = ::open((a.item.path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
          if (fd >= 0) ::close(fd);
          continue;  // taken into use since the inventory: kept
        }
        ::unlink((a.item.path + "/.complete").c_str());  // never half an environment
        st = RemovePath(a.item.path);
        ::close(fd);
        break;
      }
      case GcItem::Kind::kJobRecord:
        continue;
      case GcItem::Kind::kStagedPackage: {
        auto loc = storage::ParseLocation(a.item.path);
        st = loc.ok() ? ctx_.buckets->DeleteObject(loc->bucket, loc->object) : loc.status();
        if (st.code() == StatusCode::kNotFound) st = Status::Ok();
        break;
      }
    }
    const std::string what = a.item.kind == GcItem::Kind::kJobLogs
                                 ? "job " + a.item.project + "/" + a.item.job_id
                                 : a.item.path;
    if (!st.ok()) {
      TY_LOG_WARN(kLog, "cannot remove {} {}: {}", GcKindName(a.item.kind), what, st.message());
      report.errors.push_back(std::string(GcKindName(a.item.kind)) + " " + what + ": " +
                              st.message());
      continue;
    }
    TY_LOG_INFO(kLog, "removed {} {} ({} bytes): {}", GcKindName(a.item.kind), what, a.item.bytes,
                a.reason);
    report.bytes += a.item.bytes;
    report.actions.push_back(std::move(a));
  }
  return report;
}

GcReport GarbageCollector::Purge(Timestamp before, bool dry_run) {
  GcReport report;
  report.dry_run = dry_run;
  auto finished = ctx_.store->ListFinishedJobs(before);
  if (!finished.ok()) {
    report.errors.push_back(finished.status().message());
    return report;
  }
  for (const auto& f : *finished) {
    const std::string dir = ctx_.jobs_dir + "/" + f.project + "/" + f.job_id;
    GcItem item{GcItem::Kind::kJobRecord, dir, f.project, f.job_id, f.log_bytes, f.end_time, false};
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0) item.bytes += DiskBytes(dir);
    GcAction action{item, "job record purged (finished before " + FormatRfc3339(before) + ")"};
    if (!dry_run) {
      Status s = ctx_.store->DeleteJob(f.project, f.job_id);
      if (s.ok()) s = RemovePath(dir);
      if (!s.ok()) {
        report.errors.push_back("job " + f.project + "/" + f.job_id + ": " + s.message());
        continue;
      }
      TY_LOG_INFO(kLog, "purged job {}/{} (ended {}), its logs and work dir ({} bytes)", f.project,
                  f.job_id, FormatRfc3339(f.end_time), item.bytes);
    }
    report.bytes += item.bytes;
    report.actions.push_back(std::move(action));
  }
  return report;
}

}  // namespace trainyard::daemon
