#include "trainyard/core/units.h"

#include <cstdio>

namespace trainyard {

std::string FormatBytes(int64_t b) {
  char buf[32];
  const double v = static_cast<double>(b);
  if (b >= (1LL << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", v / (1LL << 30));
  } else if (b >= (1LL << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", v / (1LL << 20));
  } else if (b >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", v / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  }
  return buf;
}

}  // namespace trainyard
