#include "log_filter.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <vector>

#include "trainyard/core/time.h"

namespace trainyard::api {

namespace {

enum class Op { kEq, kNe, kLt, kLe, kGt, kGe, kHas };

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<int64_t> ParseInt(std::string_view s) {
  if (!IsDigits(s)) return std::nullopt;
  while (s.size() > 1 && s[0] == '0') s.remove_prefix(1);
  int64_t out = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return out;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Severity as a number (LogSeverity values); names are case-insensitive, numbers accepted.
std::optional<int64_t> SeverityValue(std::string_view s) {
  if (auto n = ParseInt(s)) return n;
  if (auto sev = model::ParseSeverity(Upper(s))) return static_cast<int64_t>(*sev);
  return std::nullopt;
}

bool IsTimeField(std::string_view path) {
  return path == "timestamp" || path == "receiveTimestamp";
}

template <typename T>
bool CompareOrdered(const T& a, const T& b, Op op) {
  switch (op) {
    case Op::kEq:
    case Op::kHas:
      return a == b;
    case Op::kNe:
      return a != b;
    case Op::kLt:
      return a < b;
    case Op::kLe:
      return a <= b;
    case Op::kGt:
      return a > b;
    case Op::kGe:
      return a >= b;
  }
  return false;
}

}  // namespace

std::string PaddedInsertId(int64_t insert_id) {
  std::string digits = std::to_string(insert_id);
  if (digits.size() >= static_cast<size_t>(kInsertIdWidth)) return digits;
  return std::string(static_cast<size_t>(kInsertIdWidth) - digits.size(), '0') + digits;
}

std::optional<std::string> LogEntryField(const model::LogEntry& e, std::string_view path) {
  const bool service = e.task_name == "service";
  if (path == "resource.type") return std::string("ml_job");
  if (path == "resource.labels.job_id") return e.job_id;
  if (path == "resource.labels.task_name" || path == "labels.task_name" ||
      path == "labels.ml.googleapis.com/task_name") {
    return e.task_name;
  }
  if (path == "resource.labels.project_id") return e.project;
  if (path == "labels.trial_id" || path == "labels.ml.googleapis.com/trial_id") {
    if (e.trial_id.empty()) return std::nullopt;
    return e.trial_id;
  }
  if (path == "logName") {
    return "projects/" + e.project + "/logs/" +
           (service ? "ml.googleapis.com%2F" + e.job_id : e.task_name);
  }
  if (path == "severity") return std::string(model::SeverityName(e.severity));
  if (IsTimeField(path)) return FormatRfc3339Micros(e.timestamp);
  if (path == "insertId") return PaddedInsertId(e.insert_id);
  if (path == "textPayload") {
    if (!service) return std::nullopt;
    return e.message;
  }
  if (path == "jsonPayload.message") {
    if (service) return std::nullopt;
    return e.message;
  }
  if (path == "jsonPayload.levelname") {
    if (service) return std::nullopt;
    return std::string(model::SeverityName(e.severity));
  }
  return std::nullopt;
}

struct LogFilter::Node {
  enum class Type { kAnd, kOr, kNot, kCompare } type = Type::kCompare;
  std::vector<std::unique_ptr<Node>> children;
  // kCompare
  std::string path;
  Op op = Op::kEq;
  std::string value;
  bool any_value = false;  // FIELD:*
  Timestamp time = 0;      // the value parsed, for timestamp fields

  bool Matches(const model::LogEntry& e) const {
    switch (type) {
      case Type::kAnd:
        for (const auto& c : children) {
          if (!c->Matches(e)) return false;
        }
        return true;
      case Type::kOr:
        for (const auto& c : children) {
          if (c->Matches(e)) return true;
        }
        return false;
      case Type::kNot:
        return !children[0]->Matches(e);
      case Type::kCompare:
        return Compare(e);
    }
    return false;
  }

  bool Compare(const model::LogEntry& e) const {
    if (IsTimeField(path)) return CompareOrdered<Timestamp>(e.timestamp, time, op);
    std::optional<std::string> field = LogEntryField(e, path);
    if (!field) return false;
    if (any_value) return true;
    if (path == "severity") {
      auto want = SeverityValue(value);
      return want && CompareOrdered<int64_t>(static_cast<int64_t>(e.severity), *want, op);
    }
    if (path == "insertId") {
      if (auto want = ParseInt(value)) return CompareOrdered<int64_t>(e.insert_id, *want, op);
    }
    if (op == Op::kHas) return Lower(*field).find(Lower(value)) != std::string::npos;
    return CompareOrdered<std::string>(*field, value, op);
  }

