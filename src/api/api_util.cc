#include "api_util.h"

#include <cctype>
#include <vector>

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

namespace {

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<store::JobOrder> ParseJobOrder(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    words.push_back(text.substr(i, j - i));
    i = j;
  }
  store::JobOrder order;
  if (words.empty()) return order;
  auto invalid = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument,
                  "Invalid orderBy \"" + std::string(text) + "\": " + why)
        .AddViolation("orderBy", why);
  };
  const std::string kFields = "createTime, startTime, endTime, jobId or state";
  if (text.find(',') != std::string_view::npos) {
    return invalid("jobs are ordered by one field (" + kFields +
                   "), then by creation; more than one is not supported");
  }
  if (words.size() > 2) return invalid("expected a field and optionally asc or desc");
  struct Field {
    const char* camel;
    const char* snake;
    store::JobOrderKey key;
  };
  static constexpr Field kKnown[] = {
      {"createTime", "create_time", store::JobOrderKey::kCreateTime},
      {"startTime", "start_time", store::JobOrderKey::kStartTime},
      {"endTime", "end_time", store::JobOrderKey::kEndTime},
      {"jobId", "job_id", store::JobOrderKey::kJobId},
      {"state", "state", store::JobOrderKey::kState},
  };
  bool found = false;
  for (const Field& f : kKnown) {
    if (words[0] == f.camel || words[0] == f.snake) {
      order.key = f.key;
      found = true;
    }
  }
  if (!found) {
    return invalid("unknown field \"" + std::string(words[0]) + "\" (jobs can be ordered by " +
                   kFields + ")");
  }
  if (words.size() == 2) {
    if (EqualsIgnoringCase(words[1], "desc")) {
      order.descending = true;
    } else if (!EqualsIgnoringCase(words[1], "asc")) {
      return invalid("unknown direction \"" + std::string(words[1]) + "\" (asc or desc)");
    }
  }
  return order;
}

}  // namespace trainyard::api
