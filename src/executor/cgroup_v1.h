// cgroup v1 helpers shared by ty_executor (ProbeCgroupV1) and trainyard-launcher, which puts
// every process of a replica into one group per controller, applies the replica's limits there,
// reads the OOM-kill counter and removes the groups at the end. Private to ty_executor and
// trainyard-launcher.
//
// Layout: the group of replica `name` in controller C is
//   <root>/C/<own>/<name>
// where <own> is the caller's own cgroup in that hierarchy (from /proc/self/cgroup), so a
// daemon started inside a cgroup (a systemd service, a container, a session's accounting
// group) keeps its replicas beneath it and its own limits and accounting still cover them. For a
// daemon in the root cgroup (the usual case) this is simply <root>/C/<name>. When <own> does not
// exist under the mount (a bind-mounted subtree without a cgroup namespace), <own> is dropped.
// The launcher inherits the daemon's cgroups, so both resolve the same directories.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/core/time.h"

namespace trainyard::executor::cgroup_v1 {

// The controllers a replica's processes join, in the order the launcher sets them up.
inline constexpr const char* kMemory = "memory";
inline constexpr const char* kCpu = "cpu";
// cpu.cfs_period_us the launcher writes; cpu.cfs_quota_us = cpu_millis * kCfsPeriodMicros / 1000.
inline constexpr int64_t kCfsPeriodMicros = 100000;
// The kernel's smallest accepted cpu.cfs_quota_us.
inline constexpr int64_t kMinCfsQuotaMicros = 1000;

// OK when `mount_dir` (e.g. /sys/fs/cgroup/memory) is a cgroup v1 hierarchy with `controller`
// attached; otherwise FAILED_PRECONDITION saying what it is instead (missing, a plain directory
// such as the tmpfs at /sys/fs/cgroup, cgroup v2).
Status CheckHierarchy(const std::string& mount_dir, const std::string& controller);

// The directory of group `name` (a relative path such as "trainyard/job.replica-0") in the
// `controller` hierarchy mounted at <root>/<controller>; see the layout above.
std::string GroupDir(const std::string& root, const std::string& controller,
                     const std::string& name);

// INVALID_ARGUMENT unless `name` is a non-empty relative path without "." or ".." components.
Status ValidateGroupName(const std::string& name);

// mkdir -p of a group directory.
Status CreateGroup(const std::string& dir);
// Writes one control file of an existing group (never creates it: on a directory that is not a
// cgroup, the write fails with NOT_FOUND instead of making a file that enforces nothing).
Status WriteControl(const std::string& dir, const char* file, std::string_view value);
bool HasControl(const std::string& dir, const char* file);

// The "oom_kill N" field of memory.oom_control: how many processes of the group the kernel's
// OOM killer killed (kernels >= 4.13). nullopt when the file or the field is missing.
std::optional<int64_t> ReadOomKillCount(const std::string& memory_dir);
// memory.failcnt: how often usage hit the limit. Only a hint (reclaim usually succeeds), for
// kernels without oom_kill: see the launcher for how it is combined with the exit signal.
std::optional<int64_t> ReadFailCount(const std::string& memory_dir);

// The pids in the group's cgroup.procs (empty when the group is gone or empty).
std::vector<pid_t> ListPids(const std::string& dir);

// Empties and removes a group: SIGKILLs every pid in it, calls `wait_a_little` (which should
// reap the caller's children: zombies keep a group busy, and pause a few milliseconds), and
// retries rmdir until it succeeds or `timeout` is over. A group that does not exist is OK.
// `wait_a_little` may be empty (then it sleeps 5 ms).
Status DestroyGroup(const std::string& dir, Duration timeout,
                    const std::function<void()>& wait_a_little = {});

// The memory cgroup a process is in, for a launcher whose groups someone else made (Slurm's
// task/cgroup puts each task in slurm.../job_J/step_S/task_T, cgroup v1, or
// .../job_J/step_S/user/task_T, cgroup v2). Resolved from the process's /proc/PID/cgroup and
// /proc/PID/mountinfo texts: the mount of the memory hierarchy (cgroup v1) or of the unified one
// (cgroup2) whose root contains the group, so a mount of a subtree or one made inside a cgroup
// namespace resolves too. Pure (tested on fixed texts); nullopt when no mount holds the group.
struct MemoryGroup {
  std::string dir;  // e.g. /sys/fs/cgroup/memory/slurm/uid_0/job_5/step_0/task_0
  bool v2 = false;  // the unified hierarchy (memory.events) rather than v1 (memory.oom_control)
  // The mount point of the hierarchy: the limit is looked for from `dir` up to, but not
  // including, this directory (the mount's root is the host's or the namespace's own).
  std::string mount_point;
};
std::optional<MemoryGroup> ResolveMemoryGroup(std::string_view proc_cgroup,
                                              std::string_view mountinfo);
// The same for the calling process (reads /proc/self/cgroup and /proc/self/mountinfo).
std::optional<MemoryGroup> OwnMemoryGroup();
// How many processes of the group the OOM killer killed: "oom_kill N" of memory.oom_control
// (v1) or of memory.events (v2, which counts its descendants too). nullopt when unreadable.
std::optional<int64_t> ReadGroupOomKills(const MemoryGroup& group);
// The smallest memory limit on the group or its ancestors below the mount point
// (memory.limit_in_bytes, v1; memory.max, v2), 0 when there is none.
int64_t ReadGroupMemoryLimit(const MemoryGroup& group);

}  // namespace trainyard::executor::cgroup_v1
