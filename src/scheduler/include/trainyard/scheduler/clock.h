// Where the scheduler gets the time: the real clock in the daemon, a fake one in tests (which
// then decide when time passes, so no test waits for a deadline or measures one).
#pragma once

#include <atomic>

#include "trainyard/core/time.h"

namespace trainyard::scheduler {

class Clock {
 public:
  virtual ~Clock() = default;
  // Microseconds since the Unix epoch (createTime, deadlines, consumedMLUnits).
  virtual Timestamp Now() const = 0;
};

class RealClock final : public Clock {
 public:
  Timestamp Now() const override { return NowMicros(); }
};

// Thread-safe: the test thread advances it while executor callbacks read it.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Timestamp start = 1'700'000'000LL * kMicrosPerSecond) : now_(start) {}
  Timestamp Now() const override { return now_.load(); }
  void Advance(Duration d) { now_ += d; }
  void Set(Timestamp t) { now_ = t; }

 private:
  std::atomic<Timestamp> now_;
};

}  // namespace trainyard::scheduler
