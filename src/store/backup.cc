#include "trainyard/store/backup.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "sqlite_db.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"

namespace trainyard::store {
namespace {

constexpr int kBackupFormat = 1;
constexpr const char* kManifest = "BACKUP.json";
constexpr const char* kDatabase = "trainyard.db";

Status Errno(const std::string& what) { return Unavailable(what + ": " + std::strerror(errno)); }

// Top-level entries of a data dir a backup leaves out: rebuilt by a new daemon, or the
// database itself (copied with SQLite's backup API), or held only while a daemon runs.
bool LeftOut(const std::string& name) {
  static const std::set<std::string> kNames = {
      "trainyard.db",
      "trainyard.db-wal",
      "trainyard.db-shm",
      "trainyard.db-journal",
      "trainyardd.lock",
      "envs",
      "jobs",
      "python",
      "buckets",  // copied on its own (it may live elsewhere: slurm.shared_dir)
  };
  return kNames.count(name) > 0;
}

// The absolute, symlink-free form of a path that may not exist yet (its parent must).
std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) != nullptr) return buf;
  const size_t slash = path.find_last_of('/');
  const std::string parent = slash == std::string::npos ? "." : path.substr(0, slash + !slash);
  if (::realpath(parent.c_str(), buf) == nullptr) return path;
  return std::string(buf) + "/" + path.substr(slash == std::string::npos ? 0 : slash + 1);
}

bool Inside(const std::string& path, const std::string& dir) {
  return path == dir || StartsWith(path, dir + "/");
}

// `dir` missing (then created, mode 0700) or an empty directory.
Status PrepareEmptyDir(const std::string& dir, const char* what) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno != ENOENT) return Errno("cannot open " + dir);
    if (::mkdir(dir.c_str(), 0700) != 0) return Errno("cannot create " + dir);
    return Status::Ok();
  }
  bool empty = true;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) empty = false;
  }
  ::closedir(d);
  if (!empty) {
    return FailedPrecondition(std::string(what) + " " + dir +
                              " is not empty: give a new directory (nothing was written)");
  }
  return Status::Ok();
}

struct CopyStats {
  int64_t files = 0;
  int64_t bytes = 0;
};

// Gives `path` the mode, times and (as root) owner of `st`.
Status KeepAttributes(const std::string& path, const struct stat& st) {
  if (::geteuid() == 0 && ::lchown(path.c_str(), st.st_uid, st.st_gid) != 0) {
    return Errno("cannot chown " + path);
  }
  if (!S_ISLNK(st.st_mode) && ::chmod(path.c_str(), st.st_mode & 07777) != 0) {
    return Errno("cannot chmod " + path);
  }
  const timespec times[2] = {st.st_atim, st.st_mtim};
  if (::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
    return Errno("cannot set the times of " + path);
  }
  return Status::Ok();
}

// Copies one regular file (durably). A file that vanished meanwhile (an object deleted while
// the backup runs) is skipped: false.
Result<bool> CopyFile(const std::string& from, const std::string& to, CopyStats& stats) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (in < 0) {
    if (errno == ENOENT) return false;
    return Errno("cannot read " + from);
  }
  struct stat st;
  if (::fstat(in, &st) != 0) {
    ::close(in);
    return Errno("cannot stat " + from);
  }
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) {
    ::close(in);
    return Errno("cannot create " + to);
  }
  std::vector<char> buf(1 << 20);
  Status status = Status::Ok();
  while (status.ok()) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      status = Errno("cannot read " + from);
      break;
    }
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0) {
        if (errno == EINTR) continue;
        status = Errno("cannot write " + to);
        break;
      }
      done += w;
      stats.bytes += w;
    }
  }
  if (status.ok() && ::fdatasync(out) != 0) status = Errno("cannot sync " + to);
  ::close(in);
  if (::close(out) != 0 && status.ok()) status = Errno("cannot write " + to);
  if (status.ok()) status = KeepAttributes(to, st);
  if (!status.ok()) return status;
  ++stats.files;
  return true;
}

