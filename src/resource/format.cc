#include "trainyard/resource/format.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "lexer.h"

namespace trainyard::resource {
namespace {

using internal::Lexer;
using internal::SyntaxError;

bool IsUpperC(char c) { return c >= 'A' && c <= 'Z'; }
bool IsLowerOrDigit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// gcloud's ANGRY_SNAKE_CASE of one key name: "createTime" -> "CREATE_TIME".
std::string AngrySnake(std::string_view name) {
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    char c = name[i];
    if (IsUpperC(c) && i > 0 && IsLowerOrDigit(name[i - 1])) {
      out.push_back('_');
      while (i < name.size() && IsUpperC(name[i])) out.push_back(name[i++]);
      continue;
    }
    if (IsUpperC(c) && i > 0 && i + 1 < name.size() && name[i + 1] >= 'a' && name[i + 1] <= 'z') {
      out.push_back('_');
    }
    out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    ++i;
  }
  return out;
}

size_t Width(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string Repeat(std::string_view s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string LJust(const std::string& s, size_t w) {
  size_t n = Width(s);
  return n >= w ? s : s + std::string(w - n, ' ');
}
std::string RJust(const std::string& s, size_t w) {
  size_t n = Width(s);
  return n >= w ? s : std::string(w - n, ' ') + s;
}
// Python's str.center.
std::string Center(const std::string& s, size_t w) {
  size_t n = Width(s);
  if (n >= w) return s;
  size_t marg = w - n;
  size_t left = marg / 2 + (marg & w & 1);
  return std::string(left, ' ') + s + std::string(marg - left, ' ');
}

class FormatParser {
 public:
  FormatParser(std::string_view text, const Format* defaults) : lex_(text), defaults_(defaults) {
    if (defaults_ != nullptr) {
      for (const Column& col : defaults_->columns) {
        if (col.label_generated) used_labels_.insert(col.label);
      }
    }
  }

  Format Parse() {
    bool attributes_only = false;
    while (lex_.SkipSpace()) {
      if (lex_.IsCharacter("(")) {
        if (!attributes_only) f_.columns.clear();
        f_.has_projection = true;
        ParseKeys(attributes_only);
        attributes_only = false;
      } else if (lex_.IsCharacter("[")) {
        ParseAttributes();
      } else if (lex_.IsCharacter(":")) {
        attributes_only = true;
      } else {
        size_t here = lex_.Position();
        auto name = lex_.Token(":([");
        bool alpha = name && !name->text.empty() &&
                     std::all_of(name->text.begin(), name->text.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
                     });
        if (!alpha) lex_.Fail("Name expected", here);
        f_.name = name->text;
      }
    }
    return f_;
  }

 private:
  std::string Label(const Key& key) {
    std::string label;
    for (auto it = key.rbegin(); it != key.rend(); ++it) {
      if (it->kind != KeyPart::Kind::kName) continue;
      std::string snake = AngrySnake(it->name);
      label = label.empty() ? snake : snake + "_" + label;
      if (used_labels_.insert(label).second) break;
    }
    return label;
  }

  void ParseKeys(bool attributes_only) {
    if (lex_.IsCharacter(")")) return;
    while (true) {
      ParseKey(attributes_only);
      lex_.SkipSpace();
      if (lex_.IsCharacter(")")) break;
      if (!lex_.IsCharacter(",")) lex_.Fail("Expected ) in projection expression");
    }
  }

  void ParseKey(bool attributes_only) {
    Column col;
    col.key = lex_.ParseKey();
    if (lex_.IsCharacter("(", false, true)) {
      std::string name = col.key.empty() ? "" : col.key.back().name;
      if (!col.key.empty()) col.key.pop_back();
      col.transforms = lex_.ParseTransforms(name);
    }
    lex_.SkipSpace();
    bool has_label = false;
    if (lex_.IsCharacter(":")) has_label = ParseKeyAttributes(&col);
    if (attributes_only) {
      // `:(key:sort=1)` adds attributes to the column of that key.
      for (Column& c : f_.columns) {
        if (c.key == col.key) {
          if (col.sort != 0) c.sort = col.sort;
          if (col.reverse) c.reverse = true;
          if (has_label) c.label = col.label;
        }
      }
      return;
    }
    const Column* inherited = nullptr;
    if (defaults_ != nullptr && !col.key.empty()) {
      for (const Column& d : defaults_->columns) {
        if (d.key == col.key) {
          inherited = &d;
          break;
        }
      }
    }
    if (inherited != nullptr) {
      if (!has_label) {
        col.label = inherited->label;
        col.label_generated = inherited->label_generated;
      }
      if (col.transforms.empty()) col.transforms = inherited->transforms;
      if (!col.align_given) col.align = inherited->align;
    } else if (!has_label) {
      col.label_generated = true;
      if (!col.key.empty()) {
        col.label = Label(col.key);
      } else if (!col.transforms.empty()) {
        Key k{{KeyPart::Kind::kName, col.transforms[0].name, 0}};
        for (const std::string& a : col.transforms[0].args)
          k.push_back({KeyPart::Kind::kName, a, 0});
        col.label = Label(k);
      }
    }
    f_.columns.push_back(std::move(col));
  }

  // Returns whether a label was given.
  bool ParseKeyAttributes(Column* col) {
    bool has_label = false;
    while (true) {
      auto tok = lex_.Token("=:,)", false, false);
      std::string name = tok ? tok->text : "";
      size_t here = lex_.Position();
      std::string value;
      bool boolean = true;
      bool flag = true;
      if (lex_.IsCharacter("=", false, true)) {
        boolean = false;
        auto v = lex_.Token(":,)", false, false);
        value = v ? v->text : "";
      } else if (name.rfind("no-", 0) == 0) {
        name = name.substr(3);
        flag = false;
      }
      static const std::set<std::string> kBoolean = {"optional", "reverse", "wrap"};
      if (kBoolean.count(name) > 0) {
        if (!boolean) lex_.Fail("value not expected", here);
      } else if (boolean && name != "wrap") {
        lex_.Fail("value expected", here);
      }
      if (name == "label") {
        col->label = value;
        has_label = true;
      } else if (name == "align") {
        if (value == "left") {
          col->align = Column::Align::kLeft;
        } else if (value == "center") {
          col->align = Column::Align::kCenter;
        } else if (value == "right") {
          col->align = Column::Align::kRight;
        } else {
          lex_.Fail("Unknown alignment", here);
        }
        col->align_given = true;
      } else if (name == "sort") {
        col->sort = std::atoi(value.c_str());
      } else if (name == "reverse") {
        col->reverse = flag;
      } else if (name == "optional" || name == "wrap" || name == "width" || name == "format" ||
                 name == "alias") {
        // Accepted; they change nothing in Trainyard's output.
      } else {
        lex_.Fail("Unknown key attribute", here);
      }
      if (!lex_.IsCharacter(":")) break;
    }
    return has_label;
  }

  void ParseAttributes() {
    while (true) {
      auto name = lex_.Token("=,])", false, false);
      if (name && !name->text.empty()) {
        std::string value = "1";
        if (lex_.IsCharacter("=")) {
          auto v = lex_.Token(",])", false, false);
          value = v ? v->text : "";
          // "\n" and "\t" as written in a shell.
          std::string out;
          for (size_t i = 0; i < value.size(); ++i) {
            if (value[i] == '\\' && i + 1 < value.size() &&
                (value[i + 1] == 'n' || value[i + 1] == 't')) {
              out.push_back(value[i + 1] == 'n' ? '\n' : '\t');
              ++i;
            } else {
              out.push_back(value[i]);
            }
          }
          value = out;
        }
        const std::string& n = name->text;
        f_.attributes[n] = value;
        if (n.rfind("no-", 0) == 0) {
          f_.attributes.erase(n.substr(3));
        } else {
          f_.attributes.erase("no-" + n);
        }
      }
      if (lex_.IsCharacter("]")) break;
      if (!lex_.IsCharacter(",")) lex_.Fail("Expected ] in attribute list");
    }
  }

  Lexer lex_;
  const Format* defaults_;
  Format f_;
  std::set<std::string> used_labels_;
};

// Python's str() as the table printer shows a cell (floats through gcloud's float transform).
std::string TableCell(const Json& v) {
  if (v.is_null()) return "";
  if (v.is_number_float()) return GcloudFloat(v.get<double>());
  return PyStr(v);
}

class Quoter {
 public:
  Quoter(std::string quote, std::string delimiter, std::string separator, std::string terminator)
      : quote_(std::move(quote)),
        delimiter_(std::move(delimiter)),
        separator_(std::move(separator)),
        terminator_(std::move(terminator)) {}

  std::string Quote(const std::string& field) const {
    if (field.empty() || quote_.empty()) return field;
    auto has = [&](const std::string& s) {
      return !s.empty() && field.find(s) != std::string::npos;
    };
    bool needs = has(delimiter_) || has(quote_) || has(separator_) || has(terminator_) ||
                 internal::IsSpace(field.front()) || internal::IsSpace(field.back());
    if (!needs) return field;
    std::string out = quote_;
    for (char c : field) {
      out.push_back(c);
      if (std::string(1, c) == quote_) out.push_back(c);
    }
    return out + quote_;
  }

  // A value/csv cell: dicts as k=v and lists joined by the delimiter.
  std::string Cell(const Json& v) const {
    if (v.is_null()) return "";
    if (v.is_object()) {
      std::string out;
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += delimiter_;
        first = false;
        out += Quote(it.key() + "=" + PyStr(*it));
      }
      return out;
    }
    if (v.is_array()) {
      std::string out;
      bool first = true;
      for (const Json& item : v) {
        if (!first) out += delimiter_;
        first = false;
        out += IsFalsy(item) ? "" : Quote(PyStr(item));
      }
      return out;
    }
    if (v.is_number_float()) return Quote(GcloudFloat(v.get<double>()));
    return Quote(PyStr(v));
  }

  const std::string& separator() const { return separator_; }
  const std::string& terminator() const { return terminator_; }

 private:
  std::string quote_, delimiter_, separator_, terminator_;
};

std::string Attr(const Format& f, const std::string& name, const std::string& def) {
  auto it = f.attributes.find(name);
  return it == f.attributes.end() ? def : it->second;
}

std::string RenderSeparated(const Format& f, const std::vector<Json>& resources, bool csv) {
  std::string quote = csv ? (f.Has("no-quote") ? "" : "\"") : (f.Has("quote") ? "\"" : "");
  Quoter q(quote, Attr(f, "delimiter", ";"), Attr(f, "separator", csv ? "," : "\t"),
           Attr(f, "terminator", "\n"));
  std::string out;
  if (resources.empty()) return out;
  if (csv && !f.Has("no-heading")) {
    std::vector<std::string> labels;
    bool any = false;
    for (const Column& c : f.columns) {
      std::string l = c.label;
      for (char& ch : l) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      any = any || !l.empty();
      labels.push_back(q.Quote(l));
    }
    if (any) {
      for (size_t i = 0; i < labels.size(); ++i) out += (i ? q.separator() : "") + labels[i];
      out += q.terminator();
    }
  }
  for (const Json& r : resources) {
    std::vector<Json> cells = Project(f, r);
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? q.separator() : "") + q.Cell(cells[i]);
    out += q.terminator();
  }
  return out;
}

