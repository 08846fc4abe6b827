// cgroup v1 support for replica resource limits (the launcher applies them; the daemon probes
// once at start whether it can).
#pragma once

#include <string>

namespace trainyard::executor {

struct CgroupProbe {
  bool usable = false;  // memory and cpu controllers are mounted (v1) and writable
  std::string reason;   // why not, for the one daemon log line ("" when usable)
};

// Creates and removes a probe group under <root>/memory and <root>/cpu and checks that
// memory.limit_in_bytes and cpu.cfs_quota_us can be written.
CgroupProbe ProbeCgroupV1(const std::string& root);

}  // namespace trainyard::executor
