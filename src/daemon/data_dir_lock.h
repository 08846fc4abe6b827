// One daemon per data dir: an exclusive flock(2) on <data_dir>/trainyardd.lock, held for the
// daemon's life. The kernel releases it when the daemon exits or dies (kill -9 included), so a
// stale lock file never blocks a restart. The holder's pid is written into the file so that a
// second daemon can name it, and `trainyard admin stop` can signal it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "trainyard/core/status.h"

namespace trainyard::daemon {

// The lock file's name inside the data dir.
inline constexpr const char* kDataDirLockFile = "trainyardd.lock";

class DataDirLock {
 public:
  // Creates data_dir if needed, opens <data_dir>/trainyardd.lock (close-on-exec, so replicas
  // never inherit it) and takes the lock without waiting. FAILED_PRECONDITION naming the
  // holder's pid when another process holds it; other errors when the file cannot be opened.
  // On success the file holds this process's pid.
  static Result<std::unique_ptr<DataDirLock>> Acquire(const std::string& data_dir);

  // Releases the lock (the file stays: removing a flock'ed file races with the next opener)
  // and removes the pidfile written by WritePidfile if it still names this process.
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

  // Writes this process's pid to `path` (atomically); removed again by the destructor.
  Status WritePidfile(const std::string& path);

  const std::string& path() const { return path_; }

 private:
  DataDirLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  std::string pidfile_;
};

// Who holds the lock of data_dir now: nullopt when nobody does (no daemon runs on it);
// otherwise the pid read from the lock file (0 when the holder has not written it yet).
// Probes with a shared, non-blocking lock that is dropped at once.
Result<std::optional<pid_t>> DataDirLockHolder(const std::string& data_dir);

}  // namespace trainyard::daemon
