#include "api_util.h"

#include <cctype>

namespace trainyard::api {

Status ValidateProject(const std::string& project) {
  bool ok = !project.empty() && project.size() <= 100 &&
            std::isalpha(static_cast<unsigned char>(project[0]));
  for (char c : project) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == ':')) {
      ok = false;
    }
  }
  if (ok) return Status::Ok();
  return Status(StatusCode::kInvalidArgument,
                "Invalid project id in the resource name: it must start with a letter and "
                "contain only letters, digits, '-', '_', '.' and ':'")
      .AddViolation("name", "invalid project id");
}

}  // namespace trainyard::api
