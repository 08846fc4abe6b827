// gcloud's resource filter language (`--filter`, `gcloud topic filters`), evaluated on JSON
// resources the way gcloud evaluates it on the client for `gcloud ai-platform jobs list`
// (which sends no filter to the server):
//
//   expression  terms joined by AND, OR (AND and OR in one parenthesis group is an error),
//               NOT / a leading '-' to negate a term, parentheses, adjacent terms meaning AND
//   term        KEY OP OPERAND, KEY.transform() OP OPERAND, or a bare WORD (a global
//               restriction: any value of the resource contains WORD, case-insensitive)
//   KEY         dotted names (camelCase or snake_case), [N] indices, [] slices: labels.owner,
//               trainingInput.args[0]
//   OP          :  has: case-insensitive substring; `abc*` prefix, `*abc` suffix, `a*c`
//                  whole-value glob, `*` alone "non-empty"; numbers compare as numbers
//               =  case-insensitive equality (!= its negation); numbers as numbers
//               < <= > >=  numbers as numbers, times as times, other values as strings
//               ~ !~  Python regular expression search (case-sensitive)
//   OPERAND     a word or quoted string; `(a b c)` or `(a OR b)` lists for : and =
//
// A key whose first non-empty value is an ISO 8601 date-time (createTime) compares as a time;
// its operand is then a date-time (no zone: local time) or an ISO 8601 duration relative to
// now (`createTime>-P1D`: created in the last day). A missing value is the empty string for
// < <= > >= and ~, and matches `key=""`. See docs/cli.md.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/core/time.h"
#include "trainyard/resource/value.h"

namespace trainyard::resource {

struct FilterOptions {
  // "Now" for relative times; 0 = the clock.
  Timestamp now = 0;
};

class Filter {
 public:
  // INVALID_ARGUMENT with gcloud's message (the position marked *HERE*) for a bad expression.
  static Result<std::unique_ptr<Filter>> Compile(std::string_view expression,
                                                 const FilterOptions& options = {});
  virtual ~Filter() = default;

  // Whether the resource matches. Not const: as in gcloud, a term decides from the first
  // non-empty value it sees whether its values are times. INVALID_ARGUMENT when a time term's
  // operand is not a date-time or duration.
  virtual Result<bool> Matches(const Json& resource) = 0;

  // The keys of the expression that none of the resources given to Matches had (gcloud warns
  // "The following filter keys were not present in any resource : ...").
  virtual std::vector<std::string> MissingKeys() const = 0;

  // The warnings gcloud prints once per run for ':' and '=' terms whose meaning is changing
  // (the value matches one of gcloud's two rules but not the other); gcloud keeps the old rule.
  virtual std::vector<std::string> Warnings() const = 0;
};

}  // namespace trainyard::resource