// Python's sort key of the table printer: numbers first (by value), then text.
struct CellKey {
  double number;
  std::string text;
};

std::string RenderTable(const Format& f, const std::vector<Json>& resources) {
  if (resources.empty() || f.columns.empty()) return "";
  const size_t ncols = f.columns.size();
  std::vector<std::vector<Json>> raw;
  for (const Json& r : resources) raw.push_back(Project(f, r));
  // :sort=N columns order the rows (gcloud's table printer sorts on the projected values).
  std::vector<std::pair<int, size_t>> order;
  for (size_t c = 0; c < ncols; ++c) {
    if (f.columns[c].sort > 0) order.emplace_back(f.columns[c].sort, c);
  }
  std::sort(order.begin(), order.end());
  if (!order.empty()) {
    std::vector<size_t> idx(raw.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    auto key = [&](size_t row, size_t col) {
      const Json& v = raw[row][col];
      double n = v.is_number() ? v.get<double>() : std::numeric_limits<double>::infinity();
      return CellKey{n, TableCell(v)};
    };
    // Groups of keys with the same direction, applied last group first (gcloud's order).
    std::vector<std::pair<std::vector<size_t>, bool>> groups;
    for (const auto& [prec, col] : order) {
      bool rev = f.columns[col].reverse;
      if (groups.empty() || groups.back().second != rev) groups.push_back({{}, rev});
      groups.back().first.push_back(col);
    }
    for (auto g = groups.rbegin(); g != groups.rend(); ++g) {
      if (g->second) std::reverse(idx.begin(), idx.end());
      for (auto col = g->first.rbegin(); col != g->first.rend(); ++col) {
        std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
          CellKey ka = key(a, *col), kb = key(b, *col);
          if (ka.number != kb.number) return ka.number < kb.number;
          return ka.text < kb.text;
        });
      }
      if (g->second) std::reverse(idx.begin(), idx.end());
    }
    std::vector<std::vector<Json>> sorted;
    for (size_t i : idx) sorted.push_back(std::move(raw[i]));
    raw = std::move(sorted);
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : raw) {
    std::vector<std::string> row;
    for (const Json& v : r) row.push_back(TableCell(v));
    rows.push_back(std::move(row));
  }
  const bool heading = !f.Has("no-heading");
  std::vector<std::string> labels;
  for (const Column& c : f.columns) labels.push_back(c.label);
  std::vector<size_t> widths(ncols, 0);
  if (heading) {
    for (size_t c = 0; c < ncols; ++c) widths[c] = Width(labels[c]);
  }
  for (const auto& row : rows) {
    for (size_t c = 0; c < ncols; ++c) widths[c] = std::max(widths[c], Width(row[c]));
  }
  auto justify = [&](const std::string& s, size_t c) {
    switch (f.columns[c].align) {
      case Column::Align::kRight:
        return RJust(s, widths[c]);
      case Column::Align::kCenter:
        return Center(s, widths[c]);
      case Column::Align::kLeft:
        break;
    }
    return LJust(s, widths[c]);
  };
  const bool box = f.Has("box");
  auto it = f.attributes.find("title");
  const bool has_title = it != f.attributes.end();
  const std::string title = has_title ? it->second : "";
  std::string out;
  if (has_title) {
    size_t total = 0;
    for (size_t w : widths) total += w;
    if (total < Width(title)) {
      size_t pad = (Width(title) + ncols - 1) / ncols;
      for (size_t& w : widths) w += pad;
      total += pad * ncols;
    }
    if (box) {
      std::string line = "┌";
      for (size_t c = 0; c < ncols; ++c) line += Repeat("─", widths[c] + (c == 0 ? 2 : 3));
      out += line + "┐\n";
      out += "│" + Center(title, total + 3 * ncols - 1) + "│\n";
    } else {
      std::string line = Center(title, total + 2 * (ncols - 1));
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
  }
  if (box) {
    auto rule = [&](const char* l, const char* m, const char* r) {
      std::string line = l;
      for (size_t c = 0; c < ncols; ++c) {
        if (c > 0) line += m;
        line += Repeat("─", widths[c] + 2);
      }
      return line + r + "\n";
    };
    out += rule(has_title ? "├" : "┌", "┬", has_title ? "┤" : "┐");
    if (heading) {
      std::string line;
      for (size_t c = 0; c < ncols; ++c) line += "│ " + Center(labels[c], widths[c]) + " ";
      out += line + "│\n";
      out += rule("├", "┼", "┤");
    }
    for (const auto& row : rows) {
      std::string line;
      for (size_t c = 0; c < ncols; ++c) line += "│ " + justify(row[c], c) + " ";
      out += line + "│\n";
    }
    out += rule("└", "┴", "┘");
    return out;
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < ncols; ++c) l += (c ? "  " : "") + justify(cells[c], c);
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  if (heading) out += line(labels);
  for (const auto& row : rows) out += line(row);
  return out;
}

}  // namespace

