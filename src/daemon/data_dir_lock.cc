#include "data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trainyard/core/util.h"

namespace trainyard::daemon {
namespace {

std::string LockPath(const std::string& data_dir) { return data_dir + "/" + kDataDirLockFile; }

std::string Errno(const std::string& what, int err) { return what + ": " + std::strerror(err); }

// The pid in the lock file open as fd (0 when empty or unreadable).
pid_t ReadPid(int fd) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  long pid = std::strtol(buf, nullptr, 10);
  return pid > 0 ? static_cast<pid_t>(pid) : 0;
}

int FlockRetrying(int fd, int op) {
  int rc;
  do {
    rc = ::flock(fd, op);
  } while (rc != 0 && errno == EINTR);
  return rc;
}

}  // namespace

Result<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::string& data_dir) {
  TRAINYARD_RETURN_IF_ERROR(MakeDirs(data_dir));
  const std::string path = LockPath(data_dir);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable(Errno("cannot open the lock file " + path, errno));
  if (FlockRetrying(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) {
      ::close(fd);
      return Unavailable(Errno("cannot lock " + path, err));
    }
    const pid_t holder = ReadPid(fd);
    ::close(fd);
    return FailedPrecondition(
        "data dir " + data_dir + " is in use by another trainyardd (" +
        (holder > 0 ? "pid " + std::to_string(holder) : "pid not yet written") + ", lock file " +
        path + "); stop it first (trainyard admin stop --data-dir " + data_dir +
        ") or give this daemon another --data-dir");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    ::close(fd);
    return Unavailable(Errno("cannot write the pid into " + path, err));
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(path, fd));
}

DataDirLock::~DataDirLock() {
  if (!pidfile_.empty()) {
    auto text = ReadFile(pidfile_);
    if (text.ok() && std::strtol(text->c_str(), nullptr, 10) == ::getpid()) {
      ::unlink(pidfile_.c_str());
    }
  }
  if (fd_ >= 0) {
    // Still holding the lock: nobody else can be writing the file.
    if (::ftruncate(fd_, 0) != 0) {
      // The pid stays in the file; the lock, which is what counts, goes with the close.
    }
    ::close(fd_);
  }
}

Status DataDirLock::WritePidfile(const std::string& path) {
  TRAINYARD_RETURN_IF_ERROR(
      WriteFileAtomic(path, std::to_string(::getpid()) + "\n", /*durable=*/false));
  pidfile_ = path;
  return Status::Ok();
}

Result<std::optional<pid_t>> DataDirLockHolder(const std::string& data_dir) {
  const std::string path = LockPath(data_dir);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<pid_t>();
    return Unavailable(Errno("cannot open the lock file " + path, errno));
  }
  std::optional<pid_t> holder;
  if (FlockRetrying(fd, LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);
  } else if (errno == EWOULDBLOCK) {
    holder = ReadPid(fd);
  } else {
    const int err = errno;
    ::close(fd);
    return Unavailable(Errno("cannot probe the lock of " + path, err));
  }
  ::close(fd);
  return holder;
}

}  // namespace trainyard::daemon
