// The filter parser and evaluator (filter.h). The grammar is gcloud's (resource_filter.py's
// left-factorized BNF):
//   expr    := adjterm [ expr ]            adjacent terms: AND
//   adjterm := orterm [ OR adjterm ]
//   orterm  := andterm [ AND orterm ]
//   andterm := [ NOT ] term
//   term    := [-]key op operand | [-]key.transform(...) op operand | [-]word | ( expr )
#include "trainyard/resource/filter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "lexer.h"
#include "regex.h"

namespace trainyard::resource {
namespace {

using internal::Lexer;
using internal::Regex;
using internal::SyntaxError;

enum class Op { kHas, kEq, kNe, kLt, kLe, kGt, kGe, kRe, kNotRe };

// A number as Python's int() or float() reads it.
struct Number {
  long double v = 0;
};

std::optional<Number> NumberOfText(std::string_view text) {
  std::string_view t = text;
  while (!t.empty() && internal::IsSpace(t.front())) t.remove_prefix(1);
  while (!t.empty() && internal::IsSpace(t.back())) t.remove_suffix(1);
  if (t.empty()) return std::nullopt;
  // Python accepts single underscores between digits.
  std::string clean;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '_') {
      bool digits_around = i > 0 && i + 1 < t.size() &&
                           std::isdigit(static_cast<unsigned char>(t[i - 1])) &&
                           std::isdigit(static_cast<unsigned char>(t[i + 1]));
      if (!digits_around) return std::nullopt;
      continue;
    }
    if (c == 'x' || c == 'X' || c == 'p' || c == 'P') return std::nullopt;  // no hex floats
    clean.push_back(c);
  }
  const char* begin = clean.c_str();
  char* end = nullptr;
  long double v = std::strtold(begin, &end);
  if (end == begin || *end != '\0') return std::nullopt;
  return Number{v};
}

std::optional<Number> NumberOfValue(const Json& v) {
  if (v.is_boolean()) return Number{v.get<bool>() ? 1.0L : 0.0L};
  if (v.is_number_integer()) return Number{static_cast<long double>(v.get<int64_t>())};
  if (v.is_number_unsigned()) return Number{static_cast<long double>(v.get<uint64_t>())};
  if (v.is_number_float()) return Number{static_cast<long double>(v.get<double>())};
  if (v.is_string()) return NumberOfText(v.get_ref<const std::string&>());
  return std::nullopt;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// gcloud's NormalizeForSearch: lower case, HTML tags removed. (gcloud also strips accents
// after NFKD; Trainyard's job fields are ASCII.)
std::string NormalizeForSearch(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') {
      size_t close = s.find('>', i + 1);
      if (close != std::string_view::npos) {
        i = close;
        continue;
      }
    }
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(s[i]))));
  }
  return out;
}

// A value as a term sees it: JSON, or a time when the term's values are times.
struct Value {
  Json json;
  std::optional<Timestamp> time;
};

// Python's str() of a UTC datetime: "2024-01-01 12:00:00+00:00" (microseconds when non-zero).
std::string PyDateTimeStr(Timestamp micros) {
  std::string s = FormatDateTime(
      micros, micros % kMicrosPerSecond != 0 ? "%Y-%m-%d %H:%M:%S.%f" : "%Y-%m-%d %H:%M:%S", false);
  return s + "+00:00";
}

// Python's repr() of the same: "datetime.datetime(2024, 1, 1, 12, 0, tzinfo=tzutc())".
std::string PyDateTimeRepr(Timestamp micros) {
  std::string ymdhm = FormatDateTime(micros, "%Y %m %d %H %M %S", false);
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  std::sscanf(ymdhm.c_str(), "%d %d %d %d %d %d", &y, &mo, &d, &h, &mi, &s);
  int64_t us = ((micros % kMicrosPerSecond) + kMicrosPerSecond) % kMicrosPerSecond;
  std::string out = "datetime.datetime(" + std::to_string(y) + ", " + std::to_string(mo) + ", " +
                    std::to_string(d) + ", " + std::to_string(h) + ", " + std::to_string(mi);
  if (s != 0 || us != 0) out += ", " + std::to_string(s);
  if (us != 0) out += ", " + std::to_string(us);
  return out + ", tzinfo=tzutc())";
}

