#include "store_common.h"

#include <charconv>

#include "trainyard/core/util.h"

namespace trainyard::store::internal {

std::string EncodePageToken(int64_t last_seq) {
  return Base64Encode("s" + std::to_string(last_seq));
}

Result<std::optional<int64_t>> DecodePageToken(const std::string& token) {
  if (token.empty()) return std::optional<int64_t>();
  Status invalid = InvalidArgument("Invalid page token");
  auto decoded = Base64Decode(token);
  if (!decoded.ok()) return invalid;
  const std::string& text = decoded.value();
  if (text.size() < 2 || text.size() > 20 || text[0] != 's') return invalid;
  int64_t seq = 0;
  const char* begin = text.data() + 1;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, seq);
  if (ec != std::errc() || ptr != end || seq <= 0) return invalid;
  // Reject non-canonical spellings ("s007", trailing garbage hidden by padding).
  if (EncodePageToken(seq) != token) return invalid;
  return std::optional<int64_t>(seq);
}

Status JobAlreadyExists(const std::string& project, const std::string& job_id) {
  return AlreadyExists("Job projects/" + project + "/jobs/" + job_id + " already exists");
}

Status JobNotFound(const std::string& project, const std::string& job_id) {
  return NotFound("Job projects/" + project + "/jobs/" + job_id + " not found");
}

int EffectiveLogLimit(int limit) { return limit > 0 ? limit : 1000; }

bool LogQueryMatches(const LogQuery& query, const model::LogEntry& e) {
  if (e.insert_id <= query.after_insert_id) return false;
  if (query.max_insert_id != 0 && e.insert_id > query.max_insert_id) return false;
  if (!query.task_name.empty() && e.task_name != query.task_name) return false;
  if (query.trial_id && e.trial_id != *query.trial_id) return false;
  if (e.severity < query.min_severity) return false;
  if (query.min_timestamp != 0 && e.timestamp < query.min_timestamp) return false;
  if (query.max_timestamp != 0 && e.timestamp >= query.max_timestamp) return false;
  if (query.position && query.order != LogOrder::kInsertId) {
    const LogPosition p{e.timestamp, e.insert_id};
    if (query.order == LogOrder::kTimestampAsc ? !(p > *query.position) : !(p < *query.position)) {
      return false;
    }
  }
  return true;
}

}  // namespace trainyard::store::internal
