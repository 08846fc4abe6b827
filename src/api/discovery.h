// The Google API Discovery document of the `ml v1` API trainyardd serves, generated from the
// route table (methods, paths, parameters) and the model's schema table (message schemas), so
// googleapiclient's `discovery.build('ml', 'v1', discoveryServiceUrl=...)` drives the same
// routes the server has. The document has no `auth` section: googleapiclient then needs no
// credentials (authentication is off in this version). Private to ty_api.
#pragma once

#include <span>
#include <string>

#include "routes.h"

namespace trainyard::api {

// JSON text of the document; `root_url` is the scheme and host the client used, ending in '/'
// ("http://127.0.0.1:8470/").
std::string BuildDiscoveryDocument(std::span<const Route> routes, const std::string& root_url);

}  // namespace trainyard::api