Result<Format> ParseFormat(std::string_view text, const Format* defaults) {
  Format f;
  try {
    f = FormatParser(text, defaults).Parse();
  } catch (const SyntaxError& e) {
    return InvalidArgument(e.what());
  }
  static const std::set<std::string> kPrinted = {"table", "value", "get",  "csv",
                                                 "json",  "yaml",  "none", "default"};
  if (f.name.empty())
    return InvalidArgument("Format [" + std::string(text) +
                           "] names no printer, e.g. table(jobId,state)");
  if (kPrinted.count(f.name) == 0) {
    return InvalidArgument("Format [" + f.name +
                           "] is not supported by trainyard; use table, value, get, csv, json, "
                           "yaml or none");
  }
  if (f.name == "default") f.name = "yaml";
  if ((f.name == "table" || f.name == "value" || f.name == "get" || f.name == "csv") &&
      f.columns.empty()) {
    return InvalidArgument("Format [" + std::string(text) + "] needs a projection, e.g. " + f.name +
                           "(jobId,state)");
  }
  return f;
}

std::vector<Json> Project(const Format& format, const Json& resource) {
  std::vector<Json> out;
  out.reserve(format.columns.size());
  for (const Column& c : format.columns) {
    Json v = c.key.empty() ? resource : GetKey(resource, c.key);
    if (!c.transforms.empty()) v = ApplyTransforms(v, c.transforms);
    out.push_back(std::move(v));
  }
  return out;
}

