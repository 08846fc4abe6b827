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
// "text" (the default: "2024-01-02T03:04:05.678 I [sched] message") or "json" (one object per
// line: {"time","level","logger","message"}), for every logger, existing and future.
void SetLogFormat(const std::string& format);

}  // namespace trainyard

#define TY_LOG_INFO(logger, ...) ::trainyard::Logger(logger)->info(__VA_ARGS__)
#define TY_LOG_WARN(logger, ...) ::trainyard::Logger(logger)->warn(__VA_ARGS__)
#define TY_LOG_ERROR(logger, ...) ::trainyard::Logger(logger)->error(__VA_ARGS__)
#define TY_LOG_DEBUG(logger, ...) ::trainyard::Logger(logger)->debug(__VA_ARGS__)
