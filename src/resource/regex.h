// Python-flavoured regular expressions (gcloud's filters use Python's `re`), on PCRE2: the
// syntax is close to Python's ((?P<name>...), (?i), \b, lookarounds), Unicode-aware like a
// Python str pattern, safe on invalid UTF-8, and bounded (a pattern that backtracks too long
// does not match instead of hanging). Private to ty_resource.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace trainyard::resource::internal {

class Regex {
 public:
  struct Flags {
    bool ignore_case = false;
    bool multiline = false;
  };
  // nullptr and `*error` set when the pattern does not compile.
  static std::shared_ptr<const Regex> Compile(std::string_view pattern, Flags flags,
                                              std::string* error);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // re.search: a match anywhere in `text`.
  bool Search(std::string_view text) const;

  // re.escape: every character but ASCII letters, digits and '_' escaped.
  static std::string Escape(std::string_view text);

 private:
  Regex() = default;
  void* code_ = nullptr;  // pcre2_code_8
};

}  // namespace trainyard::resource::internal
