#include "trainyard/core/failpoint.h"

#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

namespace trainyard::failpoint {
namespace {

struct Armed {
  Point point;
  std::atomic<int> hits{0};
};

// Written only by Configure (before other threads run); read by Hit.
std::vector<std::unique_ptr<Armed>>& Table() {
  static std::vector<std::unique_ptr<Armed>> table;
  return table;
}

std::string& EnvError() {
  static std::string error;
  return error;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParsePositive(std::string_view s, int* out) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return false;
  *out = v;
  return true;
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

const char* ActionName(Action a) {
  switch (a) {
    case Action::kKill:
      return "kill";
    case Action::kAbort:
      return "abort";
    case Action::kSleep:
      return "sleep";
    case Action::kOff:
      break;
  }
  return "off";
}

}  // namespace

namespace internal {
std::atomic<bool> g_armed{false};

void Hit(std::string_view name) {
  for (const auto& a : Table()) {
    if (a->point.name != name) continue;
    const int hit = a->hits.fetch_add(1, std::memory_order_relaxed) + 1;
    if (hit < a->point.from_hit) return;
    switch (a->point.action) {
      case Action::kKill:
        ::kill(::getpid(), SIGKILL);
        ::pause();  // SIGKILL cannot be caught: never returns
        return;
      case Action::kAbort:
        std::abort();
      case Action::kSleep:
        std::this_thread::sleep_for(std::chrono::milliseconds(a->point.sleep_ms));
        return;
      case Action::kOff:
        return;
    }
  }
}
}  // namespace internal

Result<std::vector<Point>> Parse(std::string_view spec) {
  std::vector<Point> points;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    std::string_view entry = Trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("\"" + std::string(entry) + "\" is not name=action");
    }
    Point p;
    std::string_view name = Trim(entry.substr(0, eq));
    std::string_view action = Trim(entry.substr(eq + 1));
    if (!ValidName(name)) {
      return InvalidArgument("\"" + std::string(name) +
                             "\" is not a failpoint name (letters, digits, '.', '_', '-')");
    }
    p.name = std::string(name);
    if (const size_t at = action.rfind('@'); at != std::string_view::npos) {
      if (!ParsePositive(action.substr(at + 1), &p.from_hit) || p.from_hit < 1) {
        return InvalidArgument("failpoint " + p.name + ": \"" + std::string(action.substr(at + 1)) +
                               "\" after '@' is not a hit number (1 or more)");
      }
      action = action.substr(0, at);
    }
    if (action == "kill") {
      p.action = Action::kKill;
    } else if (action == "abort") {
      p.action = Action::kAbort;
    } else if (action == "off") {
      p.action = Action::kOff;
    } else if (action.size() > 7 && action.substr(0, 6) == "sleep(" && action.back() == ')') {
      p.action = Action::kSleep;
      if (!ParsePositive(action.substr(6, action.size() - 7), &p.sleep_ms)) {
        return InvalidArgument("failpoint " + p.name + ": \"" + std::string(action) +
                               "\" needs milliseconds, as sleep(250)");
      }
    } else {
      return InvalidArgument("failpoint " + p.name + ": unknown action \"" + std::string(action) +
                             "\" (kill, abort, sleep(MS) or off, optionally @N)");
    }
    points.push_back(std::move(p));
  }
  return points;
}

Status Configure(std::string_view spec) {
  auto points = Parse(spec);
  if (!points.ok()) return points.status();
  internal::g_armed.store(false);
  auto& table = Table();
  table.clear();
  for (Point& p : *points) {
    auto a = std::make_unique<Armed>();
    a->point = std::move(p);
    table.push_back(std::move(a));
  }
  internal::g_armed.store(!table.empty());
  return Status::Ok();
}

const std::string& ConfigError() { return EnvError(); }

std::string Describe() {
  std::string out;
  for (const auto& a : Table()) {
    if (!out.empty()) out += ",";
    out += a->point.name + "=" + ActionName(a->point.action);
    if (a->point.action == Action::kSleep) out += "(" + std::to_string(a->point.sleep_ms) + ")";
    if (a->point.from_hit > 1) out += "@" + std::to_string(a->point.from_hit);
  }
  return out;
}

namespace {
// The environment's specification, read once when the process starts (after g_armed, which is
// constant-initialized, and the tables, which are built on first use).
struct FromEnvironment {
  FromEnvironment() {
    const char* spec = std::getenv("TRAINYARD_FAILPOINTS");
    if (spec == nullptr || *spec == '\0') return;
    Status s = Configure(spec);
    if (!s.ok()) EnvError() = "TRAINYARD_FAILPOINTS: " + s.message();
  }
};
const FromEnvironment from_environment;
}  // namespace

}  // namespace trainyard::failpoint