Json ProjectObject(const Format& format, const Json& resource) {
  if (!format.has_projection) return resource;
  Json out = Json::object();
  std::vector<Json> values = Project(format, resource);
  for (size_t i = 0; i < format.columns.size(); ++i) {
    const Key& key = format.columns[i].key;
    if (values[i].is_null()) continue;
    Json* node = &out;
    bool ok = !key.empty();
    for (size_t k = 0; k < key.size() && ok; ++k) {
      if (key[k].kind != KeyPart::Kind::kName) {
        ok = false;
        break;
      }
      if (k + 1 == key.size()) {
        (*node)[key[k].name] = values[i];
      } else {
        Json& next = (*node)[key[k].name];
        if (!next.is_object()) next = Json::object();
        node = &next;
      }
    }
    if (!ok) out[format.columns[i].label] = values[i];
  }
  return out;
}

std::string Render(const Format& format, const std::vector<Json>& resources) {
  if (format.name == "none") return "";
  if (format.name == "table") return RenderTable(format, resources);
  return RenderSeparated(format, resources, format.name == "csv");
}

Status SortBy(const std::vector<std::string>& keys, std::vector<Json>* resources,
              const std::vector<std::string>& map_fields) {
  auto into_map = [&map_fields](const Key& key) {
    for (size_t i = 0; i + 1 < key.size(); ++i) {
      if (key[i].kind == KeyPart::Kind::kName &&
          std::find(map_fields.begin(), map_fields.end(), key[i].name) != map_fields.end()) {
        return true;
      }
    }
    return false;
  };
  struct SortKey {
    Key key;
    bool reverse;
  };
  std::vector<SortKey> parsed;
  for (std::string name : keys) {
    bool reverse = false;
    while (!name.empty() && name[0] == '~') {
      name.erase(0, 1);
      reverse = true;
    }
    // Slices sort by their first item, as gcloud's --sort-by does.
    for (size_t p = name.find("[]"); p != std::string::npos; p = name.find("[]", p)) {
      name.replace(p, 2, "[0]");
    }
    try {
      Lexer lex(name);
      parsed.push_back({lex.ParseKey(), reverse});
    } catch (const SyntaxError& e) {
      return InvalidArgument(std::string("argument --sort-by: ") + e.what());
    }
  }
  // Groups of keys with the same direction, the last group sorted first, each a stable sort.
  std::vector<std::pair<std::vector<Key>, bool>> groups;
  for (const SortKey& k : parsed) {
    if (groups.empty() || groups.back().second != k.reverse) groups.push_back({{}, k.reverse});
    groups.back().first.push_back(k.key);
  }
  for (auto g = groups.rbegin(); g != groups.rend(); ++g) {
    std::vector<std::pair<std::vector<std::string>, Json>> decorated;
    for (Json& r : *resources) {
      std::vector<std::string> texts;
      for (const Key& k : g->first) texts.push_back(into_map(k) ? "None" : PyStr(GetKey(r, k)));
      decorated.emplace_back(std::move(texts), std::move(r));
    }
    const bool rev = g->second;
    std::stable_sort(decorated.begin(), decorated.end(), [rev](const auto& a, const auto& b) {
      return rev ? b.first < a.first : a.first < b.first;
    });
    resources->clear();
    for (auto& d : decorated) resources->push_back(std::move(d.second));
  }
  return Status::Ok();
}

}  // namespace trainyard::resource
