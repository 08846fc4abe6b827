#include "lexer.h"

namespace trainyard::resource::internal {
namespace {

constexpr char kEscape = '\\';
constexpr std::string_view kQuotes = "'\"";
// Characters a key name must quote (gcloud's reserved operator characters).
constexpr std::string_view kReserved = ":=!<>~()[].{},+*/%&|^#;?";

bool In(char c, std::string_view set) { return c != '\0' && set.find(c) != std::string_view::npos; }

}  // namespace

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string Lexer::Annotate(std::optional<size_t> at) const {
  size_t here = std::min(at.value_or(pos_), s_.size());
  std::string cursor = "*HERE*";
  if (here > 0 && !IsSpace(s_[here - 1])) cursor = " " + cursor;
  if (here < s_.size() && !IsSpace(s_[here])) cursor += " ";
  return s_.substr(0, here) + cursor + s_.substr(here);
}

void Lexer::Fail(const std::string& what, std::optional<size_t> at) const {
  throw SyntaxError(what + " [" + Annotate(at) + "].");
}

bool Lexer::SkipSpace(const char* token, std::string_view terminators) {
  while (!EndOfInput()) {
    char c = s_[pos_];
    if (!IsSpace(c) || In(c, terminators)) return true;
    ++pos_;
  }
  if (token != nullptr) Fail(std::string(token) + " expected");
  return false;
}

char Lexer::IsCharacter(std::string_view chars, bool peek, bool eoi_ok) {
  if (EndOfInput()) {
    if (peek || eoi_ok) return 0;
    Fail("More tokens expected");
  }
  char c = s_[pos_];
  if (!In(c, chars)) return 0;
  if (!peek) ++pos_;
  return c;
}

bool Lexer::IsString(std::string_view name, bool peek) {
  if (!SkipSpace()) return false;
  size_t i = pos_;
  if (std::string_view(s_).substr(i, name.size()) != name) return false;
  i += name.size();
  if (EndOfInput(i) || IsSpace(s_[i]) || s_[i] == '(') {
    if (!peek) pos_ = i;
    return true;
  }
  return false;
}

std::optional<Lexer::Tok> Lexer::Token(std::string_view terminators, bool balance_parens,
                                       bool space) {
  char quote = 0;
  bool quoted = false;
  std::optional<std::string> token;
  int parens = 0;
  size_t i = pos_;
  while (!EndOfInput(i)) {
    char c = s_[i];
    if (c == kEscape && !EndOfInput(i + 1)) {
      // Only the escape character and the quotes are escaped; otherwise the backslash stays.
      char next = s_[i + 1];
      if (!token) token.emplace();
      if (next != kEscape && next != quote && (quote != 0 || !In(next, kQuotes))) {
        token->push_back(kEscape);
      }
      token->push_back(next);
      ++i;
    } else if (quote != 0 && c == quote) {
      quote = 0;
    } else if (quote == 0 && In(c, kQuotes)) {
      quote = c;
      quoted = true;
      if (!token) token.emplace();
    } else if (quote == 0 && IsSpace(c) && !token) {
      // leading space
    } else if (quote == 0 && balance_parens && (c == '(' || c == ')')) {
      if (c == '(') {
        ++parens;
      } else {
        if (In(c, terminators) && parens == 0) break;
        --parens;
      }
      if (!token) token.emplace();
      token->push_back(c);
    } else if (quote == 0 && parens == 0 && In(c, terminators)) {
      break;
    } else if (quote != 0 || !IsSpace(c) || (token && balance_parens)) {
      if (!token) token.emplace();
      token->push_back(c);
    } else if (token) {
      break;  // a space after the token's characters ends it
    }
    ++i;
  }
  if (quote != 0) Fail(std::string("Unterminated [") + quote + "] quote", i);
  pos_ = i;
  if (space) SkipSpace(nullptr, terminators);
  if (!token) return std::nullopt;
  return Tok{std::move(*token), quoted};
}

std::vector<std::string> Lexer::Args(std::string_view separators) {
  bool required = false;
  std::vector<std::string> args;
  std::string terminators = std::string(separators) + ")";
  while (true) {
    size_t here = pos_;
    auto arg = Token(terminators, /*balance_parens=*/true);
    char sep = IsCharacter(")");
    bool end = sep != 0;
    if (!end) {
      sep = IsCharacter(separators, false, /*eoi_ok=*/true);
      if (sep == 0) Fail("Closing ) expected in argument list");
    }
    if (arg) {
      if (!arg->text.empty() || !IsSpace(sep)) args.push_back(arg->text);
    } else if (required || !end) {
      Fail("Argument expected", here);
    }
    if (end) break;
    required = !IsSpace(sep);
  }
  return args;
}

Key Lexer::ParseKey() {
  Key key;
  while (!EndOfInput()) {
    size_t here = pos_;
    auto name = Token(kReserved, false, /*space=*/false);
    if (name && !name->text.empty()) {
      key.push_back({KeyPart::Kind::kName, name->text, 0});
    } else if (!IsCharacter("[", /*peek=*/true)) {
      // A lone "." names the whole resource.
      if (key.empty() && IsCharacter(".") && !IsCharacter(".", true, true) &&
          (EndOfInput() || IsCharacter(kReserved, true, true))) {
        break;
      }
      Fail("Non-empty key name expected", here);
    }
    if (EndOfInput()) break;
    if (IsCharacter("]")) Fail("Unmatched ] in key", here);
    while (IsCharacter("[", false, /*eoi_ok=*/true)) {
      auto index = Token("]");
      IsCharacter("]");
      if (!index) {
        key.push_back({KeyPart::Kind::kSlice, "", 0});
        continue;
      }
      const std::string& t = index->text;
      size_t digits = (!t.empty() && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
      bool integer = !index->quoted && t.size() > digits && t.size() < 19 + digits &&
                     t.find_first_not_of("0123456789", digits) == std::string::npos;
      if (integer) {
        key.push_back({KeyPart::Kind::kIndex, "", std::stoll(t)});
      } else {
        key.push_back({KeyPart::Kind::kName, t, 0});
      }
    }
    if (!IsCharacter(".", false, /*eoi_ok=*/true)) break;
    if (EndOfInput()) Fail("Non-empty key name expected");
  }
  return key;
}

std::vector<Call> Lexer::ParseTransforms(std::string first) {
  std::vector<Call> calls;
  std::string name = std::move(first);
  while (true) {
    size_t here = pos_;
    if (!IsKnownTransform(name)) Fail("Unknown transform function " + name, here);
    Call call;
    call.name = name;
    for (std::string& arg : Args()) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        call.kwargs.emplace_back(arg.substr(0, eq), arg.substr(eq + 1));
      } else {
        call.args.push_back(std::move(arg));
      }
    }
    calls.push_back(std::move(call));
    if (!IsCharacter(".", false, /*eoi_ok=*/true)) break;
    Key next = ParseKey();
    here = pos_;
    if (!IsCharacter("(")) Fail("Transform function expected", here);
    if (next.size() != 1 || next[0].kind != KeyPart::Kind::kName) {
      Fail("Unknown transform function " + KeyName(next), here);
    }
    name = next[0].name;
  }
  return calls;
}

}  // namespace trainyard::resource::internal