struct Operand {
  std::string text;
  std::optional<Number> number;
  bool numeric_constant = false;  // true/false
  std::optional<Timestamp> time;  // once the term's values are times
};

Operand MakeOperand(std::string text) {
  Operand o;
  o.text = std::move(text);
  std::string low = Lower(o.text);
  if (low == "true" || low == "false") {
    o.number = Number{low == "true" ? 1.0L : 0.0L};
    o.numeric_constant = true;
  } else {
    o.number = NumberOfText(o.text);
  }
  return o;
}

// A ':' or '=' pattern: gcloud's current rule (`deprecated`, which decides) and the rule it is
// moving to (`standard`, only for the warning).
struct Pattern {
  std::string operand;
  std::shared_ptr<const Regex> standard;
  std::shared_ptr<const Regex> deprecated;  // null: `standard` decides
};

struct Node {
  enum class Kind { kTrue, kAnd, kOr, kNot, kGlobal, kTerm };
  Kind kind = Kind::kTrue;
  std::unique_ptr<Node> left, right;
  // kGlobal
  std::shared_ptr<const Regex> global;
  // kTerm
  Key key;
  std::vector<Call> transforms;
  Op op = Op::kEq;
  std::vector<Operand> operands;
  std::vector<Pattern> patterns;
  std::shared_ptr<const Regex> re;
  enum class Norm { kUnknown, kPlain, kTime } norm = Norm::kUnknown;
  bool time_local_default = true;
};

constexpr std::string_view kLogical[] = {"AND", "NOT", "OR"};

bool IsLogical(std::string_view s) {
  return std::find(std::begin(kLogical), std::end(kLogical), s) != std::end(kLogical);
}

Regex::Flags SearchFlags() { return Regex::Flags{true, true}; }

