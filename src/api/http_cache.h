// Conditional GETs of the API's JSON answers (docs/api.md "ETag and 304"): an entity tag from
// the answer's bytes, and the If-None-Match test. Private to ty_api.
#pragma once

#include <string>
#include <string_view>

namespace trainyard::api {

// The strong entity tag of a response body: a quoted 64-bit hash and the length, both in hex
// ("\"9f2c...-1a4\""). Equal bytes give equal tags (in one build of the daemon).
std::string BodyEtag(std::string_view body);

// True when an If-None-Match header value ("*" or a list of entity tags, weak or strong) names
// `etag`: weak comparison, as RFC 9110 §13.1.2 asks for If-None-Match.
bool IfNoneMatchHits(std::string_view if_none_match, std::string_view etag);

}  // namespace trainyard::api
