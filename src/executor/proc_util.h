// /proc helpers shared by the executor and the launcher: process identity (pid + start time)
// and the process tree. Private to ty_executor and trainyard-launcher.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::executor {

// The fields of /proc/PID/stat that Trainyard uses.
struct ProcStat {
  pid_t pid = 0;
  char state = '?';  // 'R', 'S', 'Z', ...
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  uint64_t start_time = 0;  // field 22, clock ticks since boot
  uint64_t cpu_ticks = 0;   // utime + stime (fields 14, 15), clock ticks
};

std::optional<ProcStat> ReadProcStat(pid_t pid);
// Every process visible in /proc (processes that vanish while listing are skipped).
std::vector<ProcStat> ListProcesses();
// Processes whose parent chain leads to `root` (root excluded), zombies included.
std::vector<ProcStat> Descendants(pid_t root, const std::vector<ProcStat>& procs);
// True when `pid` exists, is not a zombie, and (if start_time != 0) started at start_time.
bool ProcessAlive(pid_t pid, uint64_t start_time);

// launcher.pid contents: "PID STARTTIME\n".
std::string FormatPidFile(pid_t pid, uint64_t start_time);
bool ParsePidFile(std::string_view text, pid_t* pid, uint64_t* start_time);

bool FileExists(const std::string& path);
// Removes a file or a directory tree; missing paths are fine.
Status RemoveTree(const std::string& path);
// "a b 'c d'": argv as a shell would need it quoted (for "Running command:" lines).
std::string ShellJoin(const std::vector<std::string>& argv);

}  // namespace trainyard::executor