std::shared_ptr<const Regex> MustCompile(const std::string& pattern, Regex::Flags flags,
                                         const std::string& shown) {
  std::string error;
  auto re = Regex::Compile(pattern, flags, &error);
  if (!re) throw SyntaxError("Filter expression RE pattern [" + shown + "]: " + error);
  return re;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : lex_(text) { groups_.emplace_back(); }

  std::unique_ptr<Node> Parse() {
    auto tree = ParseExpr(false);
    if (!lex_.EndOfInput()) {
      throw SyntaxError("Unexpected tokens [" + lex_.Annotate() + "] in expression.");
    }
    if (!tree) tree = std::make_unique<Node>();
    return tree;
  }

 private:
  enum class Logic { kAnd, kOr };

  static std::unique_ptr<Node> Binary(Node::Kind kind, std::unique_ptr<Node> l,
                                      std::unique_ptr<Node> r) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->left = std::move(l);
    n->right = std::move(r);
    return n;
  }
  static std::unique_ptr<Node> Not(std::unique_ptr<Node> e) {
    auto n = std::make_unique<Node>();
    n->kind = Node::Kind::kNot;
    n->left = std::move(e);
    return n;
  }

  void CheckGrouping(Logic op) {
    groups_.back().insert(op);
    if (groups_.back().size() > 1) {
      // gcloud's words, its repeated "are" included.
      lex_.Fail("Parenthesis grouping is required when AND and OR are are combined");
    }
  }

  // Bounds the recursion (and so the depth of the tree, which is evaluated and destroyed
  // recursively): gcloud's own parser stops at Python's recursion limit.
  class Depth {
   public:
    explicit Depth(Parser* p) : p_(p) {
      if (++p_->depth_ > kMaxDepth)
        p_->lex_.Fail("Filter expression too long or nested too deeply");
    }
    ~Depth() { --p_->depth_; }
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;

   private:
    Parser* p_;
  };

  std::unique_ptr<Node> ParseExpr(bool must) {
    Depth depth(this);
    auto tree = ParseAdjTerm(false);
    if (tree) {
      tree = ParseAdjTail(std::move(tree));
    } else if (must) {
      lex_.Fail("Term expected");
    }
    return tree;
  }

  std::unique_ptr<Node> ParseAdjTail(std::unique_ptr<Node> tree) {
    if (!lex_.IsString("AND", true) && !lex_.IsString("OR", true) && !lex_.IsCharacter(")", true) &&
        !lex_.EndOfInput()) {
      tree = Binary(Node::Kind::kAnd, std::move(tree), ParseExpr(true));
    }
    return tree;
  }

  std::unique_ptr<Node> ParseAdjTerm(bool must) {
    Depth depth(this);
    auto tree = ParseOrTerm(false);
    if (tree) {
      if (lex_.IsString("OR")) {
        CheckGrouping(Logic::kOr);
        tree = Binary(Node::Kind::kOr, std::move(tree), ParseAdjTerm(true));
      }
    } else if (must) {
      lex_.Fail("Term expected");
    }
    return tree;
  }

  std::unique_ptr<Node> ParseOrTerm(bool must) {
    Depth depth(this);
    auto tree = ParseAndTerm(false);
    if (tree) {
      if (lex_.IsString("AND")) {
        CheckGrouping(Logic::kAnd);
        tree = Binary(Node::Kind::kAnd, std::move(tree), ParseOrTerm(true));
      }
    } else if (must) {
      lex_.Fail("Term expected");
    }
    return tree;
  }

  std::unique_ptr<Node> ParseAndTerm(bool must) {
    if (lex_.IsString("NOT")) {
      auto term = ParseTerm(true);
      if (!term) lex_.Fail("Term expected");
      return Not(std::move(term));
    }
    return ParseTerm(must);
  }

  std::optional<Op> ParseOperator() {
    if (!lex_.SkipSpace()) return std::nullopt;
    size_t here = lex_.Position();
    char c = lex_.IsCharacter(":=!<>~");
    if (c == 0) return std::nullopt;
    std::string op(1, c);
    if (!lex_.EndOfInput()) {
      char c2 = lex_.IsCharacter(":=!<>~");
      if (c2 != 0) op.push_back(c2);
    }
    static const std::pair<std::string_view, Op> kOps[] = {
        {":", Op::kHas}, {"=", Op::kEq}, {"!=", Op::kNe}, {"<", Op::kLt},    {"<=", Op::kLe},
        {">=", Op::kGe}, {">", Op::kGt}, {"~", Op::kRe},  {"!~", Op::kNotRe}};
    for (const auto& [name, value] : kOps) {
      if (name == op) {
        lex_.SkipSpace("Term operand");
        return value;
      }
    }
    lex_.Fail("Malformed operator", here);
  }

  std::unique_ptr<Node> ParseTerm(bool must) {
    size_t here = lex_.Position();
    if (!lex_.SkipSpace()) {
      if (must) lex_.Fail("Term expected", here);
      return nullptr;
    }
    if (lex_.IsCharacter(")", true)) return nullptr;
    if (lex_.IsCharacter("(")) {
      groups_.emplace_back();
      auto tree = ParseExpr(false);
      lex_.IsCharacter(")");
      groups_.pop_back();
      return tree;
    }
    const bool invert = lex_.IsCharacter("-") != 0;

    here = lex_.Position();
    Key key;
    std::vector<Call> transforms;
    bool has_transform = false;
    std::optional<SyntaxError> key_error;
    bool unknown_transform = false;
    std::optional<std::string> restriction;
    try {
      key = lex_.ParseKey();
      if (!key.empty() && key[0].kind == KeyPart::Kind::kName && IsLogical(key[0].name)) {
        lex_.Fail("Term expected", here);
      }
      if (lex_.IsCharacter("(", false, true)) {
        std::string name = key.empty() ? "" : key.back().name;
        if (!key.empty()) key.pop_back();
        unknown_transform = !IsKnownTransform(name);
        transforms = lex_.ParseTransforms(name);
        has_transform = true;
      }
    } catch (const SyntaxError& e) {
      key_error = e;
      lex_.SetPosition(here);
      auto tok = lex_.Token(":=!<>~()", false, /*space=*/false);
      restriction = tok ? std::optional<std::string>(tok->text) : std::nullopt;
      key.clear();
      has_transform = false;
    }

    here = lex_.Position();
    std::optional<Op> op = ParseOperator();
    if (!op) {
      std::unique_ptr<Node> tree;
      if (has_transform && key.empty()) {
        lex_.Fail("Global restriction functions are not supported", here);
      } else if (has_transform) {
        lex_.Fail("Operator expected", here);
      } else if (restriction && (*restriction == "AND" || *restriction == "OR")) {
        lex_.Fail("Term expected");
      } else if (key_error && unknown_transform) {
        throw *key_error;
      } else {
        std::string word = restriction.value_or(KeyName(key));
        tree = std::make_unique<Node>();
        tree->kind = Node::Kind::kGlobal;
        tree->global = MustCompile(Regex::Escape(word), Regex::Flags{true, false}, word);
      }
      return invert ? Not(std::move(tree)) : std::move(tree);
    }
    if (key_error) throw *key_error;

    lex_.SkipSpace("Operand");
    here = lex_.Position();
    bool logical = false;
    for (std::string_view w : kLogical) logical = lex_.IsString(w) || logical;
    if (logical) lex_.Fail("Logical operator not expected", here);

    auto term = std::make_unique<Node>();
    term->kind = Node::Kind::kTerm;
    term->key = std::move(key);
    term->transforms = std::move(transforms);
    term->op = *op;
    if ((*op == Op::kEq || *op == Op::kHas) && lex_.IsCharacter("(")) {
      for (std::string& arg : lex_.Args(" \t\n,")) {
        if (!IsLogical(arg)) term->operands.push_back(MakeOperand(std::move(arg)));
      }
    } else {
      auto tok = lex_.Token("()");
      if (!tok) lex_.Fail("Term operand expected", here);
      term->operands.push_back(MakeOperand(std::move(tok->text)));
    }
    Compile(*term);
    return invert ? Not(std::move(term)) : std::move(term);
  }

  // The regular expressions of a term, as gcloud builds them.
  static void Compile(Node& t) {
    if (t.op == Op::kRe || t.op == Op::kNotRe) {
      const std::string& p = t.operands.front().text;
      t.re = MustCompile(p, Regex::Flags{}, p);
      return;
    }
    if (t.op != Op::kHas && t.op != Op::kEq && t.op != Op::kNe) return;
    for (const Operand& o : t.operands) {
      Pattern p;
      p.operand = o.text;
      const std::string norm = NormalizeForSearch(o.text);
      if (t.op == Op::kHas) {
        if (o.text == "*") {
          p.standard = MustCompile(".", SearchFlags(), o.text);
        } else {
          size_t stars = static_cast<size_t>(std::count(norm.begin(), norm.end(), '*'));
          if (stars > 1) {
            throw SyntaxError("At most one * expected in : patterns [" + o.text + "].");
          }
          std::string word = norm;
          bool trailing = !word.empty() && word.back() == '*';
          if (trailing) word.pop_back();
          p.standard = MustCompile("\\b" + Regex::Escape(word) + (trailing ? "" : "\\b"),
                                   SearchFlags(), o.text);
          std::string deprecated;
          if (stars == 0) {
            deprecated = Regex::Escape(norm);
          } else {
            size_t star = norm.find('*');
            std::string left = Regex::Escape(norm.substr(0, star));
            std::string right = Regex::Escape(norm.substr(star + 1));
            if (o.text.front() == '*') {
              deprecated = right + "$";  // *suffix
            } else if (o.text.back() == '*') {
              deprecated = "^" + left;  // prefix*
            } else {
              deprecated = "^" + left + ".*" + right + "$";
            }
          }
          p.deprecated = MustCompile(deprecated, SearchFlags(), o.text);
        }
      } else {
        std::string word = Regex::Escape(norm);
        p.standard = MustCompile("\\b" + word + "\\b", SearchFlags(), o.text);
        p.deprecated = MustCompile("^" + word + "$", SearchFlags(), o.text);
      }
      t.patterns.push_back(std::move(p));
    }
  }

  static constexpr int kMaxDepth = 600;
  Lexer lex_;
  std::vector<std::set<Logic>> groups_;
  int depth_ = 0;
};

