// The list filter (filter.h). Grammar, after AIP-160 (OR binds tighter than AND):
//   expression  := sequence { "AND" sequence }
//   sequence    := factor { factor }              (juxtaposition is AND)
//   factor      := term { "OR" term }
//   term        := [ "NOT" | "-" ] simple
//   simple      := "(" expression ")" | restriction
//   restriction := FIELD comparator VALUE         comparator: : = != < <= > >=
//   VALUE       := bare word (up to whitespace or a parenthesis) | "double-quoted \"string\""
// Filterable fields (camelCase or snake_case spelling):
//   jobId, state, createTime, startTime, endTime, errorMessage, labels.KEY, labels (labels:KEY
//   tests that KEY is present), trainingInput.scaleTier, trainingInput.region,
//   trainingInput.pythonModule, trainingInput.runtimeVersion, trainingInput.pythonVersion,
//   trainingInput.masterType, trainingInput.jobDir.
// Semantics: ":" and "=" are equality, where "*" in the value is a wildcard (a trailing "*" is a
// prefix match, "field:*" tests presence); "!=" is its negation; < <= > >= compare strings
// bytewise and times chronologically. Strings are case-sensitive; state and scaleTier names are
// not. Times are RFC 3339 (or a bare YYYY-MM-DD, meaning midnight UTC) and, when the value has no
// fraction, compared at whole seconds, as the API shows them. An absent value (unset time,
// missing label) satisfies only "!=".
#include "trainyard/model/filter.h"

#include <cstdint>
#include <vector>

#include "trainyard/core/time.h"

