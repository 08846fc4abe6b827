// Failpoints: named places in the daemon where a test can make it die, stall or fail on
// purpose, to prove what a crash at exactly that place leaves behind (docs/faults.md).
//
//   TRAINYARD_FAILPOINTS="name=action[,name=action...]"
//
// read once, when the process starts. Actions:
//   kill       SIGKILL to this process (the same as `kill -9` from outside)
//   abort      std::abort()
//   sleep(MS)  sleep MS milliseconds, then go on
//   off        nothing (a way to switch one point off in a longer list)
// An action may end in `@N`: it fires from the Nth time the point is reached on (`kill@3` dies
// the third time; `sleep(200)@2` sleeps every time but the first).
//
// Unset (the normal case), a failpoint costs one load of a global flag. A malformed variable
// arms nothing; ConfigError() says what is wrong (trainyardd refuses to start with it).
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::failpoint {

enum class Action { kOff, kKill, kAbort, kSleep };

struct Point {
  std::string name;
  Action action = Action::kOff;
  int sleep_ms = 0;  // kSleep
  int from_hit = 1;  // fires from this hit on (1 = every time)
};

// Parses the variable's value. INVALID_ARGUMENT names the bad entry.
Result<std::vector<Point>> Parse(std::string_view spec);

// Replaces the armed points (the environment's, read at start-up, until then). For tests, and
// for a process that reads the specification from elsewhere; call before other threads run.
Status Configure(std::string_view spec);
// The environment's TRAINYARD_FAILPOINTS could not be parsed: why ("" when it could).
const std::string& ConfigError();
// The armed points, "name=action" joined with ",", for a start-up warning ("" when none).
std::string Describe();

namespace internal {
extern std::atomic<bool> g_armed;
void Hit(std::string_view name);
}  // namespace internal

// Reaches failpoint `name`: fires its action when one is armed.
inline void Reach(std::string_view name) {
  if (internal::g_armed.load(std::memory_order_relaxed)) internal::Hit(name);
}

}  // namespace trainyard::failpoint

// A failpoint at this place. `name` is a string literal, "module.place" (docs/faults.md).
#define TY_FAILPOINT(name) ::trainyard::failpoint::Reach(name)
