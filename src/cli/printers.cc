#include "printers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "trainyard/resource/value.h"

namespace trainyard::cli {

using ojson = nlohmann::ordered_json;

namespace {

constexpr int kBestWidth = 80;
constexpr int kIndent = 2;

// Fields the API sends as int64 strings that gcloud decodes to integers (compat §0).
const std::set<std::string>& Int64Fields() {
  static const std::set<std::string> k = {
      "workerCount",         "parameterServerCount", "evaluatorCount", "count",
      "completedTrialCount", "trainingStep",         "jobPosition",    "predictionCount",
      "errorCount",          "maxWorkerCount",       "batchSize",      "serviceAccountProject"};
  return k;
}

// double fields: gcloud prints them through its float transform even when integral.
const std::set<std::string>& DoubleFields() {
  static const std::set<std::string> k = {"consumedMLUnits", "objectiveValue", "minValue",
                                          "maxValue",        "discreteValues", "nodeHours"};
  return k;
}

bool IsIntegerText(const std::string& s) {
  static const std::regex re("[-+]?[0-9]+");
  return std::regex_match(s, re);
}

// --- UTF-8 helpers -----------------------------------------------------------------------

std::u32string Decode(std::string_view s) {
  std::u32string out;
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    bool ok = true;
    for (int k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 2) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    out.push_back(ok ? cp : 0xFFFD);
    i += ok ? len : 1;
  }
  return out;
}

void AppendUtf8(std::string* out, char32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Encode(const std::u32string& s, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < s.size(); ++i) AppendUtf8(&out, s[i]);
  return out;
}

size_t DisplayWidth(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

bool IsBreak(char32_t c) { return c == U'\n' || c == 0x85 || c == 0x2028 || c == 0x2029; }
bool IsWhitespaceOrEnd(char32_t c) {
  return c == 0 || c == U' ' || c == U'\t' || c == U'\r' || IsBreak(c);
}
bool IsPrintable(char32_t c) {
  return c == U'\n' || (c >= 0x20 && c <= 0x7E) || c == 0x85 || (c >= 0xA0 && c <= 0xD7FF) ||
         (c >= 0xE000 && c <= 0xFFFD && c != 0xFEFF) || (c >= 0x10000 && c <= 0x10FFFF);
}

// --- scalar analysis (a port of the YAML emitter's analyze_scalar) ---------------------

struct Analysis {
  bool empty = false;
  bool multiline = false;
  bool allow_block_plain = true;
  bool allow_single_quoted = true;
  bool allow_block = true;
};

Analysis Analyze(const std::u32string& s) {
  Analysis a;
  if (s.empty()) {
    a.empty = true;
    a.allow_block_plain = false;
    a.allow_block = false;
    return a;
  }
  bool block_indicators = false;
  auto starts = [&](const char32_t* p) { return s.compare(0, 3, p) == 0; };
  if (s.size() >= 3 && (starts(U"---") || starts(U"..."))) block_indicators = true;
  bool preceded_by_ws = true;
  bool followed_by_ws = s.size() == 1 || IsWhitespaceOrEnd(s[1]);
  bool previous_space = false, previous_break = false;
  bool leading_space = false, leading_break = false, trailing_space = false, trailing_break = false,
       break_space = false, space_break = false;
  bool special = false, line_breaks = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char32_t ch = s[i];
    if (i == 0) {
      if (std::u32string_view(U"#,[]{}&*!|>'\"%@`").find(ch) != std::u32string_view::npos) {
        block_indicators = true;
      }
      if ((ch == U'?' || ch == U':') && followed_by_ws) block_indicators = true;
      if (ch == U'-' && followed_by_ws) block_indicators = true;
    } else {
      if (ch == U':' && followed_by_ws) block_indicators = true;
      if (ch == U'#' && preceded_by_ws) block_indicators = true;
    }
    if (IsBreak(ch)) line_breaks = true;
    if (!IsPrintable(ch)) special = true;
    if (ch == U' ') {
      if (i == 0) leading_space = true;
      if (i == s.size() - 1) trailing_space = true;
      if (previous_break) break_space = true;
      previous_space = true;
      previous_break = false;
    } else if (IsBreak(ch)) {
      if (i == 0) leading_break = true;
      if (i == s.size() - 1) trailing_break = true;
      if (previous_space) space_break = true;
      previous_space = false;
      previous_break = true;
    } else {
      previous_space = previous_break = false;
    }
    preceded_by_ws = IsWhitespaceOrEnd(ch);
    followed_by_ws = i + 2 >= s.size() || IsWhitespaceOrEnd(s[i + 2]);
  }
  a.multiline = line_breaks;
  if (leading_space || leading_break || trailing_space || trailing_break) {
    a.allow_block_plain = false;
  }
  if (trailing_space) a.allow_block = false;
  if (break_space) a.allow_block_plain = a.allow_single_quoted = false;
  if (space_break || special) a.allow_block_plain = a.allow_single_quoted = a.allow_block = false;
  if (line_breaks) a.allow_block_plain = false;
  if (block_indicators) a.allow_block_plain = false;
  return a;
}

// True when a plain scalar with this text would be read back as something else than a string
// (YAML 1.2 core schema as ruamel resolves it, plus timestamps, merge and value keys).
bool ResolvesToNonString(const std::string& s) {
  static const std::regex kBool("true|True|TRUE|false|False|FALSE");
  static const std::regex kNull("~|null|Null|NULL");
  static const std::regex kInt("[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+");
  static const std::regex kFloat(
      "[-+]?([0-9][0-9_]*)\\.[0-9_]*([eE][-+]?[0-9]+)?|[-+]?([0-9][0-9_]*)([eE][-+]?[0-9]+)|"
      "\\.[0-9_]+([eE][-+][0-9]+)?|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");
  static const std::regex kTimestamp(
      "[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt]|[ \\t]+)[0-9]{1,2}:[0-9]{2}:"
      "[0-9]{2}(\\.[0-9]*)?([ \\t]*(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?");
  if (s.empty() || s == "<<" || s == "=") return true;
  return std::regex_match(s, kBool) || std::regex_match(s, kNull) || std::regex_match(s, kInt) ||
         std::regex_match(s, kFloat) || std::regex_match(s, kTimestamp);
}

class YamlEmitter {
 public:
  explicit YamlEmitter(const YamlOptions& options) : options_(options) {}