namespace trainyard::model {
namespace {

enum class Op : uint8_t { kHas, kEq, kNe, kLt, kLe, kGt, kGe };

enum class FieldId : uint8_t {
  kJobId,
  kState,
  kCreateTime,
  kStartTime,
  kEndTime,
  kErrorMessage,
  kLabel,     // labels.KEY
  kLabelKey,  // labels:KEY
  kScaleTier,
  kRegion,
  kPythonModule,
  kRuntimeVersion,
  kPythonVersion,
  kMasterType,
  kJobDir,
};

enum class Pattern : uint8_t { kExact, kPrefix, kGlob, kAny };

struct Node {
  enum class Kind : uint8_t { kTrue, kAnd, kOr, kNot, kRestriction };
  Kind kind = Kind::kTrue;
  std::vector<uint32_t> children;
  // Restriction.
  FieldId field = FieldId::kJobId;
  Op op = Op::kEq;
  Pattern pattern = Pattern::kExact;
  std::string value;  // string value (without a trailing '*' for kPrefix)
  std::string key;    // label key for kLabel
  JobState state = JobState::kStateUnspecified;
  Timestamp time = 0;
  bool whole_seconds = true;
};

struct FieldName {
  std::string_view camel;
  std::string_view snake;
  FieldId id;
};

constexpr FieldName kFields[] = {
    {"jobId", "job_id", FieldId::kJobId},
    {"state", "state", FieldId::kState},
    {"createTime", "create_time", FieldId::kCreateTime},
    {"startTime", "start_time", FieldId::kStartTime},
    {"endTime", "end_time", FieldId::kEndTime},
    {"errorMessage", "error_message", FieldId::kErrorMessage},
    {"trainingInput.scaleTier", "training_input.scale_tier", FieldId::kScaleTier},
    {"trainingInput.region", "training_input.region", FieldId::kRegion},
    {"trainingInput.pythonModule", "training_input.python_module", FieldId::kPythonModule},
    {"trainingInput.runtimeVersion", "training_input.runtime_version", FieldId::kRuntimeVersion},
    {"trainingInput.pythonVersion", "training_input.python_version", FieldId::kPythonVersion},
    {"trainingInput.masterType", "training_input.master_type", FieldId::kMasterType},
    {"trainingInput.jobDir", "training_input.job_dir", FieldId::kJobDir},
};

constexpr std::string_view kFieldList =
    "jobId, state, createTime, startTime, endTime, errorMessage, labels.KEY, "
    "trainingInput.scaleTier, trainingInput.region, trainingInput.pythonModule, "
    "trainingInput.runtimeVersion, trainingInput.pythonVersion, trainingInput.masterType, "
    "trainingInput.jobDir";

bool IsTime(FieldId f) {
  return f == FieldId::kCreateTime || f == FieldId::kStartTime || f == FieldId::kEndTime;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

// Glob with '*' only; iterative, no allocation.
bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] != '*' && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool PatternMatches(const Node& n, std::string_view v) {
  switch (n.pattern) {
    case Pattern::kAny:
      return true;
    case Pattern::kExact:
      return v == n.value;
    case Pattern::kPrefix:
      return v.substr(0, n.value.size()) == n.value;
    case Pattern::kGlob:
      return GlobMatch(n.value, v);
  }
  return false;
}

bool MatchString(const Node& n, const std::string* v) {
  switch (n.op) {
    case Op::kHas:
    case Op::kEq:
      return v != nullptr && PatternMatches(n, *v);
    case Op::kNe:
      return v == nullptr || !PatternMatches(n, *v);
    case Op::kLt:
      return v != nullptr && *v < n.value;
    case Op::kLe:
      return v != nullptr && *v <= n.value;
    case Op::kGt:
      return v != nullptr && *v > n.value;
    case Op::kGe:
      return v != nullptr && *v >= n.value;
  }
  return false;
}

bool MatchTime(const Node& n, Timestamp ts) {
  if (ts == 0) return n.op == Op::kNe;
  if (n.pattern == Pattern::kAny) return n.op != Op::kNe;
  if (n.whole_seconds) {  // floor to the second the API shows
    Timestamp rem = ts % kMicrosPerSecond;
    ts -= rem < 0 ? rem + kMicrosPerSecond : rem;
  }
  switch (n.op) {
    case Op::kHas:
    case Op::kEq:
      return ts == n.time;
    case Op::kNe:
      return ts != n.time;
    case Op::kLt:
      return ts < n.time;
    case Op::kLe:
      return ts <= n.time;
    case Op::kGt:
      return ts > n.time;
    case Op::kGe:
      return ts >= n.time;
  }
  return false;
}

// Enum-valued fields: equality by name (the value was upper-cased when compiled).
bool MatchEnum(const Node& n, std::string_view name) {
  bool eq = PatternMatches(n, name);
  return n.op == Op::kNe ? !eq : eq;
}

bool MatchRestriction(const Node& n, const Job& job) {
  switch (n.field) {
    case FieldId::kJobId:
      return MatchString(n, &job.job_id);
    case FieldId::kState:
      if (n.pattern == Pattern::kExact) return (job.state == n.state) == (n.op != Op::kNe);
      return MatchEnum(n, JobStateName(job.state));
    case FieldId::kCreateTime:
      return MatchTime(n, job.create_time);
    case FieldId::kStartTime:
      return MatchTime(n, job.start_time);
    case FieldId::kEndTime:
      return MatchTime(n, job.end_time);
    case FieldId::kErrorMessage:
      return MatchString(n, job.error_message.empty() ? nullptr : &job.error_message);
    case FieldId::kLabel: {
      auto it = job.labels.find(n.key);
      return MatchString(n, it == job.labels.end() ? nullptr : &it->second);
    }
    case FieldId::kLabelKey: {
      bool found = false;
      if (n.pattern == Pattern::kExact) {
        found = job.labels.count(n.value) > 0;
      } else {
        for (const auto& [k, v] : job.labels) {
          if (PatternMatches(n, k)) {
            found = true;
            break;
          }
        }
      }
      return n.op == Op::kNe ? !found : found;
    }
    case FieldId::kScaleTier:
      return MatchEnum(n, job.spec.scale_tier);
    case FieldId::kRegion:
      return MatchString(n, &job.spec.region);
    case FieldId::kPythonModule:
      return MatchString(n, &job.spec.python_module);
    case FieldId::kRuntimeVersion:
      return MatchString(n, &job.spec.runtime_version);
    case FieldId::kPythonVersion:
      return MatchString(n, &job.spec.python_version);
    case FieldId::kMasterType:
      return MatchString(n, &job.spec.master.machine_type);
    case FieldId::kJobDir:
      return MatchString(n, &job.spec.job_dir);
  }
  return false;
}

class CompiledFilter final : public Filter {
 public:
  CompiledFilter(std::vector<Node> nodes, uint32_t root) : nodes_(std::move(nodes)), root_(root) {}

  bool Matches(const Job& job) const override { return Eval(root_, job); }

  std::optional<JobState> RequiredState() const override {
    for (uint32_t i : TopConjuncts()) {
      const Node& n = nodes_[i];
      if (n.kind == Node::Kind::kRestriction && n.field == FieldId::kState && n.op != Op::kNe &&
          n.pattern == Pattern::kExact) {
        return n.state;
      }
    }
    return std::nullopt;
  }

