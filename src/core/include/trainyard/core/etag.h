// HTTP entity-tag comparison, shared by the API and the console's static files.
#pragma once

#include <string_view>

namespace trainyard {

// True when an If-None-Match header value ("*" or a comma-separated list of entity tags, weak or
// strong) names `etag`: the weak comparison RFC 9110 §13.1.2 asks for If-None-Match.
bool IfNoneMatchHits(std::string_view if_none_match, std::string_view etag);

}  // namespace trainyard