  std::string Emit(const ojson& doc) {
    if (IsNonEmptyContainer(doc)) {
      if (doc.is_object()) {
        EmitMapping(doc, 0, /*first_inline=*/false);
      } else {
        EmitSequence(doc, 0, "", /*first_inline=*/false);
      }
    } else {
      EmitInlineValue(doc, 0, "");
      Newline();
    }
    return std::move(out_);
  }

 private:
  static bool IsNonEmptyContainer(const ojson& v) {
    return (v.is_object() || v.is_array()) && !v.empty();
  }

  void Write(std::string_view s) {
    out_ += s;
    size_t nl = s.rfind('\n');
    column_ = nl == std::string_view::npos ? column_ + static_cast<int>(DisplayWidth(s))
                                           : static_cast<int>(DisplayWidth(s.substr(nl + 1)));
  }
  void Newline() {
    out_ += '\n';
    column_ = 0;
  }
  void Indent(int n) {
    if (column_ != 0) Newline();
    out_.append(static_cast<size_t>(n), ' ');
    column_ = n;
  }

  std::vector<std::string> Keys(const ojson& obj) const {
    std::vector<std::string> keys;
    for (auto it = obj.begin(); it != obj.end(); ++it) keys.push_back(it.key());
    if (options_.sort_keys) std::sort(keys.begin(), keys.end());
    return keys;
  }

  void EmitMapping(const ojson& obj, int indent, bool first_inline) {
    bool first = true;
    for (const std::string& key : Keys(obj)) {
      if (!(first && first_inline)) Indent(indent);
      first = false;
      EmitString(key, indent + kIndent, /*simple_key=*/true);
      Write(":");
      const ojson& value = obj[key];
      if (value.is_object() && !value.empty()) {
        Newline();
        EmitMapping(value, indent + kIndent, false);
      } else if (value.is_array() && !value.empty()) {
        Newline();
        EmitSequence(value, indent, key, false);
      } else {
        Write(" ");
        EmitInlineValue(value, indent + kIndent, key);
        Newline();
      }
    }
  }

  void EmitSequence(const ojson& arr, int indent, const std::string& key, bool first_inline) {
    bool first = true;
    for (const auto& item : arr) {
      if (!(first && first_inline)) Indent(indent);
      first = false;
      Write("- ");
      if (item.is_object() && !item.empty()) {
        EmitMapping(item, indent + kIndent, true);
      } else if (item.is_array() && !item.empty()) {
        EmitSequence(item, indent + kIndent, key, true);
      } else {
        EmitInlineValue(item, indent + kIndent, key);
        Newline();
      }
    }
  }

  // A scalar or empty container after "key: " or "- "; `indent` is the continuation indent.
  void EmitInlineValue(const ojson& v, int indent, const std::string& key) {
    if (v.is_object()) return Write("{}");
    if (v.is_array()) return Write("[]");
    if (v.is_null()) return Write("null");
    if (v.is_boolean()) return Write(v.get<bool>() ? "true" : "false");
    bool double_field = options_.api_types && DoubleFields().count(key) > 0;
    if (v.is_number_float() || (v.is_number() && double_field)) {
      return Write(FormatGcloudFloat(v.get<double>()));
    }
    if (v.is_number()) return Write(v.dump());
    std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    if (options_.api_types && Int64Fields().count(key) > 0 && IsIntegerText(s)) {
      return Write(s[0] == '+' ? s.substr(1) : s);
    }
    EmitString(s, indent, /*simple_key=*/false);
  }