  std::optional<std::string> RequiredJobIdPrefix() const override {
    for (uint32_t i : TopConjuncts()) {
      const Node& n = nodes_[i];
      if (n.kind != Node::Kind::kRestriction || n.field != FieldId::kJobId ||
          (n.op != Op::kEq && n.op != Op::kHas)) {
        continue;
      }
      if (n.pattern == Pattern::kExact || n.pattern == Pattern::kPrefix) return n.value;
      if (n.pattern == Pattern::kGlob && n.value.front() != '*') {
        return n.value.substr(0, n.value.find('*'));
      }
    }
    return std::nullopt;
  }

  std::optional<Timestamp> CreateTimeFloor() const override {
    // MatchTime: a job that passes one of these has create_time >= n.time (flooring to the
    // second only lowers the value compared).
    std::optional<Timestamp> floor;
    for (uint32_t i : TopConjuncts()) {
      const Node& n = nodes_[i];
      if (n.kind != Node::Kind::kRestriction || n.field != FieldId::kCreateTime ||
          n.pattern == Pattern::kAny ||
          (n.op != Op::kGt && n.op != Op::kGe && n.op != Op::kEq && n.op != Op::kHas)) {
        continue;
      }
      if (!floor || n.time > *floor) floor = n.time;
    }
    return floor;
  }

 private:
  std::vector<uint32_t> TopConjuncts() const {
    const Node& root = nodes_[root_];
    if (root.kind == Node::Kind::kAnd) return root.children;
    return {root_};
  }

  bool Eval(uint32_t i, const Job& job) const {
    const Node& n = nodes_[i];
    switch (n.kind) {
      case Node::Kind::kTrue:
        return true;
      case Node::Kind::kAnd:
        for (uint32_t c : n.children) {
          if (!Eval(c, job)) return false;
        }
        return true;
      case Node::Kind::kOr:
        for (uint32_t c : n.children) {
          if (Eval(c, job)) return true;
        }
        return false;
      case Node::Kind::kNot:
        return !Eval(n.children[0], job);
      case Node::Kind::kRestriction:
        return MatchRestriction(n, job);
    }
    return false;
  }

  std::vector<Node> nodes_;
  uint32_t root_;
};

constexpr int kMaxDepth = 100;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Result<std::unique_ptr<Filter>> Parse() {
    SkipSpace();
    uint32_t root;
    if (pos_ == s_.size()) {
      root = Add(Node{});
    } else {
      root = ParseExpression();
      if (error_.ok()) {
        SkipSpace();
        if (pos_ < s_.size()) {
          Fail(s_[pos_] == ')' ? "unbalanced ')'" : "unexpected text");
        }
      }
    }
    if (!error_.ok()) return error_;
    return std::unique_ptr<Filter>(new CompiledFilter(std::move(nodes_), root));
  }

 private:
  static bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  static bool EndsWord(char c) { return IsSpace(c) || c == '(' || c == ')'; }

  void SkipSpace() {
    while (pos_ < s_.size() && IsSpace(s_[pos_])) ++pos_;
  }

  // True (and consumes it) when the keyword `kw` stands at the cursor as a whole word.
  bool Keyword(std::string_view kw) {
    SkipSpace();
    if (s_.substr(pos_, kw.size()) != kw) return false;
    size_t end = pos_ + kw.size();
    if (end < s_.size() && !EndsWord(s_[end])) return false;
    pos_ = end;
    return true;
  }

  bool PeekKeyword(std::string_view kw) {
    size_t saved = pos_;
    bool found = Keyword(kw);
    pos_ = saved;
    return found;
  }

  void Fail(const std::string& what) {
    if (!error_.ok()) return;
    error_ = InvalidArgument("invalid filter: " + what + " at position " +
                             std::to_string(pos_ + 1) + " of \"" + std::string(s_) + "\"");
    error_.AddViolation("filter", what);
  }

  uint32_t Add(Node n) {
    nodes_.push_back(std::move(n));
    return static_cast<uint32_t>(nodes_.size() - 1);
  }

  // An AND/OR node of `parts`, flattening nested nodes of the same kind; one part is itself.
  uint32_t Combine(Node::Kind kind, const std::vector<uint32_t>& parts) {
    if (parts.size() == 1) return parts[0];
    Node n;
    n.kind = kind;
    for (uint32_t p : parts) {
      if (nodes_[p].kind == kind) {
        std::vector<uint32_t> inner = nodes_[p].children;
        n.children.insert(n.children.end(), inner.begin(), inner.end());
      } else {
        n.children.push_back(p);
      }
    }
    return Add(std::move(n));
  }

