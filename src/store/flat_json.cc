#include "flat_json.h"

#include <cctype>
#include <charconv>

namespace trainyard::store::sqlite {
namespace {

// Position of the first '"', '\\' or control character at or after `from`, or npos.
size_t FindSpecial(std::string_view s, size_t from) {
  for (size_t i = from; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\' || c < 0x20) return i;
  }
  return std::string_view::npos;
}

}  // namespace

void JsonWriter::StringArray(const std::vector<std::string>& values) {
  Sep();
  out_ += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out_ += ',';
    AppendString(values[i]);
  }
  out_ += ']';
}

void JsonWriter::AppendString(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  out_ += '"';
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += c;
    } else if (u < 0x20) {
      out_ += "\\u00";
      out_ += kHex[u >> 4];
      out_ += kHex[u & 0xf];
    } else {
      out_ += c;  // UTF-8 passes through unchanged
    }
  }
  out_ += '"';
}

bool JsonReader::Fail() {
  if (ok_) error_at_ = i_;
  ok_ = false;
  return false;
}

void JsonReader::Ws() {
  while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) {
    ++i_;
  }
}

bool JsonReader::Expect(char c) {
  Ws();
  if (i_ >= s_.size() || s_[i_] != c) return Fail();
  ++i_;
  return true;
}

bool JsonReader::BeginObject() {
  first_member_ = true;
  return ok_ && Expect('{');
}

bool JsonReader::NextKey(std::string_view* key, std::string* scratch) {
  if (!ok_) return false;
  Ws();
  if (i_ < s_.size() && s_[i_] == '}') {
    ++i_;
    Ws();
    if (i_ != s_.size()) return Fail();  // trailing garbage
    return false;
  }
  if (!first_member_ && !Expect(',')) return false;
  first_member_ = false;
  Ws();
  // Fast path: a key without escapes is returned as a view into the text.
  if (i_ < s_.size() && s_[i_] == '"') {
    size_t end = FindSpecial(s_, i_ + 1);
    if (end != std::string_view::npos && s_[end] == '"') {
      *key = s_.substr(i_ + 1, end - i_ - 1);
      i_ = end + 1;
      return Expect(':');
    }
  }
  if (!ParseString(scratch)) return false;
  *key = *scratch;
  return Expect(':');
}

bool JsonReader::ParseString(std::string* out) {
  Ws();
  if (i_ >= s_.size() || s_[i_] != '"') return Fail();
  ++i_;
  out->clear();
  while (true) {
    size_t end = FindSpecial(s_, i_);
    if (end == std::string_view::npos) return Fail();
    if (static_cast<unsigned char>(s_[end]) < 0x20) {
      i_ = end;
      return Fail();
    }
    out->append(s_.data() + i_, end - i_);
    i_ = end + 1;
    if (s_[end] == '"') return true;
    if (i_ >= s_.size()) return Fail();
    char e = s_[i_++];
    switch (e) {
      case '"':
        out->push_back('"');
        break;
      case '\\':
        out->push_back('\\');
        break;
      case '/':
        out->push_back('/');
        break;
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'u': {
        auto hex4 = [&](uint32_t* v) {
          if (i_ + 4 > s_.size()) return false;
          *v = 0;
          for (int k = 0; k < 4; ++k) {
            char h = s_[i_++];
            *v <<= 4;
            if (h >= '0' && h <= '9')
              *v |= static_cast<uint32_t>(h - '0');
            else if (h >= 'a' && h <= 'f')
              *v |= static_cast<uint32_t>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
              *v |= static_cast<uint32_t>(h - 'A' + 10);
            else
              return false;
          }
          return true;
        };
        uint32_t cp = 0;
        if (!hex4(&cp)) return Fail();
        if (cp >= 0xd800 && cp <= 0xdbff) {  // surrogate pair
          uint32_t lo = 0;
          if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') return Fail();
          i_ += 2;
          if (!hex4(&lo) || lo < 0xdc00 || lo > 0xdfff) return Fail();
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        } else if (cp >= 0xdc00 && cp <= 0xdfff) {
          return Fail();
        }
        if (cp < 0x80) {
          out->push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
          out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
          out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
        } else if (cp < 0x10000) {
          out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
          out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
          out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
        } else {
          out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
          out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
          out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
          out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
        }
        break;
      }
      default:
        --i_;
        return Fail();
    }
  }
}

bool JsonReader::ReadString(std::string* out) { return ok_ && ParseString(out); }

bool JsonReader::ReadInt(int64_t* out) {
  if (!ok_) return false;
  Ws();
  const char* begin = s_.data() + i_;
  const char* end = s_.data() + s_.size();
  auto [ptr, ec] = std::from_chars(begin, end, *out);
  if (ec != std::errc() || ptr == begin) return Fail();
  i_ += static_cast<size_t>(ptr - begin);
  if (i_ < s_.size() && (s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E')) return Fail();
  return true;
}

bool JsonReader::ReadBool(bool* out) {
  if (!ok_) return false;
  Ws();
  if (s_.substr(i_, 4) == "true") {
    i_ += 4;
    *out = true;
    return true;
  }
  if (s_.substr(i_, 5) == "false") {
    i_ += 5;
    *out = false;
    return true;
  }
  return Fail();
}

bool JsonReader::ReadStringArray(std::vector<std::string>* out) {
  out->clear();
  if (!ok_ || !Expect('[')) return false;
  Ws();
  if (i_ < s_.size() && s_[i_] == ']') {
    ++i_;
    return true;
  }
  while (true) {
    out->emplace_back();
    if (!ParseString(&out->back())) return false;
    Ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return true;
    }
    if (!Expect(',')) return false;
  }
}

bool JsonReader::Skip() { return ok_ && SkipValue(0); }

bool JsonReader::SkipValue(int depth) {
  if (depth > 64) return Fail();
  Ws();
  if (i_ >= s_.size()) return Fail();
  char c = s_[i_];
  if (c == '"') {
    std::string ignored;
    return ParseString(&ignored);
  }
  if (c == '{' || c == '[') {
    const char close = c == '{' ? '}' : ']';
    ++i_;
    Ws();
    if (i_ < s_.size() && s_[i_] == close) {
      ++i_;
      return true;
    }
    while (true) {
      if (c == '{') {
        std::string key;
        if (!ParseString(&key) || !Expect(':')) return false;
      }
      if (!SkipValue(depth + 1)) return false;
      Ws();
      if (i_ < s_.size() && s_[i_] == close) {
        ++i_;
        return true;
      }
      if (!Expect(',')) return false;
    }
  }
  // A literal or number: consume its characters.
  size_t start = i_;
  while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' ||
                            s_[i_] == '+' || s_[i_] == '.')) {
    ++i_;
  }
  std::string_view token = s_.substr(start, i_ - start);
  if (token.empty()) return Fail();
  if (token == "true" || token == "false" || token == "null") return true;
  if (token[0] == '-' || (token[0] >= '0' && token[0] <= '9')) return true;
  i_ = start;
  return Fail();
}

}  // namespace trainyard::store::sqlite