bool LooksLikeDateTime(const std::string& s) {
  // \d\d\d\d-\d\d-\d\d[ T]\d\d:\d\d:\d\d at the start.
  static constexpr std::string_view kShape = "dddd-dd-dd?dd:dd:dd";
  if (s.size() < kShape.size()) return false;
  for (size_t i = 0; i < kShape.size(); ++i) {
    char c = s[i];
    switch (kShape[i]) {
      case 'd':
        if (c < '0' || c > '9') return false;
        break;
      case '?':
        if (c != ' ' && c != 'T') return false;
        break;
      default:
        if (c != kShape[i]) return false;
    }
  }
  return true;
}

class CompiledFilter final : public Filter {
 public:
  CompiledFilter(std::unique_ptr<Node> root, Timestamp now) : root_(std::move(root)), now_(now) {
    CollectKeys(*root_);
  }

  Result<bool> Matches(const Json& resource) override {
    for (auto it = missing_.begin(); it != missing_.end();) {
      if (!GetKey(resource, it->second).is_null()) {
        it = missing_.erase(it);
      } else {
        ++it;
      }
    }
    try {
      return Eval(*root_, resource);
    } catch (const SyntaxError& e) {
      return InvalidArgument(e.what());
    }
  }

  std::vector<std::string> MissingKeys() const override {
    std::vector<std::string> out;
    for (const auto& [name, key] : missing_) out.push_back(name);
    return out;
  }