  // The value every match has in one of `paths`, when the filter implies one.
  std::optional<std::string> ImpliedEquals(std::initializer_list<std::string_view> paths) const {
    switch (type) {
      case Type::kCompare:
        if (op == Op::kEq && !any_value &&
            std::find(paths.begin(), paths.end(), path) != paths.end()) {
          return value;
        }
        return std::nullopt;
      case Type::kAnd:
        for (const auto& c : children) {
          if (auto v = c->ImpliedEquals(paths)) return v;
        }
        return std::nullopt;
      case Type::kOr: {
        std::optional<std::string> common;
        for (const auto& c : children) {
          auto v = c->ImpliedEquals(paths);
          if (!v || (common && *common != *v)) return std::nullopt;
          common = v;
        }
        return common;
      }
      case Type::kNot:
        return std::nullopt;
    }
    return std::nullopt;
  }

  // [lo, hi) of the timestamps a match can have.
  std::pair<Timestamp, Timestamp> TimeRange() const {
    constexpr Timestamp kMin = std::numeric_limits<Timestamp>::min();
    constexpr Timestamp kMax = std::numeric_limits<Timestamp>::max();
    switch (type) {
      case Type::kCompare:
        if (!IsTimeField(path)) return {kMin, kMax};
        switch (op) {
          case Op::kEq:
          case Op::kHas:
            return {time, time + 1};
          case Op::kGt:
            return {time + 1, kMax};
          case Op::kGe:
            return {time, kMax};
          case Op::kLt:
            return {kMin, time};
          case Op::kLe:
            return {kMin, time + 1};
          case Op::kNe:
            return {kMin, kMax};
        }
        return {kMin, kMax};
      case Type::kAnd: {
        std::pair<Timestamp, Timestamp> r{kMin, kMax};
        for (const auto& c : children) {
          auto [lo, hi] = c->TimeRange();
          r.first = std::max(r.first, lo);
          r.second = std::min(r.second, hi);
        }
        return r;
      }
      case Type::kOr: {
        std::pair<Timestamp, Timestamp> r{kMax, kMin};
        for (const auto& c : children) {
          auto [lo, hi] = c->TimeRange();
          r.first = std::min(r.first, lo);
          r.second = std::max(r.second, hi);
        }
        return r;
      }
      case Type::kNot:
        return {kMin, kMax};
    }
    return {kMin, kMax};
  }

  // The largest insert id below every match (0 = no bound).
  int64_t InsertIdFloor() const {
    switch (type) {
      case Type::kCompare: {
        if (path != "insertId" || any_value) return 0;
        auto v = ParseInt(value);
        if (!v) return 0;
        if (op == Op::kGt) return *v;
        if (op == Op::kGe || op == Op::kEq) return std::max<int64_t>(*v - 1, 0);
        return 0;
      }
      case Type::kAnd: {
        int64_t floor = 0;
        for (const auto& c : children) floor = std::max(floor, c->InsertIdFloor());
        return floor;
      }
      case Type::kOr: {
        int64_t floor = std::numeric_limits<int64_t>::max();
        for (const auto& c : children) floor = std::min(floor, c->InsertIdFloor());
        return children.empty() ? 0 : floor;
      }
      case Type::kNot:
        return 0;
    }
    return 0;
  }
};

namespace {

using Node = LogFilter::Node;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Result<std::unique_ptr<Node>> ParseAll() {
    SkipSpace();
    if (AtEnd()) return std::unique_ptr<Node>();
    TRAINYARD_ASSIGN_OR_RETURN(auto node, ParseOr());
    SkipSpace();
    if (!AtEnd()) return Error("unexpected \"" + std::string(1, s_[pos_]) + "\"");
    return node;
  }

