#include "trainyard/core/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace trainyard {

namespace {
std::mutex& LoggerMutex() {
  static std::mutex mu;
  return mu;
}

std::atomic<bool> g_json{false};
constexpr const char* kTextPattern = "%Y-%m-%dT%H:%M:%S.%e %^%L%$ [%n] %v";

void Put(spdlog::memory_buf_t& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

void AppendJsonString(spdlog::memory_buf_t& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        Put(out, std::string_view("\\\""));
        break;
      case '\\':
        Put(out, std::string_view("\\\\"));
        break;
      case '\n':
        Put(out, std::string_view("\\n"));
        break;
      case '\t':
        Put(out, std::string_view("\\t"));
        break;
      case '\r':
        Put(out, std::string_view("\\r"));
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          const char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
          Put(out, std::string_view(esc, sizeof esc));
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

// One JSON object per line: {"time": RFC 3339 with milliseconds (UTC), "level", "logger",
// "message"}.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    using namespace std::chrono;
    const auto since = msg.time.time_since_epoch();
    const std::time_t secs = duration_cast<seconds>(since).count();
    const int millis = static_cast<int>(duration_cast<milliseconds>(since).count() % 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char when[64];
    std::snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
    Put(dest, std::string_view("{\"time\":\""));
    Put(dest, std::string_view(when));
    Put(dest, std::string_view("\",\"level\":"));
    const auto level = spdlog::level::to_string_view(msg.level);
    AppendJsonString(dest, std::string_view(level.data(), level.size()));
    Put(dest, std::string_view(",\"logger\":"));
    AppendJsonString(dest, std::string_view(msg.logger_name.data(), msg.logger_name.size()));
    Put(dest, std::string_view(",\"message\":"));
    AppendJsonString(dest, std::string_view(msg.payload.data(), msg.payload.size()));
    Put(dest, std::string_view("}\n"));
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

void ApplyFormat(spdlog::logger& l) {
  if (g_json) {
    l.set_formatter(std::make_unique<JsonFormatter>());
  } else {
    l.set_pattern(kTextPattern);
  }
}
}  // namespace

std::shared_ptr<spdlog::logger> Logger(const std::string& name) {
  if (auto l = spdlog::get(name)) return l;
  std::lock_guard<std::mutex> lock(LoggerMutex());
  if (auto l = spdlog::get(name)) return l;
  auto l = spdlog::stderr_color_mt(name);
  l->set_level(spdlog::get_level());
  ApplyFormat(*l);
  return l;
}

void SetLogLevel(const std::string& level) {
  auto lvl = spdlog::level::from_str(level);
  spdlog::set_level(lvl);
  spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) { l->set_level(lvl); });
}

void SetLogFormat(const std::string& format) {
  std::lock_guard<std::mutex> lock(LoggerMutex());
  g_json = format == "json";
  spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { ApplyFormat(*l); });
}

}  // namespace trainyard
