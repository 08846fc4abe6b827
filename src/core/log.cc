#include "trainyard/core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace trainyard {

namespace {
std::mutex& LoggerMutex() {
  static std::mutex mu;
  return mu;
}
}  // namespace

std::shared_ptr<spdlog::logger> Logger(const std::string& name) {
  if (auto l = spdlog::get(name)) return l;
  std::lock_guard<std::mutex> lock(LoggerMutex());
  if (auto l = spdlog::get(name)) return l;
  auto l = spdlog::stderr_color_mt(name);
  l->set_level(spdlog::get_level());
  l->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ [%n] %v");
  return l;
}

void SetLogLevel(const std::string& level) {
  auto lvl = spdlog::level::from_str(level);
  spdlog::set_level(lvl);
  spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) { l->set_level(lvl); });
}

}  // namespace trainyard