 private:
  bool AtEnd() const { return pos_ >= s_.size(); }
  void SkipSpace() {
    while (!AtEnd() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }

  Status Error(const std::string& what) const {
    return Status(StatusCode::kInvalidArgument,
                  "Unparseable filter: " + what + " at position " + std::to_string(pos_ + 1))
        .AddViolation("filter", what);
  }

  // Whether the keyword `kw` starts at the cursor as a whole word.
  bool AtKeyword(std::string_view kw) const {
    if (s_.substr(pos_, kw.size()) != kw) return false;
    size_t end = pos_ + kw.size();
    return end >= s_.size() || std::isspace(static_cast<unsigned char>(s_[end])) ||
           s_[end] == '(' || s_[end] == ')';
  }

  Result<std::unique_ptr<Node>> ParseOr() {
    TRAINYARD_ASSIGN_OR_RETURN(auto first, ParseAnd());
    std::vector<std::unique_ptr<Node>> terms;
    terms.push_back(std::move(first));
    while (true) {
      SkipSpace();
      if (!AtKeyword("OR")) break;
      pos_ += 2;
      TRAINYARD_ASSIGN_OR_RETURN(auto next, ParseAnd());
      terms.push_back(std::move(next));
    }
    if (terms.size() == 1) return std::move(terms[0]);
    auto node = std::make_unique<Node>();
    node->type = Node::Type::kOr;
    node->children = std::move(terms);
    return node;
  }

  Result<std::unique_ptr<Node>> ParseAnd() {
    TRAINYARD_ASSIGN_OR_RETURN(auto first, ParseUnary());
    std::vector<std::unique_ptr<Node>> terms;
    terms.push_back(std::move(first));
    while (true) {
      SkipSpace();
      if (AtEnd() || s_[pos_] == ')' || AtKeyword("OR")) break;
      if (AtKeyword("AND")) pos_ += 3;  // otherwise an implicit AND
      TRAINYARD_ASSIGN_OR_RETURN(auto next, ParseUnary());
      terms.push_back(std::move(next));
    }
    if (terms.size() == 1) return std::move(terms[0]);
    auto node = std::make_unique<Node>();
    node->type = Node::Type::kAnd;
    node->children = std::move(terms);
    return node;
  }

  Result<std::unique_ptr<Node>> ParseUnary() {
    if (++depth_ > 64) return Error("the filter nests too deeply");
    SkipSpace();
    if (AtEnd()) return Error("expected an expression");
    std::unique_ptr<Node> out;
    if (AtKeyword("NOT") || s_[pos_] == '-') {
      pos_ += s_[pos_] == '-' ? 1 : 3;
      TRAINYARD_ASSIGN_OR_RETURN(auto inner, ParseUnary());
      out = std::make_unique<Node>();
      out->type = Node::Type::kNot;
      out->children.push_back(std::move(inner));
    } else if (s_[pos_] == '(') {
      ++pos_;
      TRAINYARD_ASSIGN_OR_RETURN(out, ParseOr());
      SkipSpace();
      if (AtEnd() || s_[pos_] != ')') return Error("expected \")\"");
      ++pos_;
    } else {
      TRAINYARD_ASSIGN_OR_RETURN(out, ParseComparison());
    }
    --depth_;
    return out;
  }

  Result<std::string> ParseQuoted() {
    ++pos_;  // opening quote
    std::string out;
    while (!AtEnd() && s_[pos_] != '"') {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out.push_back(s_[pos_++]);
    }
    if (AtEnd()) return Error("unterminated string");
    ++pos_;
    return out;
  }

  static bool IsFieldChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '@' || c == '$';
  }

