#include "log_format.h"

#include "time_format.h"

namespace trainyard::cli {

std::vector<std::string> SplitMessageLines(std::string_view m) {
  // Line boundaries of str.splitlines(): \n \r \r\n \v \f \x1c \x1d \x1e \x85 \u2028 \u2029.
  std::vector<std::string> lines;
  std::string cur;
  size_t i = 0;
  auto flush = [&] {
    lines.push_back(cur);
    cur.clear();
  };
  while (i < m.size()) {
    unsigned char c = static_cast<unsigned char>(m[i]);
    if (c == '\r') {
      flush();
      i += (i + 1 < m.size() && m[i + 1] == '\n') ? 2 : 1;
    } else if (c == '\n' || c == '\v' || c == '\f' || c == 0x1c || c == 0x1d || c == 0x1e) {
      flush();
      ++i;
    } else if (c == 0xC2 && i + 1 < m.size() && static_cast<unsigned char>(m[i + 1]) == 0x85) {
      flush();
      i += 2;
    } else if (c == 0xE2 && i + 2 < m.size() && static_cast<unsigned char>(m[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(m[i + 2]) == 0xA8 ||
                static_cast<unsigned char>(m[i + 2]) == 0xA9)) {
      flush();
      i += 3;
    } else {
      cur.push_back(m[i]);
      ++i;
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  if (lines.empty()) lines.emplace_back();
  return lines;
}

std::vector<std::string> FormatLogEntry(const client::LogEntry& entry, bool allow_multiline) {
  std::string prefix = entry.severity + "\t" + LocalLogTime(entry.timestamp) + "\t" +
                       entry.task_name + "\t" + entry.trial_id + "\t";
  std::vector<std::string> out;
  if (allow_multiline) {
    out.push_back(prefix + entry.message + "\n");
    return out;
  }
  for (const auto& line : SplitMessageLines(entry.message)) out.push_back(prefix + line + "\n");
  return out;
}

}  // namespace trainyard::cli
