#include "json_text.h"

#include <charconv>
#include <cmath>

namespace trainyard::model::internal {

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run = 0;  // start of the pending run of bytes that need no escaping
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default: {
        char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
        out->append(esc, sizeof esc);
      }
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

void AppendJsonDouble(std::string* out, double d) {
  if (!std::isfinite(d)) {
    out->push_back('0');
    return;
  }
  char buf[32];
  std::to_chars_result r;
  if (d == std::trunc(d) && std::fabs(d) < 1e15) {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(d));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, d);
  }
  out->append(buf, r.ptr);
}

void AppendJsonInt(std::string* out, long long v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

}  // namespace trainyard::model::internal