  void EmitString(const std::string& text, int indent, bool simple_key) {
    std::u32string s = Decode(text);
    Analysis a = Analyze(s);
    if (a.empty) return Write("''");
    if (a.multiline && !simple_key) return WriteLiteral(s, indent);
    if (!(simple_key && a.multiline) && a.allow_block_plain && !ResolvesToNonString(text)) {
      return WritePlain(s, indent, !simple_key);
    }
    if (text.find('\'') != std::string::npos || a.multiline) return WriteDoubleQuoted(s);
    if (a.allow_single_quoted) return WriteSingleQuoted(s, indent, !simple_key);
    WriteDoubleQuoted(s);
  }

  void WritePlain(const std::u32string& s, int indent, bool split) {
    bool spaces = false;
    size_t start = 0;
    for (size_t end = 0; end <= s.size(); ++end) {
      char32_t ch = end < s.size() ? s[end] : 0;
      if (spaces) {
        if (ch != U' ') {
          if (start + 1 == end && column_ > kBestWidth && split) {
            Indent(indent);
          } else {
            Write(Encode(s, start, end));
          }
          start = end;
        }
      } else if (end == s.size() || ch == U' ') {
        Write(Encode(s, start, end));
        start = end;
      }
      spaces = ch == U' ';
    }
  }

  void WriteSingleQuoted(const std::u32string& s, int indent, bool split) {
    Write("'");
    bool spaces = false;
    size_t start = 0;
    for (size_t end = 0; end <= s.size(); ++end) {
      char32_t ch = end < s.size() ? s[end] : 0;
      bool at_end = end == s.size();
      if (spaces) {
        if (at_end || ch != U' ') {
          if (start + 1 == end && column_ > kBestWidth && split && start != 0 && !at_end) {
            Indent(indent);
          } else {
            Write(Encode(s, start, end));
          }
          start = end;
        }
      } else if (at_end || ch == U' ' || ch == U'\'') {
        if (start < end) {
          Write(Encode(s, start, end));
          start = end;
        }
      }
      if (!at_end && ch == U'\'') {
        Write("''");
        start = end + 1;
      }
      spaces = !at_end && ch == U' ';
    }
    Write("'");
  }

  void WriteDoubleQuoted(const std::u32string& s) {
    std::string out = "\"";
    for (char32_t ch : s) {
      switch (ch) {
        case 0:
          out += "\\0";
          continue;
        case 0x07:
          out += "\\a";
          continue;
        case 0x08:
          out += "\\b";
          continue;
        case 0x09:
          out += "\\t";
          continue;
        case 0x0A:
          out += "\\n";
          continue;
        case 0x0B:
          out += "\\v";
          continue;
        case 0x0C:
          out += "\\f";
          continue;
        case 0x0D:
          out += "\\r";
          continue;
        case 0x1B:
          out += "\\e";
          continue;
        case U'"':
          out += "\\\"";
          continue;
        case U'\\':
          out += "\\\\";
          continue;
        case 0x85:
          out += "\\N";
          continue;
        case 0xA0:
          out += "\\_";
          continue;
        case 0x2028:
          out += "\\L";
          continue;
        case 0x2029:
          out += "\\P";
          continue;
        default:
          break;
      }
      if ((ch >= 0x20 && ch <= 0x7E) || (ch >= 0xA0 && ch <= 0xD7FF) ||
          (ch >= 0xE000 && ch <= 0xFFFD && ch != 0xFEFF) || ch >= 0x10000) {
        AppendUtf8(&out, ch);
      } else {
        char buf[12];
        if (ch <= 0xFF) {
          std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(ch));
        } else {
          std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(ch));
        }
        out += buf;
      }
    }
    out += "\"";
    Write(out);
  }

  void WriteLiteral(const std::u32string& s, int indent) {
    std::string hints;
    if (s[0] == U' ' || IsBreak(s[0])) hints += std::to_string(kIndent);
    if (!IsBreak(s.back())) {
      hints += "-";
    } else if (s.size() == 1 || IsBreak(s[s.size() - 2])) {
      hints += "+";
    }
    Write("|" + hints);
    Newline();
    bool breaks = true;
    size_t start = 0;
    for (size_t end = 0; end <= s.size(); ++end) {
      bool at_end = end == s.size();
      char32_t ch = at_end ? 0 : s[end];
      if (breaks) {
        if (at_end || !IsBreak(ch)) {
          for (size_t k = start; k < end; ++k) Newline();
          if (!at_end) {
            out_.append(static_cast<size_t>(indent), ' ');
            column_ = indent;
          }
          start = end;
        }
      } else if (at_end || IsBreak(ch)) {
        Write(Encode(s, start, end));
        if (at_end) Newline();
        start = end;
      }
      if (!at_end) breaks = IsBreak(ch);
    }
    // The caller ends the line; the literal already did.
    if (!out_.empty() && out_.back() == '\n') {
      out_.pop_back();
      column_ = 1;  // anything non-zero: the caller's Newline() restores the break
    }
  }

  const YamlOptions& options_;
  std::string out_;
  int column_ = 0;
};