  uint32_t ParseExpression() {
    if (++depth_ > kMaxDepth) {
      Fail("filter nested too deeply");
      return 0;
    }
    std::vector<uint32_t> parts{ParseSequence()};
    while (error_.ok() && Keyword("AND")) parts.push_back(ParseSequence());
    --depth_;
    return error_.ok() ? Combine(Node::Kind::kAnd, parts) : 0;
  }

  uint32_t ParseSequence() {
    std::vector<uint32_t> parts{ParseFactor()};
    while (error_.ok()) {
      SkipSpace();
      if (pos_ == s_.size() || s_[pos_] == ')' || PeekKeyword("AND")) break;
      parts.push_back(ParseFactor());
    }
    return error_.ok() ? Combine(Node::Kind::kAnd, parts) : 0;
  }

  uint32_t ParseFactor() {
    std::vector<uint32_t> parts{ParseTerm()};
    while (error_.ok() && Keyword("OR")) parts.push_back(ParseTerm());
    return error_.ok() ? Combine(Node::Kind::kOr, parts) : 0;
  }

  uint32_t ParseTerm() {
    SkipSpace();
    bool negate = false;
    if (Keyword("NOT")) {
      negate = true;
    } else if (pos_ < s_.size() && s_[pos_] == '-') {
      ++pos_;
      if (pos_ == s_.size() || IsSpace(s_[pos_])) {
        Fail("'-' must be followed directly by a restriction");
        return 0;
      }
      negate = true;
    }
    uint32_t inner = ParseSimple();
    if (!error_.ok() || !negate) return inner;
    Node n;
    n.kind = Node::Kind::kNot;
    n.children.push_back(inner);
    return Add(std::move(n));
  }

  uint32_t ParseSimple() {
    SkipSpace();
    if (pos_ == s_.size()) {
      Fail("expected a restriction such as jobId:census*");
      return 0;
    }
    if (s_[pos_] == '(') {
      ++pos_;
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ')') {
        Fail("empty parentheses");
        return 0;
      }
      uint32_t inner = ParseExpression();
      if (!error_.ok()) return 0;
      SkipSpace();
      if (pos_ == s_.size() || s_[pos_] != ')') {
        Fail("expected ')'");
        return 0;
      }
      ++pos_;
      return inner;
    }
    return ParseRestriction();
  }

  static bool IsOperatorChar(char c) {
    return c == ':' || c == '=' || c == '<' || c == '>' || c == '!';
  }

  uint32_t ParseRestriction() {
    size_t start = pos_;
    while (pos_ < s_.size() && !EndsWord(s_[pos_]) && !IsOperatorChar(s_[pos_]) &&
           s_[pos_] != '"') {
      ++pos_;
    }
    std::string_view name = s_.substr(start, pos_ - start);
    if (name.empty()) {
      Fail(s_[pos_] == ')' ? "unbalanced ')'" : "expected a field name");
      return 0;
    }
    SkipSpace();
    Op op;
    if (s_.substr(pos_, 2) == "!=") {
      op = Op::kNe;
      pos_ += 2;
    } else if (s_.substr(pos_, 2) == "<=") {
      op = Op::kLe;
      pos_ += 2;
    } else if (s_.substr(pos_, 2) == ">=") {
      op = Op::kGe;
      pos_ += 2;
    } else if (pos_ < s_.size() && s_[pos_] == ':') {
      op = Op::kHas;
      ++pos_;
    } else if (pos_ < s_.size() && s_[pos_] == '=') {
      op = Op::kEq;
      ++pos_;
    } else if (pos_ < s_.size() && s_[pos_] == '<') {
      op = Op::kLt;
      ++pos_;
    } else if (pos_ < s_.size() && s_[pos_] == '>') {
      op = Op::kGt;
      ++pos_;
    } else {
      Fail("expected a comparison (:, =, !=, <, <=, >, >=) after \"" + std::string(name) + "\"");
      return 0;
    }
    SkipSpace();
    std::string value;
    if (!ParseValue(&value)) return 0;
    size_t end = pos_;
    pos_ = start;  // errors about the restriction point at its start
    uint32_t node = Compile(name, op, std::move(value));
    pos_ = end;
    return node;
  }

