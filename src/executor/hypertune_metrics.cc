#include "hypertune_metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

namespace trainyard::executor {
namespace {

// hypertune writes numbers as strings ("0.987", "1000"); other writers may use numbers.
std::optional<double> Number(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return std::nullopt;
  while (*end == ' ') ++end;
  if (*end != '\0') return std::nullopt;
  return d;
}

}  // namespace

std::vector<MetricRecord> ParseMetricFile(std::string_view text, const std::string& tag) {
  std::vector<MetricRecord> out;
  // A plain ASCII tag appears verbatim in every line that has it, so other lines are skipped
  // unparsed; JSON writers escape other tags (json.dumps writes "pr\u00e9cision").
  const bool verbatim = std::all_of(tag.begin(), tag.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (verbatim && line.find(tag) == std::string_view::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    auto it = j.find(tag);
    if (it == j.end()) continue;
    std::optional<double> value = Number(*it);
    if (!value || !std::isfinite(*value)) continue;
    MetricRecord r;
    r.value = *value;
    if (auto ts = j.find("timestamp"); ts != j.end()) {
      auto t = Number(*ts);
      if (t && !std::isfinite(*t)) continue;  // it would break the ordering of every record
      if (t) r.timestamp = *t;
    }
    if (auto gs = j.find("global_step"); gs != j.end()) {
      // Clamped: a step beyond int64 ("1e30") must not overflow the conversion.
      constexpr double kMaxStep = 9.0e18;
      if (auto g = Number(*gs); g && std::isfinite(*g)) {
        r.step = static_cast<int64_t>(std::clamp(*g, -kMaxStep, kMaxStep));
      }
    }
    out.push_back(r);
  }
  return out;
}

std::vector<std::string> MetricTagsInFile(std::string_view text) {
  std::set<std::string> tags;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      if (key == "timestamp" || key == "trial" || key == "global_step" ||
          key == "checkpoint_path") {
        continue;
      }
      std::optional<double> value = Number(it.value());
      if (!value || !std::isfinite(*value)) continue;
      std::string tag = key;
      if (tag.size() > kMaxMetricTagBytes) {
        size_t cut = kMaxMetricTagBytes;
        while (cut > 0 && (static_cast<unsigned char>(tag[cut]) & 0xC0) == 0x80) --cut;
        tag = tag.substr(0, cut) + "...";  // not in the middle of a UTF-8 sequence
      }
      if (tags.size() < kMaxMetricTags) tags.insert(std::move(tag));
    }
  }
  return {tags.begin(), tags.end()};
}

std::optional<std::string> ReadMetricFile(const std::string& path) {
  constexpr off_t kMaxMetricFileBytes = 1 << 20;
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const off_t start = st.st_size > kMaxMetricFileBytes ? st.st_size - kMaxMetricFileBytes : 0;
    std::string text(static_cast<size_t>(st.st_size - start), '\0');
    ssize_t n = ::pread(fd, text.data(), text.size(), start);
    if (n >= 0) {
      text.resize(static_cast<size_t>(n));
      if (start > 0) text.erase(0, text.find('\n') + 1);  // drop the cut first line
      out = std::move(text);
    }
  }
  ::close(fd);
  return out;
}

}  // namespace trainyard::executor