// Copies the tree under `from` into the existing directory `to`, skipping top-level names for
// which skip_top() is true. Directories get their attributes after their contents.
Status CopyTree(const std::string& from, const std::string& to,
                const std::function<bool(const std::string&)>& skip_top, CopyStats& stats) {
  DIR* d = ::opendir(from.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return Status::Ok();
    return Errno("cannot list " + from);
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      names.emplace_back(e->d_name);
    }
  }
  ::closedir(d);
  for (const std::string& name : names) {
    if (skip_top && skip_top(name)) continue;
    const std::string src = from + "/" + name;
    const std::string dst = to + "/" + name;
    struct stat st;
    if (::lstat(src.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // removed meanwhile
      return Errno("cannot stat " + src);
    }
    if (S_ISDIR(st.st_mode)) {
      if (::mkdir(dst.c_str(), 0700) != 0) return Errno("cannot create " + dst);
      TRAINYARD_RETURN_IF_ERROR(CopyTree(src, dst, nullptr, stats));
      TRAINYARD_RETURN_IF_ERROR(KeepAttributes(dst, st));
    } else if (S_ISREG(st.st_mode)) {
      TRAINYARD_RETURN_IF_ERROR(CopyFile(src, dst, stats).status());
    } else if (S_ISLNK(st.st_mode)) {
      std::vector<char> target(static_cast<size_t>(st.st_size) + 1);
      const ssize_t n = ::readlink(src.c_str(), target.data(), target.size());
      if (n < 0) return Errno("cannot read the link " + src);
      if (::symlink(std::string(target.data(), static_cast<size_t>(n)).c_str(), dst.c_str()) != 0) {
        return Errno("cannot create the link " + dst);
      }
      TRAINYARD_RETURN_IF_ERROR(KeepAttributes(dst, st));
    }
    // Sockets, FIFOs and devices have no place in a data dir: not copied.
  }
  return Status::Ok();
}

using Connection = sqlite::Connection;

