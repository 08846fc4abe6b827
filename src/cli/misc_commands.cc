// buckets, cp, admin (local train is in local_train.cc).
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "commands.h"
#include "data_dir_lock.h"
#include "job_builder.h"
#include "trainyard/core/time.h"
#include "trainyard/core/units.h"
#include "trainyard/core/util.h"
#include "trainyard/store/backup.h"

namespace trainyard::cli {

namespace fs = std::filesystem;

// --- buckets -----------------------------------------------------------------------------

int RunBucketsCreate(const Invocation& inv, const std::string& bucket_uri) {
  std::string name = bucket_uri;
  if (IsGcsUri(bucket_uri)) {
    auto p = ParseGcsUri(bucket_uri);
    if (!p || !p->object.empty()) {
      return inv.Fail("Invalid bucket URI [" + bucket_uri + "]: expected gs://BUCKET");
    }
    name = p->bucket;
  }
  inv.Err() << "Creating gs://" << name << "/...\n";
  auto c = inv.MakeClient();
  Status s = c->CreateBucket(name);
  if (!s.ok()) return inv.Fail(s);
  return kExitOk;
}

int RunBucketsList(const Invocation& inv) {
  auto c = inv.MakeClient();
  auto names = c->ListBuckets();
  if (!names.ok()) return inv.Fail(names.status());
  for (const auto& n : *names) inv.Out() << "gs://" << n << "/\n";
  if (names->empty()) inv.Err() << "Listed 0 items.\n";
  return kExitOk;
}

// --- cp ----------------------------------------------------------------------------------

int RunCopy(const Invocation& inv, const std::string& source, const std::string& destination) {
  bool src_gcs = IsGcsUri(source);
  bool dst_gcs = IsGcsUri(destination);
  if (src_gcs == dst_gcs) {
    return inv.Fail(
        "cp copies a local file to gs://BUCKET/OBJECT or gs://BUCKET/OBJECT to a "
        "local path");
  }
  auto c = inv.MakeClient();
  if (dst_gcs) {
    auto dst = ParseGcsUri(destination);
    if (!dst) return inv.Fail("Invalid URI [" + destination + "]");
    std::string object = dst->object;
    if (object.empty() || object.back() == '/') object += Basename(source);
    auto data = ReadFile(source);
    if (!data.ok())
      return inv.Fail("Unable to read file [" + source + "]: " + data.status().message());
    auto up = c->UploadObject(dst->bucket, object, *data);
    if (!up.ok()) return inv.Fail(up.status());
    inv.Err() << "Copied [" << source << "] to [gs://" << dst->bucket << "/" << object << "].\n";
    return kExitOk;
  }
  auto src = ParseGcsUri(source);
  if (!src || src->object.empty() || src->object.back() == '/') {
    return inv.Fail("Invalid source [" + source + "]: expected gs://BUCKET/OBJECT");
  }
  auto data = c->DownloadObject(src->bucket, src->object);
  if (!data.ok()) return inv.Fail(data.status());
  std::error_code ec;
  fs::path target(destination);
  if (fs::is_directory(target, ec) || destination.back() == '/') {
    target /= Basename(src->object);
  }
  Status w = WriteFileAtomic(target.string(), *data);
  if (!w.ok()) return inv.Fail(w.message());
  inv.Err() << "Copied [" << source << "] to [" << target.string() << "].\n";
  return kExitOk;
}

// --- admin -------------------------------------------------------------------------------

int RunAdmin(const Invocation& inv, AdminAction action) {
  auto c = inv.MakeClient();
  Result<bool> paused = action == AdminAction::kStatus
                            ? c->GetAdmissionPaused()
                            : c->SetAdmissionPaused(action == AdminAction::kPause);
  if (!paused.ok()) return inv.Fail(paused.status());
  if (action == AdminAction::kPause) inv.Err() << "Paused admission of queued jobs.\n";
  if (action == AdminAction::kResume) inv.Err() << "Resumed admission of queued jobs.\n";
  inv.Out() << "paused: " << (*paused ? "true" : "false") << "\n";
  return kExitOk;
}

namespace {

// The data dir trainyardd uses when none is configured (daemon/config.cc FinalizeConfig).
std::string DefaultDataDir() {
  if (const char* d = std::getenv("TRAINYARD_DATA_DIR"); d != nullptr && *d) return d;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x != nullptr && *x) {
    return std::string(x) + "/trainyard";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h) {
    return std::string(h) + "/.local/share/trainyard";
  }
  return "";
}

}  // namespace