  bool ParseValue(std::string* out) {
    if (pos_ < s_.size() && s_[pos_] == '"') {
      ++pos_;
      while (pos_ < s_.size() && s_[pos_] != '"') {
        char c = s_[pos_++];
        if (c == '\\') {
          if (pos_ == s_.size()) break;
          char e = s_[pos_++];
          c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        }
        out->push_back(c);
      }
      if (pos_ == s_.size()) {
        Fail("unterminated quoted string");
        return false;
      }
      ++pos_;
      return true;
    }
    size_t start = pos_;
    while (pos_ < s_.size() && !EndsWord(s_[pos_]) && s_[pos_] != '"') ++pos_;
    if (pos_ == start || IsOperatorChar(s_[start])) {
      pos_ = start;
      Fail("expected a value");
      return false;
    }
    *out = std::string(s_.substr(start, pos_ - start));
    return true;
  }

  static void SetPattern(Node* n) {
    const std::string& v = n->value;
    size_t star = v.find('*');
    if (star == std::string::npos) {
      n->pattern = Pattern::kExact;
    } else if (v.find_first_not_of('*') == std::string::npos) {
      n->pattern = Pattern::kAny;
    } else if (star == v.size() - 1) {
      n->pattern = Pattern::kPrefix;
      n->value.pop_back();
    } else {
      n->pattern = Pattern::kGlob;
    }
  }

  uint32_t Compile(std::string_view name, Op op, std::string value) {
    Node n;
    n.kind = Node::Kind::kRestriction;
    n.op = op;
    n.value = std::move(value);
    bool found = false;
    constexpr std::string_view kLabelsDot = "labels.";
    if (name.substr(0, kLabelsDot.size()) == kLabelsDot && name.size() > kLabelsDot.size()) {
      n.field = FieldId::kLabel;
      n.key = std::string(name.substr(kLabelsDot.size()));
      found = true;
    } else if (name == "labels") {
      if (op != Op::kHas && op != Op::kNe) {
        Fail(
            "labels can only be tested for a key with labels:KEY; compare values with "
            "labels.KEY=VALUE");
        return 0;
      }
      n.field = FieldId::kLabelKey;
      found = true;
    } else {
      for (const FieldName& f : kFields) {
        if (name == f.camel || name == f.snake) {
          n.field = f.id;
          found = true;
          break;
        }
      }
    }
    if (!found) {
      Fail("unknown field \"" + std::string(name) + "\"; filterable fields are " +
           std::string(kFieldList));
      return 0;
    }
    const bool ordering = op == Op::kLt || op == Op::kLe || op == Op::kGt || op == Op::kGe;
    if (n.field == FieldId::kState || n.field == FieldId::kScaleTier) {
      if (ordering) {
        Fail(std::string(name) + " can only be compared with :, = or !=");
        return 0;
      }
      n.value = Upper(n.value);
      SetPattern(&n);
      if (n.field == FieldId::kState && n.pattern == Pattern::kExact) {
        auto s = ParseJobState(n.value);
        if (!s) {
          Fail("unknown state \"" + n.value +
               "\"; states are QUEUED, PREPARING, RUNNING, SUCCEEDED, FAILED, CANCELLING, "
               "CANCELLED");
          return 0;
        }
        n.state = *s;
      }
    } else if (IsTime(n.field)) {
      if (n.value.find_first_not_of('*') == std::string::npos) {
        if (ordering) {
          Fail("expected a time, e.g. \"2024-01-01T00:00:00Z\"");
          return 0;
        }
        n.pattern = Pattern::kAny;
      } else if (!ParseTimeValue(&n)) {
        Fail("expected an RFC 3339 time such as \"2024-01-01T00:00:00Z\", got \"" + n.value + "\"");
        return 0;
      }
    } else if (!ordering) {
      SetPattern(&n);
    }
    return Add(std::move(n));
  }

  static bool ParseTimeValue(Node* n) {
    std::string text = n->value;
    if (text.size() == 10) text += "T00:00:00Z";  // YYYY-MM-DD
    auto ts = ParseRfc3339(text);
    if (!ts.ok()) return false;
    n->time = *ts;
    n->whole_seconds = *ts % kMicrosPerSecond == 0;
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<Node> nodes_;
  Status error_;
};

}  // namespace

Result<std::unique_ptr<Filter>> ParseFilter(std::string_view text) { return Parser(text).Parse(); }

}  // namespace trainyard::model