// Copies the database at `from` into a new file `to` with SQLite's online backup API. One
// step copies every page inside one read transaction of the source: writers (the daemon) go on
// appending to the WAL meanwhile, and the copy is the database as of that transaction's start.
Status BackupDatabase(const std::string& from, const std::string& to) {
  // Read-write but never created: a reader of a WAL database may need to create its -shm.
  TRAINYARD_ASSIGN_OR_RETURN(auto src, Connection::Open(from, SQLITE_OPEN_READWRITE));
  sqlite3_busy_timeout(src->db(), 30000);
  TRAINYARD_ASSIGN_OR_RETURN(auto dst,
                             Connection::Open(to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  sqlite3_backup* backup = sqlite3_backup_init(dst->db(), "main", src->db(), "main");
  if (backup == nullptr) {
    return sqlite::ErrorStatus(sqlite3_errcode(dst->db()), "backup of " + from,
                               sqlite3_errmsg(dst->db()));
  }
  int rc = SQLITE_OK;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (true) {
    rc = sqlite3_backup_step(backup, -1);
    if ((rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    break;
  }
  const int finish = sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    return sqlite::ErrorStatus(rc, "backup of " + from, sqlite3_errstr(rc));
  }
  if (finish != SQLITE_OK) {
    return sqlite::ErrorStatus(finish, "backup of " + from, sqlite3_errmsg(dst->db()));
  }
  return Status::Ok();
}

// quick_check, schema version and row counts of a database copy.
Status InspectDatabase(const std::string& path, BackupSummary& summary) {
  TRAINYARD_ASSIGN_OR_RETURN(auto db, Connection::Open(path, SQLITE_OPEN_READWRITE));
  TRAINYARD_ASSIGN_OR_RETURN(std::string check, db->QueryText("PRAGMA quick_check"));
  if (check != "ok") return Internal("the database copy " + path + " is damaged: " + check);
  TRAINYARD_ASSIGN_OR_RETURN(std::string version, db->QueryText("PRAGMA user_version"));
  summary.schema_version = std::atoi(version.c_str());
  TRAINYARD_ASSIGN_OR_RETURN(std::string tables,
                             db->QueryText("SELECT count(*) FROM sqlite_master WHERE type = "
                                           "'table' AND name IN ('jobs', 'log_chunks')"));
  if (tables == "2") {
    TRAINYARD_ASSIGN_OR_RETURN(std::string jobs, db->QueryText("SELECT count(*) FROM jobs"));
    TRAINYARD_ASSIGN_OR_RETURN(std::string chunks,
                               db->QueryText("SELECT count(*) FROM log_chunks"));
    summary.jobs = std::atoll(jobs.c_str());
    summary.log_chunks = std::atoll(chunks.c_str());
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) summary.database_bytes = st.st_size;
  return Status::Ok();
}

Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open " + dir);
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Errno("cannot sync " + dir);
}

}  // namespace

Result<BackupSummary> BackupDataDir(const std::string& data_dir, const std::string& buckets_dir,
                                    const std::string& dest) {
  const std::string db_path = data_dir + "/" + kDatabase;
  if (::access(db_path.c_str(), F_OK) != 0) {
    return NotFound("no Trainyard database at " + db_path + " (is " + data_dir +
                    " a data dir? give --data-dir)");
  }
  const std::string buckets = buckets_dir.empty() ? data_dir + "/buckets" : buckets_dir;
  const std::string target = Canonical(dest);
  for (const std::string& source : {data_dir, buckets}) {
    if (Inside(target, Canonical(source))) {
      return InvalidArgument("the backup directory " + dest + " is inside " + source +
                             ": give a directory outside the data dir");
    }
  }
  TRAINYARD_RETURN_IF_ERROR(PrepareEmptyDir(dest, "the backup directory"));

  BackupSummary summary;
  // 1. The database, as of one commit.
  const std::string db_tmp = dest + "/" + kDatabase + ".partial";
  TRAINYARD_RETURN_IF_ERROR(BackupDatabase(db_path, db_tmp));
  TRAINYARD_RETURN_IF_ERROR(InspectDatabase(db_tmp, summary));
  {
    struct stat st;
    if (::stat(db_path.c_str(), &st) == 0) {
      TRAINYARD_RETURN_IF_ERROR(KeepAttributes(db_tmp, st));
    }
  }
  if (::rename(db_tmp.c_str(), (dest + "/" + kDatabase).c_str()) != 0) {
    return Errno("cannot rename " + db_tmp);
  }
  // 2. The bucket store, after the database: every object a backed-up job names was written
  // before its job was, so it is in the copy (objects written later may be too).
  CopyStats stats;
  TRAINYARD_RETURN_IF_ERROR(MakeDirs(dest + "/buckets"));
  TRAINYARD_RETURN_IF_ERROR(CopyTree(
      buckets, dest + "/buckets", [](const std::string& name) { return name == ".tmp"; }, stats));
  if (struct stat st; ::stat(buckets.c_str(), &st) == 0) {
    TRAINYARD_RETURN_IF_ERROR(KeepAttributes(dest + "/buckets", st));
  }
  // 3. The data dir's other files.
  TRAINYARD_RETURN_IF_ERROR(CopyTree(data_dir, dest, LeftOut, stats));
  summary.files = stats.files;
  summary.file_bytes = stats.bytes;

  // 4. The manifest, last.
  nlohmann::json manifest = {
      {"format", kBackupFormat},
      {"created", FormatRfc3339(NowMicros())},
      {"dataDir", Canonical(data_dir)},
      {"bucketsDir", Canonical(buckets)},
      {"schemaVersion", summary.schema_version},
      {"jobs", summary.jobs},
      {"logChunks", summary.log_chunks},
      {"databaseBytes", summary.database_bytes},
      {"files", summary.files},
      {"fileBytes", summary.file_bytes},
  };
  TRAINYARD_RETURN_IF_ERROR(SyncDir(dest));
  TRAINYARD_RETURN_IF_ERROR(
      WriteFileAtomic(dest + "/" + kManifest, manifest.dump(2) + "\n", /*durable=*/true));
  if (struct stat st; ::stat(data_dir.c_str(), &st) == 0) {
    TRAINYARD_RETURN_IF_ERROR(KeepAttributes(dest, st));
  }
  return summary;
}

Result<BackupSummary> RestoreDataDir(const std::string& backup, const std::string& data_dir,
                                     const std::string& buckets_dir) {
  auto text = ReadFile(backup + "/" + kManifest);
  if (!text.ok()) {
    return FailedPrecondition(backup + " is not a complete Trainyard backup (no " +
                              std::string(kManifest) + ")");
  }
  nlohmann::json manifest = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object() || !manifest.contains("format") ||
      !manifest["format"].is_number_integer()) {
    return FailedPrecondition(backup + "/" + kManifest + " is not a backup manifest");
  }
  if (manifest["format"].get<int>() != kBackupFormat) {
    return FailedPrecondition(backup + " has backup format " + manifest["format"].dump() +
                              "; this Trainyard reads format " + std::to_string(kBackupFormat));
  }
  const std::string buckets = buckets_dir.empty() ? data_dir + "/buckets" : buckets_dir;
  TRAINYARD_RETURN_IF_ERROR(PrepareEmptyDir(data_dir, "the data dir"));
  if (!buckets_dir.empty()) {
    TRAINYARD_RETURN_IF_ERROR(PrepareEmptyDir(buckets, "the buckets dir"));
  }
  CopyStats stats;
  TRAINYARD_RETURN_IF_ERROR(CopyTree(
      backup, data_dir,
      [&](const std::string& name) {
        return name == kManifest || (!buckets_dir.empty() && name == "buckets");
      },
      stats));
  if (!buckets_dir.empty()) {
    TRAINYARD_RETURN_IF_ERROR(CopyTree(backup + "/buckets", buckets, nullptr, stats));
  }
  BackupSummary summary;
  TRAINYARD_RETURN_IF_ERROR(InspectDatabase(data_dir + "/" + kDatabase, summary));
  summary.files = stats.files - 1;  // the database
  summary.file_bytes = stats.bytes - summary.database_bytes;
  if (struct stat st; ::stat(backup.c_str(), &st) == 0) {
    TRAINYARD_RETURN_IF_ERROR(KeepAttributes(data_dir, st));
  }
  TRAINYARD_RETURN_IF_ERROR(SyncDir(data_dir));
  return summary;
}

}  // namespace trainyard::store
