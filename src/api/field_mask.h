// Partial responses: Google's `fields` system parameter (docs/api.md "Partial responses"), e.g.
// `fields=jobs(jobId,state),nextPageToken`. Private to ty_api; api_server.cc applies a mask to
// the JSON answers of GET routes.
//
// Syntax (Google's partial-response syntax, the one the API client libraries send):
//   mask      := selection ("," selection)*
//   selection := path ["(" mask ")"]
//   path      := name ("/" name)*
//   name      := one or more of [A-Za-z0-9_-], or "*" (every field at that level)
// Spaces around names, commas and parentheses are ignored. `a/b` selects field b of object a;
// `a(b,c)` selects b and c of a; a selection applies to every element of an array. Selecting a
// field also selects everything under it. A name the response does not have selects nothing
// (the API has no schema check; optional fields are often absent).
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "trainyard/core/status.h"

namespace trainyard::api {

// One level of a parsed mask: `whole` selects the field with everything under it; otherwise
// `children` (and `any`, the "*" wildcard) select parts of it.
struct FieldMask {
  bool whole = false;
  std::map<std::string, FieldMask, std::less<>> children;
  std::unique_ptr<FieldMask> any;

  FieldMask() = default;
  FieldMask(const FieldMask& other);
  FieldMask& operator=(const FieldMask& other);
  FieldMask(FieldMask&&) = default;
  FieldMask& operator=(FieldMask&&) = default;

  bool empty() const { return !whole && children.empty() && !any; }
  // The canonical text of the mask (sorted names, sub-selections in parentheses); parses back
  // to an equal mask.
  std::string ToString() const;
  bool operator==(const FieldMask& other) const;
};

// Longest accepted mask, in bytes (a request line is far shorter in practice).
inline constexpr size_t kMaxFieldMaskBytes = 8192;
// Deepest nesting of parentheses and paths.
inline constexpr int kMaxFieldMaskDepth = 32;

// Parses a `fields` value; INVALID_ARGUMENT naming `fields` (with the offending position) when
// it is not in the syntax above. An empty or blank value is an error too (Google's "Invalid
// field selection").
Result<FieldMask> ParseFieldMask(std::string_view text);

// The part of `value` the mask selects (objects keep their key order; arrays keep every
// element, each masked). Objects that a selection made empty are dropped.
nlohmann::ordered_json ApplyFieldMask(const nlohmann::ordered_json& value, const FieldMask& mask);
// The same over JSON text: the masked text, or INTERNAL when `json_text` is not JSON.
Result<std::string> ApplyFieldMaskToText(std::string_view json_text, const FieldMask& mask);

}  // namespace trainyard::api