  Result<std::unique_ptr<Node>> ParseComparison() {
    std::string path;
    while (true) {
      if (!AtEnd() && s_[pos_] == '"') {
        TRAINYARD_ASSIGN_OR_RETURN(std::string seg, ParseQuoted());
        path += seg;
      } else {
        size_t start = pos_;
        while (!AtEnd() && IsFieldChar(s_[pos_])) ++pos_;
        if (start == pos_) return Error("expected a field name");
        path += s_.substr(start, pos_ - start);
      }
      if (AtEnd() || s_[pos_] != '.') break;
      path.push_back('.');
      ++pos_;
    }
    SkipSpace();
    auto node = std::make_unique<Node>();
    node->path = path;
    std::string_view rest = s_.substr(pos_);
    if (rest.starts_with("!=")) {
      node->op = Op::kNe;
    } else if (rest.starts_with("<=")) {
      node->op = Op::kLe;
    } else if (rest.starts_with(">=")) {
      node->op = Op::kGe;
    } else if (rest.starts_with("=~") || rest.starts_with("!~")) {
      return Error("regular expressions are not supported");
    } else if (rest.starts_with("=")) {
      node->op = Op::kEq;
    } else if (rest.starts_with("<")) {
      node->op = Op::kLt;
    } else if (rest.starts_with(">")) {
      node->op = Op::kGt;
    } else if (rest.starts_with(":")) {
      node->op = Op::kHas;
    } else {
      return Error("expected a comparison FIELD=VALUE after \"" + path +
                   "\" (free-text search is not supported)");
    }
    pos_ +=
        (node->op == Op::kEq || node->op == Op::kLt || node->op == Op::kGt || node->op == Op::kHas)
            ? 1
            : 2;
    SkipSpace();
    if (AtEnd()) return Error("expected a value after \"" + path + "\"");
    if (s_[pos_] == '"') {
      TRAINYARD_ASSIGN_OR_RETURN(node->value, ParseQuoted());
    } else {
      size_t start = pos_;
      while (!AtEnd() && !std::isspace(static_cast<unsigned char>(s_[pos_])) && s_[pos_] != '(' &&
             s_[pos_] != ')') {
        ++pos_;
      }
      if (start == pos_) return Error("expected a value after \"" + path + "\"");
      node->value = std::string(s_.substr(start, pos_ - start));
      node->any_value = node->op == Op::kHas && node->value == "*";
    }
    if (IsTimeField(path)) {
      auto t = ParseRfc3339(node->value);
      if (!t.ok()) return Error("\"" + node->value + "\" is not an RFC 3339 timestamp");
      node->time = *t;
    } else if (path == "severity" && !SeverityValue(node->value) && !node->any_value) {
      return Error("\"" + node->value + "\" is not a severity");
    }
    return node;
  }

  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

LogFilter::LogFilter() = default;
LogFilter::LogFilter(LogFilter&&) noexcept = default;
LogFilter& LogFilter::operator=(LogFilter&&) noexcept = default;
LogFilter::~LogFilter() = default;

Result<LogFilter> LogFilter::Parse(std::string_view text) {
  if (text.size() > 20000) {
    return Status(StatusCode::kInvalidArgument, "The filter is longer than 20000 characters")
        .AddViolation("filter", "too long");
  }
  Parser parser(text);
  TRAINYARD_ASSIGN_OR_RETURN(auto root, parser.ParseAll());
  LogFilter f;
  f.root_ = std::move(root);
  return f;
}

bool LogFilter::Matches(const model::LogEntry& entry) const {
  return root_ == nullptr || root_->Matches(entry);
}

void LogFilter::PushDown(store::LogQuery* query) const {
  if (root_ == nullptr) return;
  if (auto job = root_->ImpliedEquals({"resource.labels.job_id"})) query->job_id = *job;
  if (auto task = root_->ImpliedEquals({"resource.labels.task_name", "labels.task_name",
                                        "labels.ml.googleapis.com/task_name"})) {
    query->task_name = *task;
  }
  auto [lo, hi] = root_->TimeRange();
  // The store reads 0 as "no bound": only bounds past the epoch are pushed down.
  if (lo > 0 && lo > query->min_timestamp) query->min_timestamp = lo;
  if (hi > 0 && hi < std::numeric_limits<Timestamp>::max() &&
      (query->max_timestamp == 0 || hi < query->max_timestamp)) {
    query->max_timestamp = hi;
  }
  query->after_insert_id = std::max(query->after_insert_id, root_->InsertIdFloor());
}

std::optional<std::string> LogFilter::ImpliedJobId() const {
  if (root_ == nullptr) return std::nullopt;
  return root_->ImpliedEquals({"resource.labels.job_id"});
}

int LogFilter::LiftUpperTimeBounds(Timestamp from) {
  auto lifts = [from](const Node& n) {
    return n.type == Node::Type::kCompare && n.path == "timestamp" &&
           (n.op == Op::kLt || n.op == Op::kLe) && n.time >= from;
  };
  if (root_ == nullptr) return 0;
  if (lifts(*root_)) {
    root_.reset();  // the bound was the whole filter
    return 1;
  }
  if (root_->type != Node::Type::kAnd) return 0;
  auto& c = root_->children;
  const size_t before = c.size();
  c.erase(std::remove_if(c.begin(), c.end(), [&](const auto& n) { return lifts(*n); }), c.end());
  // An AND of no terms matches everything, as an empty filter does.
  return static_cast<int>(before - c.size());
}

}  // namespace trainyard::api
