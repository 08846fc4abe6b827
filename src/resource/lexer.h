// The tokenizer shared by the filter and the projection parser, after gcloud's resource lexer:
// isspace()-separated tokens, " and ' quotes (adjacent and mid-token quotes join), backslash
// escaping only \, the quotes, and nothing else; keys of dotted names with [N] and [] parts;
// transform calls `name(arg, k=v)` chained with dots. Private to ty_resource.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/resource/value.h"

namespace trainyard::resource::internal {

// A syntax error; `what()` is gcloud's message with the position marked `*HERE*`.
class SyntaxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  bool EndOfInput(size_t at) const { return at >= s_.size(); }
  bool EndOfInput() const { return EndOfInput(pos_); }
  size_t Position() const { return pos_; }
  void SetPosition(size_t p) { pos_ = p; }
  std::string_view Text() const { return s_; }

  // The expression with "*HERE*" at `at` (default: the cursor), as gcloud annotates errors.
  std::string Annotate(std::optional<size_t> at = std::nullopt) const;
  [[noreturn]] void Fail(const std::string& what, std::optional<size_t> at = std::nullopt) const;

  // Skips spaces (not those in `terminators`); false at the end of input. With `token`, the end
  // of input is an error "<token> expected".
  bool SkipSpace(const char* token = nullptr, std::string_view terminators = "");
  // The next character if it is one of `chars` (consumed unless `peek`); 0 if not. At the end
  // of input: 0 when `peek` or `eoi_ok`, else an error.
  char IsCharacter(std::string_view chars, bool peek = false, bool eoi_ok = false);
  // Whether the next space- or '('-terminated token is `name` (consumed unless `peek`).
  bool IsString(std::string_view name, bool peek = false);
  // A possibly quoted token ending at a space or an unquoted terminator. nullopt when none.
  struct Tok {
    std::string text;
    bool quoted = false;
  };
  std::optional<Tok> Token(std::string_view terminators = "", bool balance_parens = false,
                           bool space = true);
  // The rest of a `(`...`)` argument list (the '(' already consumed).
  std::vector<std::string> Args(std::string_view separators = ",");
  // A key: dotted names, [N] indices and [] slices. A trailing name followed by '(' is left in
  // the key for the caller to take as a function name.
  Key ParseKey();
  // Transform calls, the first one's name given and its '(' consumed: `f(...).g(...)`.
  std::vector<Call> ParseTransforms(std::string first);

 private:
  std::string s_;
  size_t pos_ = 0;
};

bool IsSpace(char c);

}  // namespace trainyard::resource::internal
