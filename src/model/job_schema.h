// The one table that describes the Job resource's JSON (compat §1-§3): every message, field,
// type, enum value set and snake_case alias. It drives snake_case -> camelCase normalisation,
// unknown-field rejection, type checking with lenient scalars, and the canonical proto3-JSON
// output. Private to ty_model.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::model::schema {

enum class Kind : uint8_t {
  kString,
  kBool,
  kInt32,
  kInt64,
  kDouble,
  kDuration,  // google.protobuf.Duration, "7200s"
  kEnum,
  kMessage,
  kIgnored,  // output-only field: accepted on input, dropped, never type-checked
};

enum class Label : uint8_t { kSingular, kRepeated, kMap /* map<string, string> */ };

struct EnumDef {
  std::string_view type_url;
  std::span<const std::string_view> values;  // values[0] is the zero (default) value
};

struct MessageDef;

struct FieldDef {
  std::string_view json_name;   // lowerCamelCase, as output
  std::string_view proto_name;  // snake_case, also accepted on input and used in error paths
  Kind kind;
  Label label = Label::kSingular;
  const MessageDef* message = nullptr;  // kMessage
  const EnumDef* enum_def = nullptr;    // kEnum
  bool legacy = false;                  // accepted on input, never written on output
};

struct MessageDef {
  std::string_view type_url;
  std::span<const FieldDef> fields;

  // The field whose JSON or proto name is `name`; nullptr when there is none.
  const FieldDef* Find(std::string_view name) const;
};

const MessageDef& Job();
const MessageDef& TrainingInput();

// "TYPE_INT64", "type.googleapis.com/google.protobuf.Duration", ... as Google's errors name them.
std::string_view TypeName(const FieldDef& f);

// Normalises `in` (user JSON for message `def`) into `*out`: keys become json names, int32/int64
// become JSON integers, doubles JSON numbers, bools JSON booleans, enums their canonical names,
// durations integer microseconds; JSON null means "unset" and is dropped; kIgnored fields are
// copied unchecked. Every problem is appended to `errors` in Google's wording, with `path` (the
// snake_case proto path, e.g. "job.training_input") naming where it is.
void Normalize(const nlohmann::json& in, const MessageDef& def, const std::string& path,
               nlohmann::json* out, std::vector<FieldViolation>* errors);

// Appends the canonical proto3 JSON of a normalised message: json names in table order, int64
// as strings, default values omitted (messages are emitted whenever present).
void WriteCanonical(const nlohmann::json& normalized, const MessageDef& def, std::string* out);

// Parses JSON text, reporting a key that appears twice in one object as an error (nlohmann
// would silently keep the last one). INVALID_ARGUMENT in Google's wording on failure.
Result<nlohmann::json> ParseJsonStrict(std::string_view text);

}  // namespace trainyard::model::schema