int RunAdminStop(const Invocation& inv, const AdminStopArgs& args) {
  const std::string dir = args.data_dir ? *args.data_dir : DefaultDataDir();
  if (dir.empty()) return inv.Fail("No data dir: give --data-dir or set TRAINYARD_DATA_DIR.");
  Duration timeout = 60 * kMicrosPerSecond;
  if (args.timeout) {
    auto t = ParseDuration(*args.timeout);
    if (!t.ok()) return inv.Fail("Invalid value for [--timeout]: " + t.status().message());
    timeout = *t;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(timeout);
  auto holder = daemon::DataDirLockHolder(dir);
  if (!holder.ok()) return inv.Fail(holder.status());
  if (!holder->has_value()) {
    inv.Err() << "No trainyardd is running on " << dir << ".\n";
    return kExitOk;
  }
  pid_t pid = **holder;
  // A daemon that has just taken the lock writes its pid right after.
  while (pid == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    holder = daemon::DataDirLockHolder(dir);
    if (!holder.ok()) return inv.Fail(holder.status());
    if (!holder->has_value()) return kExitOk;
    pid = **holder;
  }
  if (pid == 0) return inv.Fail("The lock file of " + dir + " names no pid.");
  if (::kill(pid, SIGTERM) != 0 && errno != ESRCH) {
    return inv.Fail("Cannot signal trainyardd (pid " + std::to_string(pid) +
                    "): " + std::strerror(errno));
  }
  inv.Err() << "Stopping trainyardd (pid " << pid << ") on " << dir << "...\n";
  // The lock goes when the daemon's process has exited, not before: that is "stopped".
  while (true) {
    holder = daemon::DataDirLockHolder(dir);
    if (!holder.ok()) return inv.Fail(holder.status());
    if (!holder->has_value()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      return inv.Fail("trainyardd (pid " + std::to_string(pid) + ") still holds " + dir +
                      " after " + FormatDuration(timeout) + ".");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  inv.Err() << "Stopped trainyardd (pid " << pid << ").\n";
  return kExitOk;
}

namespace {

// "90d", "720h", "30m", "3600s" -> microseconds; nullopt otherwise.
std::optional<Duration> ParseAgeText(const std::string& text) {
  if (text.size() < 2) return std::nullopt;
  const std::map<char, Duration> units = {{'s', kMicrosPerSecond},
                                          {'m', 60 * kMicrosPerSecond},
                                          {'h', 3600 * kMicrosPerSecond},
                                          {'d', 86400 * kMicrosPerSecond}};
  auto unit = units.find(text.back());
  if (unit == units.end()) return std::nullopt;
  try {
    size_t pos = 0;
    const std::string num = text.substr(0, text.size() - 1);
    const double n = std::stod(num, &pos);
    if (pos != num.size() || !(n > 0) || n > 1e8) return std::nullopt;
    return static_cast<Duration>(n * static_cast<double>(unit->second));
  } catch (...) {
    return std::nullopt;
  }
}

// Prints a GC or purge report: one line per item, then the total.
int PrintGcReport(const Invocation& inv, const std::string& text, const AdminGcArgs& args,
                  const char* done, const char* would) {
  if (args.format && *args.format == "json") {
    inv.Out() << text << "\n";
    return kExitOk;
  }
  nlohmann::json report = nlohmann::json::parse(text, nullptr, false);
  if (report.is_discarded() || !report.is_object()) {
    return inv.Fail("The daemon's report is not JSON: " + text);
  }
  const bool dry = report.value("dryRun", false);
  int64_t total = 0;
  size_t n = 0;
  for (const auto& item : report.value("removed", nlohmann::json::array())) {
    const std::string kind = item.value("kind", "");
    std::string what = item.value("path", "");
    if (kind == "job logs" || kind == "job record") {
      what = "job " + item.value("project", "") + "/" + item.value("jobId", "");
    }
    const int64_t bytes = std::strtoll(item.value("bytes", "0").c_str(), nullptr, 10);
    inv.Out() << (dry ? would : done) << " " << kind << " " << what << " (" << FormatBytes(bytes)
              << "): " << item.value("reason", "") << "\n";
    total += bytes;
    ++n;
  }
  inv.Out() << (dry ? "Would free " : "Freed ") << FormatBytes(total) << " (" << n << " item"
            << (n == 1 ? "" : "s") << ").\n";
  int rc = kExitOk;
  for (const auto& e : report.value("errors", nlohmann::json::array())) {
    inv.Err() << "ERROR: " << e.get<std::string>() << "\n";
    rc = 1;
  }
  return rc;
}

void PrintBackupSummary(const Invocation& inv, const store::BackupSummary& s) {
  inv.Out() << "schemaVersion: " << s.schema_version << "\njobs: " << s.jobs
            << "\nlogChunks: " << s.log_chunks << "\ndatabaseBytes: " << s.database_bytes
            << "\nfiles: " << s.files << "\nfileBytes: " << s.file_bytes << "\n";
}

}  // namespace

int RunAdminGc(const Invocation& inv, const AdminGcArgs& args) {
  if (args.format && *args.format != "json") {
    return inv.Fail("Invalid value for [--format]: only json is supported.");
  }
  auto c = inv.MakeClient();
  auto report = c->RunGc(args.dry_run);
  if (!report.ok()) return inv.Fail(report.status());
  return PrintGcReport(inv, *report, args, "Removed", "Would remove");
}

int RunAdminPurge(const Invocation& inv, const AdminGcArgs& args) {
  if (args.format && *args.format != "json") {
    return inv.Fail("Invalid value for [--format]: only json is supported.");
  }
  const std::string when = args.finished_before.value_or("");
  std::string rfc3339 = when;
  if (!ParseRfc3339(when).ok()) {
    auto age = ParseAgeText(when);
    if (!age) {
      return inv.Fail("Invalid value for [--finished-before]: \"" + when +
                      "\" is neither an RFC 3339 time nor an age such as 90d.");
    }
    rfc3339 = FormatRfc3339(NowMicros() - *age);
  }
  auto c = inv.MakeClient();
  auto report = c->Purge(rfc3339, args.dry_run);
  if (!report.ok()) return inv.Fail(report.status());
  return PrintGcReport(inv, *report, args, "Purged", "Would purge");
}

int RunAdminBackup(const Invocation& inv, const AdminBackupArgs& args) {
  const std::string dir = args.data_dir ? *args.data_dir : DefaultDataDir();
  if (dir.empty()) return inv.Fail("No data dir: give --data-dir or set TRAINYARD_DATA_DIR.");
  inv.Err() << "Backing up " << dir << " into " << args.directory << "...\n";
  auto summary = store::BackupDataDir(dir, args.buckets_dir.value_or(""), args.directory);
  if (!summary.ok()) return inv.Fail(summary.status());
  inv.Err() << "Backed up " << summary->jobs << " job(s) and " << summary->files
            << " file(s) into [" << args.directory << "].\n";
  PrintBackupSummary(inv, *summary);
  return kExitOk;
}

int RunAdminRestore(const Invocation& inv, const AdminRestoreArgs& args) {
  if (!args.data_dir || args.data_dir->empty()) {
    return inv.Fail("Give --data-dir: the new (empty) data dir to restore into.");
  }
  auto summary = store::RestoreDataDir(args.backup, *args.data_dir, args.buckets_dir.value_or(""));
  if (!summary.ok()) return inv.Fail(summary.status());
  inv.Err() << "Restored " << summary->jobs << " job(s) and " << summary->files << " file(s) into ["
            << *args.data_dir << "]; start trainyardd with --data-dir " << *args.data_dir << ".\n";
  PrintBackupSummary(inv, *summary);
  return kExitOk;
}

}  // namespace trainyard::cli
