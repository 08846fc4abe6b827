#include "proc_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <map>

namespace trainyard::executor {

namespace {

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Reads a small file with one read (good enough for /proc/PID/stat).
bool ReadSmallFile(const char* path, std::string* out) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return false;
  out->assign(buf, static_cast<size_t>(n));
  return true;
}

std::optional<ProcStat> ParseStat(pid_t pid, std::string_view text) {
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
  //  stime cutime cstime priority nice num_threads itrealvalue starttime ..."; comm may hold
  //  spaces and parentheses, so fields are counted after the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string_view::npos || close + 2 >= text.size()) return std::nullopt;
  std::string_view rest = text.substr(close + 2);
  ProcStat st;
  st.pid = pid;
  int field = 3;  // `rest` starts at field 3 (state)
  size_t pos = 0;
  while (pos < rest.size() && field <= 22) {
    size_t end = rest.find(' ', pos);
    if (end == std::string_view::npos) end = rest.size();
    std::string_view tok = rest.substr(pos, end - pos);
    int64_t v = 0;
    switch (field) {
      case 3:
        if (tok.empty()) return std::nullopt;
        st.state = tok[0];
        break;
      case 4:
        if (!ParseInt(tok, &v)) return std::nullopt;
        st.ppid = static_cast<pid_t>(v);
        break;
      case 5:
        if (!ParseInt(tok, &v)) return std::nullopt;
        st.pgrp = static_cast<pid_t>(v);
        break;
      case 6:
        if (!ParseInt(tok, &v)) return std::nullopt;
        st.session = static_cast<pid_t>(v);
        break;
      case 14:
      case 15: {
        uint64_t ticks = 0;
        if (ParseU64(tok, &ticks)) st.cpu_ticks += ticks;
        break;
      }
      case 22:
        if (!ParseU64(tok, &st.start_time)) return std::nullopt;
        return st;
      default:
        break;
    }
    ++field;
    pos = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  std::string text;
  if (!ReadSmallFile(path, &text)) return std::nullopt;
  return ParseStat(pid, text);
}

std::vector<ProcStat> ListProcesses() {
  std::vector<ProcStat> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (struct dirent* e = ::readdir(dir)) {
    int64_t pid = 0;
    if (!ParseInt(e->d_name, &pid) || pid <= 0) continue;
    if (auto st = ReadProcStat(static_cast<pid_t>(pid))) out.push_back(*st);
  }
  ::closedir(dir);
  return out;
}

std::vector<ProcStat> Descendants(pid_t root, const std::vector<ProcStat>& procs) {
  std::multimap<pid_t, const ProcStat*> children;
  for (const ProcStat& p : procs) children.emplace(p.ppid, &p);
  std::vector<ProcStat> out;
  std::vector<pid_t> stack{root};
  while (!stack.empty()) {
    pid_t parent = stack.back();
    stack.pop_back();
    auto [b, e] = children.equal_range(parent);
    for (auto it = b; it != e; ++it) {
      if (it->second->pid == root) continue;
      out.push_back(*it->second);
      stack.push_back(it->second->pid);
    }
  }
  return out;
}

bool ProcessAlive(pid_t pid, uint64_t start_time) {
  auto st = ReadProcStat(pid);
  if (!st || st->state == 'Z' || st->state == 'X') return false;
  return start_time == 0 || st->start_time == start_time;
}

std::string FormatPidFile(pid_t pid, uint64_t start_time) {
  return std::to_string(pid) + " " + std::to_string(start_time) + "\n";
}

bool ParsePidFile(std::string_view text, pid_t* pid, uint64_t* start_time) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  size_t sp = text.find(' ');
  if (sp == std::string_view::npos) return false;
  int64_t p = 0;
  // A pid that does not fit pid_t would name another process once truncated.
  if (!ParseInt(text.substr(0, sp), &p) || p <= 0 || p > std::numeric_limits<pid_t>::max()) {
    return false;
  }
  if (!ParseU64(text.substr(sp + 1), start_time)) return false;
  *pid = static_cast<pid_t>(p);
  return true;
}

bool FileExists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

Status RemoveTree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return Status::Ok();
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return Internal("cannot remove " + path + ": " + std::strerror(errno));
    return Status::Ok();
  }
  auto remove_one = [](const char* p, const struct stat*, int, struct FTW*) -> int {
    if (::remove(p) != 0 && errno != ENOENT) return -1;
    return 0;
  };
  if (::nftw(path.c_str(), remove_one, 32, FTW_DEPTH | FTW_PHYS) != 0)
    return Internal("cannot remove " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out.push_back(' ');
    bool plain = !a.empty();
    for (char c : a) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("@%+=:,./-_", c))) {
        plain = false;
        break;
      }
    }
    if (plain) {
      out += a;
      continue;
    }
    out.push_back('\'');
    for (char c : a) {
      if (c == '\'')
        out += "'\\''";
      else
        out.push_back(c);
    }
    out.push_back('\'');
  }
  return out;
}

}  // namespace trainyard::executor