  std::vector<std::string> Warnings() const override { return warnings_; }

 private:
  void CollectKeys(const Node& n) {
    if (n.kind == Node::Kind::kTerm) {
      std::string name;
      for (const KeyPart& p : n.key) {
        if (!name.empty()) name += '.';
        name += p.kind == KeyPart::Kind::kName    ? p.name
                : p.kind == KeyPart::Kind::kIndex ? std::to_string(p.index)
                                                  : "None";
      }
      missing_.emplace(name, n.key);
    }
    if (n.left) CollectKeys(*n.left);
    if (n.right) CollectKeys(*n.right);
  }

  bool Eval(Node& n, const Json& r) {
    switch (n.kind) {
      case Node::Kind::kTrue:
        return true;
      case Node::Kind::kAnd:
        return Eval(*n.left, r) && Eval(*n.right, r);
      case Node::Kind::kOr:
        return Eval(*n.left, r) || Eval(*n.right, r);
      case Node::Kind::kNot:
        return !Eval(*n.left, r);
      case Node::Kind::kGlobal:
        return GlobalMatch(r, *n.global);
      case Node::Kind::kTerm:
        return EvalTerm(n, r);
    }
    return false;
  }

  static bool GlobalMatch(const Json& v, const Regex& re) {
    if (IsFalsy(v)) return false;
    if (v.is_string()) return re.Search(v.get_ref<const std::string&>());
    if (v.is_number() || v.is_boolean()) return re.Search(PyStr(v));
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!it.key().empty() && it.key()[0] == '_') continue;
        if (GlobalMatch(*it, re)) return true;
      }
      return false;
    }
    for (const Json& item : v) {
      if (GlobalMatch(item, re)) return true;
    }
    return false;
  }

  // The first non-empty value decides whether the term's values are times; the operands are
  // then read as times (gcloud's InitializeNormalization).
  void DecideNormalization(Node& t, const Json& v) {
    t.norm = Node::Norm::kPlain;
    if (!v.is_string() || !LooksLikeDateTime(v.get_ref<const std::string&>())) return;
    auto parsed = ParseDateTime(v.get_ref<const std::string&>(), now_, true);
    if (!parsed) return;
    t.norm = Node::Norm::kTime;
    t.time_local_default = true;
    for (Operand& o : t.operands) {
      if (o.text.empty()) continue;
      auto ot = ParseDateTime(o.text, now_, t.time_local_default);
      if (!ot) {
        throw SyntaxError("Invalid date/time or duration [" + o.text + "] for the time key [" +
                          KeyName(t.key) + "]: use an ISO 8601 date-time such as 2024-01-31 or " +
                          "2024-01-31T12:00:00Z, or a duration such as -P1D (one day ago).");
      }
      o.time = ot->micros;
      o.number.reset();
      o.numeric_constant = false;
    }
  }

  static int Compare(long double a, long double b) { return a < b ? -1 : (a > b ? 1 : 0); }
  static int Compare(const std::string& a, const std::string& b) {
    return a < b ? -1 : (a > b ? 1 : 0);
  }
  static bool OrderHolds(Op op, int c) {
    switch (op) {
      case Op::kLt:
        return c < 0;
      case Op::kLe:
        return c <= 0;
      case Op::kGt:
        return c > 0;
      case Op::kGe:
        return c >= 0;
      default:
        return false;
    }
  }

  // gcloud's _MatchOneWordInText for one value and one pattern.
  bool MatchWord(Node& t, const Value& v, const Pattern& p, bool warn) {
    std::string text;
    if (!v.time && (v.json.is_number() || v.json.is_boolean())) {
      auto num = NumberOfValue(v.json);
      auto pn = NumberOfText(p.operand);
      if (num && pn && num->v == pn->v) return true;
      std::string low = Lower(p.operand);
      if (num && num->v == 0 && low == "false") return true;
      if (num && num->v == 1 && low == "true") return true;
      text = PyStr(v.json);
      size_t dot = text.find('.');
      if (dot != std::string::npos && text.find_first_not_of('0', dot + 1) == std::string::npos) {
        text.erase(dot);
      }
    } else if (!v.time && v.json.is_string() && v.json.get_ref<const std::string&>() == p.operand) {
      return true;
    } else if (!v.time && v.json.is_null()) {
      if (p.operand.empty()) return true;
      if (p.operand == "*" && t.op == Op::kHas) return false;
      text = "null";
    } else if (v.time) {
      if (!p.operand.empty()) {
        auto ot = ParseDateTime(p.operand, now_, true);
        if (ot && ot->micros == *v.time) return true;
      }
      text = PyDateTimeStr(*v.time);
    } else {
      text = NormalizeForSearch(PyStr(v.json));
    }
    bool matched = p.standard->Search(text);
    if (!p.deprecated) return matched;
    bool old = p.deprecated->Search(text);
    if (warn && matched != old) {
      bool& warned = t.op == Op::kHas ? warned_has_ : warned_eq_;
      if (!warned) {
        warned = true;
        const char* op = t.op == Op::kHas ? ":" : t.op == Op::kEq ? "=" : "!=";
        warnings_.push_back(
            "--filter : operator evaluation is changing for consistency across Google APIs.  " +
            KeyName(t.key) + op + p.operand + " currently " + (old ? "matches" : "does not match") +
            " but " + (matched ? "will match" : "will not match") +
            " in the near future.  Run `gcloud topic filters` for details.");
      }
    }
    return old;
  }

  // gcloud's _WordMatch: a dict matches by any key or value, a list by any item.
  bool WordMatch(Node& t, const Value& v) {
    std::vector<Value> values;
    bool warn = true;
    if (!v.time && v.json.is_object()) {
      warn = false;
      for (auto it = v.json.begin(); it != v.json.end(); ++it) values.push_back({it.key(), {}});
      for (const Json& item : v.json) values.push_back({item, {}});
    } else if (!v.time && v.json.is_array()) {
      for (const Json& item : v.json) values.push_back({item, {}});
    } else {
      values.push_back(v);
    }
    for (const Value& x : values) {
      for (const Pattern& p : t.patterns) {
        if (MatchWord(t, x, p, warn)) return true;
      }
    }
    return false;
  }

  // One value against one operand; nullopt where Python raises a TypeError.
  std::optional<bool> Apply(Node& t, const Value& v, const Operand& o) {
    switch (t.op) {
      case Op::kHas:
      case Op::kEq:
        return WordMatch(t, v);
      case Op::kNe:
        return !WordMatch(t, v);
      case Op::kRe:
      case Op::kNotRe: {
        if (v.time || !v.json.is_string()) return std::nullopt;
        bool found = t.re->Search(v.json.get_ref<const std::string&>());
        return t.op == Op::kRe ? found : !found;
      }
      default:
        break;
    }
    if (v.time && o.time) return OrderHolds(t.op, v.time < o.time ? -1 : (v.time > o.time ? 1 : 0));
    if (!v.time && !o.time && v.json.is_string()) {
      return OrderHolds(t.op, Compare(v.json.get_ref<const std::string&>(), o.text));
    }
    return std::nullopt;
  }

  // Apply on the text Python falls back to after a TypeError.
  std::optional<bool> ApplyText(Node& t, const std::string& text, const Operand& o) {
    Value as_text{text, {}};
    return Apply(t, as_text, o);
  }

  bool EvalTerm(Node& t, const Json& resource) {
    Json value = GetKey(resource, t.key);
    if (!t.transforms.empty()) value = ApplyTransforms(value, t.transforms);
    std::vector<Value> values;
    if (value.is_array() && !value.empty()) {
      for (const Json& item : value) values.push_back({item, {}});
    } else {
      values.push_back({std::move(value), {}});
    }
    for (Value& v : values) {
      if (IsFalsy(v.json)) continue;
      if (t.norm == Node::Norm::kUnknown) {
        if (!t.transforms.empty()) {
          t.norm = Node::Norm::kPlain;  // transformed values are taken as they are
        } else {
          DecideNormalization(t, v.json);
        }
      }
      if (t.norm == Node::Norm::kTime && v.json.is_string()) {
        auto parsed = ParseDateTime(v.json.get_ref<const std::string&>(), now_, true);
        if (parsed) v.time = parsed->micros;
      }
    }
    for (const Value& v : values) {
      for (const Operand& o : t.operands) {
        const bool word_op = t.op == Op::kHas || t.op == Op::kEq || t.op == Op::kNe;
        if (o.number && !v.time && t.op != Op::kRe && t.op != Op::kNotRe) {
          if (auto num = NumberOfValue(v.json)) {
            bool hit;
            if (word_op) {
              hit = Apply(t, Value{Json(static_cast<double>(num->v)), {}}, o).value_or(false);
            } else {
              hit = OrderHolds(t.op, Compare(num->v, o.number->v));
            }
            if (hit) return true;
            if (!o.numeric_constant) continue;
          }
        }
        if (!v.time && IsFalsy(v.json) && o.time) continue;
        auto hit = Apply(t, v, o);
        if (hit) {
          if (*hit) return true;
          continue;
        }
        // Python's TypeError fallbacks: a number, bool or time compares as its repr; a missing
        // value as "".
        if (v.time) {
          const bool re = t.op == Op::kRe || t.op == Op::kNotRe;
          if ((re || !o.time) && ApplyText(t, PyDateTimeRepr(*v.time), o).value_or(false)) {
            return true;
          }
        } else if (v.json.is_number() || v.json.is_boolean()) {
          if (ApplyText(t, PyStr(v.json), o).value_or(false)) return true;
        } else if (v.json.is_null()) {
          if (ApplyText(t, "", o).value_or(false)) return true;
        }
      }
    }
    return false;
  }

  std::unique_ptr<Node> root_;
  Timestamp now_;
  std::map<std::string, Key> missing_;
  std::vector<std::string> warnings_;
  bool warned_has_ = false;
  bool warned_eq_ = false;
};

}  // namespace

Result<std::unique_ptr<Filter>> Filter::Compile(std::string_view expression,
                                                const FilterOptions& options) {
  try {
    Parser parser(expression);
    std::unique_ptr<Node> root = parser.Parse();
    Timestamp now = options.now != 0 ? options.now : NowMicros();
    return std::unique_ptr<Filter>(new CompiledFilter(std::move(root), now));
  } catch (const SyntaxError& e) {
    return InvalidArgument(e.what());
  }
}

}  // namespace trainyard::resource
