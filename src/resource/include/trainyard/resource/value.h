// What gcloud's resource expressions (--filter, --format, --sort-by) read out of a resource:
// keys, their values, transforms, and the text and times those values stand for. A resource is
// the JSON the API returned (gcloud evaluates its expressions on the same JSON, after
// decoding and re-encoding the message). Pure functions; no I/O.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/core/time.h"

namespace trainyard::resource {

using Json = nlohmann::json;

// One part of a key: a name (`labels`), a list index (`[0]`, `[-1]`), or a slice (`[]`).
struct KeyPart {
  enum class Kind { kName, kIndex, kSlice };
  Kind kind = Kind::kName;
  std::string name;
  int64_t index = 0;
  bool operator==(const KeyPart&) const = default;
};
using Key = std::vector<KeyPart>;

// "labels.owner", "trainingInput.args[0]", "a[].b".
std::string KeyName(const Key& key);

// The value at `key` (null when absent), with gcloud's lookup rules: a name also matches its
// camelCase and snake_case spellings, an out-of-range index is absent, a slice or a name
// applied to a list of objects collects the values of every item.
Json GetKey(const Json& resource, const Key& key);

// A transform call: `date(format='%Y', tz=LOCAL)` is {"date", {},
// {{"format","%Y"},{"tz","LOCAL"}}}.
struct Call {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> kwargs;
};

// Whether gcloud has a transform of this name that Trainyard applies.
bool IsKnownTransform(std::string_view name);

// Applies the calls in order. Known transforms: basename, color (no-op), date, float, join,
// len, list, lower, segment, upper, yesno.
Json ApplyTransforms(const Json& value, const std::vector<Call>& calls);

// Python's truth value: null, false, 0, "", [] and {} are false.
bool IsFalsy(const Json& value);

// Python's str() of a JSON value as gcloud sees it after decoding: strings as they are, None,
// True/False, ints, floats in Python's repr, dicts and lists in Python's repr.
std::string PyStr(const Json& value);

// gcloud's float transform (6 significant digits; "1.0", "0.04", "1234567.0").
std::string GcloudFloat(double value);

// Time as gcloud's times.ParseDateTime reads it: an ISO 8601 date or date-time (a missing zone
// means `default_utc_offset_local` ? the local zone : UTC), or an ISO 8601 duration relative to
// `now` (`-P1D` one day ago, `PT2H` two hours ahead; calendar arithmetic in the local zone for
// days, months and years). Microseconds since the epoch, and whether the text named a zone.
struct ParsedTime {
  Timestamp micros = 0;
  bool has_zone = false;
};
std::optional<ParsedTime> ParseDateTime(std::string_view text, Timestamp now, bool local_default);

// strftime with gcloud's extensions (%f microseconds, %3f..%9f fractions, %Ez "+HH:MM"), of
// `micros` in UTC (`local` false) or the local zone (`local` true).
std::string FormatDateTime(Timestamp micros, std::string_view format, bool local);

}  // namespace trainyard::resource