std::string Pad(const std::string& s, size_t width) {
  size_t w = DisplayWidth(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

std::string Center(const std::string& s, size_t width) {
  size_t w = DisplayWidth(s);
  if (w >= width) return s;
  // Python's str.center(): an odd margin puts the extra space left when the width is odd.
  size_t margin = width - w;
  size_t left = margin / 2 + (margin & width & 1);
  return std::string(left, ' ') + s + std::string(width - w - left, ' ');
}

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(s.substr(start));
      break;
    }
    lines.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string Repeat(std::string_view unit, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += unit;
  return out;
}

}  // namespace

std::string FormatGcloudFloat(double value) { return resource::GcloudFloat(value); }

Result<std::string> JsonToYaml(std::string_view json_text, const YamlOptions& options) {
  ojson doc = ojson::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument("invalid JSON");
  YamlEmitter emitter(options);
  return emitter.Emit(doc);
}

Result<std::string> JsonToPrettyJson(std::string_view json_text) {
  nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument("invalid JSON");
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string FormatTable(const std::vector<std::string>& headers,
                        const std::vector<std::vector<std::string>>& rows) {
  if (rows.empty()) return "";
  std::vector<size_t> widths(headers.size(), 0);
  for (size_t c = 0; c < headers.size(); ++c) widths[c] = DisplayWidth(headers[c]);
  for (const auto& row : rows) {
    for (size_t c = 0; c < headers.size() && c < row.size(); ++c) {
      widths[c] = std::max(widths[c], DisplayWidth(row[c]));
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < headers.size(); ++c) {
      std::string cell = c < cells.size() ? cells[c] : "";
      if (c + 1 < headers.size()) {
        out += Pad(cell, widths[c]) + "  ";
      } else {
        out += cell;
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(headers);
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string FormatBoxTable(std::string_view title, const std::vector<std::string>& headers,
                           const std::vector<std::vector<std::string>>& rows) {
  size_t ncols = headers.size();
  if (ncols == 0) return "";
  std::vector<size_t> widths(ncols, 0);
  for (size_t c = 0; c < ncols; ++c) widths[c] = DisplayWidth(headers[c]);
  for (const auto& row : rows) {
    for (size_t c = 0; c < ncols && c < row.size(); ++c) {
      for (const auto& l : SplitLines(row[c])) widths[c] = std::max(widths[c], DisplayWidth(l));
    }
  }
  // Inner width: every column plus one space each side, plus the separators between columns.
  size_t inner = 0;
  for (size_t w : widths) inner += w + 2;
  inner += ncols - 1;
  size_t title_w = DisplayWidth(title);
  if (title_w + 2 > inner) {
    widths.back() += title_w + 2 - inner;
    inner = title_w + 2;
  }
  auto rule = [&](const char* left, const char* mid, const char* right) {
    std::string out = left;
    for (size_t c = 0; c < ncols; ++c) {
      out += Repeat("─", widths[c] + 2);
      out += c + 1 < ncols ? mid : right;
    }
    return out + "\n";
  };
  auto row_lines = [&](const std::vector<std::string>& cells, bool center) {
    std::vector<std::vector<std::string>> split(ncols);
    size_t height = 1;
    for (size_t c = 0; c < ncols; ++c) {
      split[c] = SplitLines(c < cells.size() ? cells[c] : "");
      height = std::max(height, split[c].size());
    }
    std::string out;
    for (size_t h = 0; h < height; ++h) {
      out += "│";
      for (size_t c = 0; c < ncols; ++c) {
        std::string cell = h < split[c].size() ? split[c][h] : "";
        out += " " + (center ? Center(cell, widths[c]) : Pad(cell, widths[c])) + " │";
      }
      out += "\n";
    }
    return out;
  };
  std::string out;
  if (!title.empty()) {
    out += "┌" + Repeat("─", inner) + "┐\n";
    out += "│" + Center(std::string(title), inner) + "│\n";
    out += rule("├", "┬", "┤");
  } else {
    out += rule("┌", "┬", "┐");
  }
  out += row_lines(headers, /*center=*/true);
  out += rule("├", "┼", "┤");
  for (const auto& row : rows) out += row_lines(row, /*center=*/false);
  out += rule("└", "┴", "┘");
  return out;
}

}  // namespace trainyard::cli
