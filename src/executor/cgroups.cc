#include "trainyard/executor/cgroups.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "cgroup_v1.h"
#include "trainyard/core/util.h"

namespace trainyard::executor {
namespace cgroup_v1 {
namespace {

std::string ErrnoText() { return std::strerror(errno); }

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::optional<int64_t> ParseInt64(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// This process's cgroup in the v1 hierarchy that has `controller` attached ("" for the root
// or when /proc/self/cgroup does not say).
std::string OwnCgroup(const std::string& controller) {
  auto text = ReadFile("/proc/self/cgroup");
  if (!text.ok()) return "";
  // "ID:CONTROLLERS:PATH" per hierarchy, e.g. "4:memory:/a/b" or "2:cpu,cpuacct:/".
  for (const std::string& line : Split(*text, '\n')) {
    size_t c1 = line.find(':');
    size_t c2 = c1 == std::string::npos ? std::string::npos : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    for (const std::string& c : Split(std::string_view(line).substr(c1 + 1, c2 - c1 - 1), ',')) {
      if (c != controller) continue;
      std::string path = line.substr(c2 + 1);
      while (!path.empty() && path.back() == '/') path.pop_back();
      return path;
    }
  }
  return "";
}

}  // namespace

Status CheckHierarchy(const std::string& mount_dir, const std::string& controller) {
  struct statfs fs;
  if (::statfs(mount_dir.c_str(), &fs) != 0) {
    return FailedPrecondition("no " + controller + " cgroup hierarchy at " + mount_dir + ": " +
                              ErrnoText());
  }
  if (fs.f_type == CGROUP2_SUPER_MAGIC) {
    return FailedPrecondition(mount_dir + " is cgroup v2, which Trainyard cannot use");
  }
  if (fs.f_type != CGROUP_SUPER_MAGIC) {
    return FailedPrecondition(mount_dir + " is not a cgroup v1 mount");
  }
  // Each v1 hierarchy names its controllers' files; the root group has them too.
  const char* probe_file = controller == kMemory ? "memory.limit_in_bytes"
                           : controller == kCpu  ? "cpu.cfs_quota_us"
                                                 : "cgroup.procs";
  if (!HasControl(mount_dir, probe_file)) {
    return FailedPrecondition("the cgroup v1 hierarchy at " + mount_dir + " has no " + controller +
                              " controller (no " + probe_file + ")");
  }
  return Status::Ok();
}

std::string GroupDir(const std::string& root, const std::string& controller,
                     const std::string& name) {
  std::string mount = root + "/" + controller;
  std::string own = OwnCgroup(controller);
  std::string base = mount + own;
  if (!own.empty() && !IsDirectory(base)) base = mount;
  return base + "/" + name;
}

Status ValidateGroupName(const std::string& name) {
  if (name.empty()) return InvalidArgument("the cgroup name is empty");
  if (name.front() == '/') return InvalidArgument("the cgroup name " + name + " is absolute");
  for (const std::string& part : Split(name, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return InvalidArgument("the cgroup name " + name + " is not a plain relative path");
    }
  }
  return Status::Ok();
}

Status CreateGroup(const std::string& dir) {
  // mkdir -p by hand: each level of a cgroup hierarchy is a group the kernel creates on mkdir.
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return Internal("cannot create the cgroup " + prefix + ": " + ErrnoText());
    }
  }
  if (!IsDirectory(dir)) return Internal("cannot create the cgroup " + dir);
  return Status::Ok();
}

Status WriteControl(const std::string& dir, const char* file, std::string_view value) {
  const std::string path = dir + "/" + file;
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return errno == ENOENT ? NotFound(path + " does not exist")
                           : Internal("cannot open " + path + ": " + ErrnoText());
  }
  ssize_t n;
  do {
    n = ::write(fd, value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  Status s = Status::Ok();
  if (n != static_cast<ssize_t>(value.size())) {
    s = Internal("cannot write " + std::string(value) + " to " + path + ": " +
                 (n < 0 ? ErrnoText() : "short write"));
  }
  ::close(fd);
  return s;
}

bool HasControl(const std::string& dir, const char* file) {
  return ::access((dir + "/" + file).c_str(), F_OK) == 0;
}

std::optional<int64_t> ReadOomKillCount(const std::string& memory_dir) {
  auto text = ReadFile(memory_dir + "/memory.oom_control");
  if (!text.ok()) return std::nullopt;
  for (const std::string& line : Split(*text, '\n')) {
    if (StartsWith(line, "oom_kill ")) return ParseInt64(std::string_view(line).substr(9));
  }
  return std::nullopt;
}

std::optional<int64_t> ReadFailCount(const std::string& memory_dir) {
  auto text = ReadFile(memory_dir + "/memory.failcnt");
  if (!text.ok()) return std::nullopt;
  return ParseInt64(*text);
}

std::vector<pid_t> ListPids(const std::string& dir) {
  std::vector<pid_t> pids;
  auto text = ReadFile(dir + "/cgroup.procs");
  if (!text.ok()) return pids;
  for (const std::string& line : Split(*text, '\n')) {
    if (auto v = ParseInt64(line); v && *v > 0) pids.push_back(static_cast<pid_t>(*v));
  }
  return pids;
}

Status DestroyGroup(const std::string& dir, Duration timeout,
                    const std::function<void()>& wait_a_little) {
  const int64_t deadline = MonotonicMicros() + timeout;
  while (true) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return Status::Ok();
    if (errno != EBUSY) return Internal("cannot remove the cgroup " + dir + ": " + ErrnoText());
    // Busy: members are left, or killed ones are not reaped yet.
    std::vector<pid_t> pids = ListPids(dir);
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    if (MonotonicMicros() >= deadline) {
      return DeadlineExceeded("cannot remove the cgroup " + dir + ": " +
                              std::to_string(pids.size()) + " process(es) still in it");
    }
    if (wait_a_little) {
      wait_a_little();
    } else {
      ::usleep(5000);
    }
  }
}

namespace {

// mountinfo escapes blanks and backslashes in paths as \ooo (octal).
std::string UnescapeMountPath(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Whether cgroup path `path` lies in the subtree `root` (both absolute, as the kernel prints
// them); sets *rest to what follows root ("" or "/a/b").
bool UnderRoot(const std::string& path, const std::string& root, std::string* rest) {
  if (root == "/") {
    *rest = path == "/" ? "" : path;
    return true;
  }
  if (path == root) {
    rest->clear();
    return true;
  }
  if (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
      path[root.size()] == '/') {
    *rest = path.substr(root.size());
    return true;
  }
  return false;
}

std::optional<int64_t> ReadKeyedCount(const std::string& file, std::string_view key) {
  auto text = ReadFile(file);
  if (!text.ok()) return std::nullopt;
  for (const std::string& line : Split(*text, '\n')) {
    if (line.size() > key.size() && StartsWith(line, key) && line[key.size()] == ' ') {
      return ParseInt64(std::string_view(line).substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<MemoryGroup> ResolveMemoryGroup(std::string_view proc_cgroup,
                                              std::string_view mountinfo) {
  // "ID:CONTROLLERS:PATH" per hierarchy; "0::PATH" is the unified one.
  std::optional<std::string> v1_path;
  std::optional<std::string> v2_path;
  for (const std::string& line : Split(proc_cgroup, '\n')) {
    size_t c1 = line.find(':');
    size_t c2 = c1 == std::string::npos ? std::string::npos : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path = line.substr(c2 + 1);
    if (path.empty() || path[0] != '/') continue;
    if (controllers.empty() && line.compare(0, c1, "0") == 0) {
      v2_path = path;
      continue;
    }
    for (const std::string& c : Split(controllers, ',')) {
      if (c == kMemory) v1_path = path;
    }
  }
  // mountinfo: "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER".
  std::optional<MemoryGroup> best;
  size_t best_root = 0;
  for (const std::string& line : Split(mountinfo, '\n')) {
    std::vector<std::string> f;
    for (const std::string& w : Split(line, ' ')) {
      if (!w.empty()) f.push_back(w);
    }
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash == 0 || dash + 3 > f.size()) continue;
    const std::string& fstype = f[dash + 1];
    const bool v2 = fstype == "cgroup2";
    if (!v2 && fstype != "cgroup") continue;
    if (v2 ? !v2_path : !v1_path) continue;
    if (!v2) {
      bool memory = false;
      for (const std::string& o : Split(f[dash + 3], ',')) memory = memory || o == kMemory;
      if (!memory) continue;
    }
    const std::string root = UnescapeMountPath(f[3]);
    std::string rest;
    if (!UnderRoot(v2 ? *v2_path : *v1_path, root, &rest)) continue;
    // cgroup v1 first (a hybrid host's cgroup2 mount holds no memory controller), then the
    // mount whose root is the deepest.
    const bool better = !best || (best->v2 && !v2) || (best->v2 == v2 && root.size() > best_root);
    if (!better) continue;
    MemoryGroup g;
    g.mount_point = UnescapeMountPath(f[4]);
    while (g.mount_point.size() > 1 && g.mount_point.back() == '/') g.mount_point.pop_back();
    g.dir = g.mount_point + rest;
    g.v2 = v2;
    best = std::move(g);
    best_root = root.size();
  }
  return best;
}

std::optional<MemoryGroup> OwnMemoryGroup() {
  auto cgroup = ReadFile("/proc/self/cgroup");
  auto mountinfo = ReadFile("/proc/self/mountinfo");
  if (!cgroup.ok() || !mountinfo.ok()) return std::nullopt;
  auto g = ResolveMemoryGroup(*cgroup, *mountinfo);
  if (!g) return std::nullopt;
  // A v2 group without the memory controller has no memory.events to read.
  if (!HasControl(g->dir, g->v2 ? "memory.events" : "memory.oom_control")) return std::nullopt;
  return g;
}

std::optional<int64_t> ReadGroupOomKills(const MemoryGroup& group) {
  return ReadKeyedCount(group.dir + (group.v2 ? "/memory.events" : "/memory.oom_control"),
                        "oom_kill");
}

int64_t ReadGroupMemoryLimit(const MemoryGroup& group) {
  int64_t limit = 0;
  std::string dir = group.dir;
  // "Unlimited" reads as "max" (v2) or as a huge page-rounded number (v1): both are no limit.
  constexpr int64_t kNoLimit = int64_t{1} << 60;
  while (dir.size() > group.mount_point.size() && StartsWith(dir, group.mount_point)) {
    auto text = ReadFile(dir + (group.v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    if (text.ok()) {
      if (auto v = ParseInt64(*text); v && *v > 0 && *v < kNoLimit) {
        limit = limit == 0 ? *v : std::min(limit, *v);
      }
    }
    dir.erase(dir.rfind('/'));
  }
  return limit;
}

}  // namespace cgroup_v1

CgroupProbe ProbeCgroupV1(const std::string& root) {
  static std::atomic<int> counter{0};
  CgroupProbe probe;
  const std::string name =
      "trainyard-probe-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  struct Step {
    const char* controller;
    const char* file;
    std::string value;
  };
  // A limit far above anything the probe group holds (it holds no process).
  const Step steps[] = {
      {cgroup_v1::kMemory, "memory.limit_in_bytes", std::to_string(int64_t{1} << 30)},
      {cgroup_v1::kCpu, "cpu.cfs_quota_us", std::to_string(cgroup_v1::kCfsPeriodMicros)},
  };
  for (const Step& step : steps) {
    const std::string controller = step.controller;
    if (Status s = cgroup_v1::CheckHierarchy(root + "/" + controller, controller); !s.ok()) {
      probe.reason = s.message();
      return probe;
    }
    const std::string dir = cgroup_v1::GroupDir(root, controller, name);
    Status s = cgroup_v1::CreateGroup(dir);
    if (s.ok()) s = cgroup_v1::WriteControl(dir, step.file, step.value);
    Status removed = cgroup_v1::DestroyGroup(dir, kMicrosPerSecond);
    if (!s.ok()) {
      probe.reason = s.message();
      return probe;
    }
    if (!removed.ok()) {
      probe.reason = removed.message();
      return probe;
    }
  }
  probe.usable = true;
  return probe;
}

}  // namespace trainyard::executor
