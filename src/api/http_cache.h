// Conditional GETs of the API's JSON answers (docs/api.md "ETag and 304"): an entity tag from
// the answer's bytes (the If-None-Match test is trainyard/core/etag.h). Private to ty_api.
#pragma once

#include <string>
#include <string_view>

namespace trainyard::api {

// The strong entity tag of a response body: a quoted 64-bit hash and the length, both in hex
// ("\"9f2c...-1a4\""). Equal bytes give equal tags (in one build of the daemon).
std::string BodyEtag(std::string_view body);

}  // namespace trainyard::api
