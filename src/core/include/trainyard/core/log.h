// The daemon's own diagnostics (not job logs): spdlog behind a thin facade, one named logger per
// module ("api", "sched", "exec", "store", "storage", "daemon"). Messages have no trailing period.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace trainyard {

// Returns the named logger, creating it on first use (thread-safe).
std::shared_ptr<spdlog::logger> Logger(const std::string& name);
// Sets the level of every logger ("trace", "debug", "info", "warn", "error", "off").
void SetLogLevel(const std::string& level);

}  // namespace trainyard

#define TY_LOG_INFO(logger, ...) ::trainyard::Logger(logger)->info(__VA_ARGS__)
#define TY_LOG_WARN(logger, ...) ::trainyard::Logger(logger)->warn(__VA_ARGS__)
#define TY_LOG_ERROR(logger, ...) ::trainyard::Logger(logger)->error(__VA_ARGS__)
#define TY_LOG_DEBUG(logger, ...) ::trainyard::Logger(logger)->debug(__VA_ARGS__)
