// Small helpers shared by the API's handlers. Private to ty_api.
#pragma once

#include <string>

#include "trainyard/core/status.h"

namespace trainyard::api {

// Project ids as Google Cloud allows them (letters, digits, '-', also domain-scoped "a.com:b"),
// starting with a letter: keeps "..", "/" and control bytes out of paths built from them.
Status ValidateProject(const std::string& project);

}  // namespace trainyard::api
