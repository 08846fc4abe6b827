#include "store_common.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <iterator>

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

namespace {
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
}  // namespace

LogTextMatcher::LogTextMatcher(std::string text, bool match_case)
    : text_(std::move(text)), match_case_(match_case) {
  if (!match_case_) {
    for (char& c : text_) c = Lower(c);
  }
}

bool LogTextMatcher::Matches(std::string_view message) const {
  if (text_.empty()) return true;
  if (match_case_) return message.find(text_) != std::string_view::npos;
  if (message.size() < text_.size()) return false;
  // The first letter in both cases, found with memchr; the rest compared folded.
  const char first = text_[0];
  const char upper = first >= 'a' && first <= 'z' ? static_cast<char>(first - 'a' + 'A') : first;
  const size_t last = message.size() - text_.size();
  for (size_t i = 0; i <= last; ++i) {
    const char c = message[i];
    if (c != first && c != upper) {
      // Skip to the next candidate of either case.
      const void* a = std::memchr(message.data() + i, first, last - i + 1);
      const void* b =
          upper == first ? nullptr : std::memchr(message.data() + i, upper, last - i + 1);
      if (a == nullptr && b == nullptr) return false;
      const char* next = a == nullptr ? static_cast<const char*>(b)
                         : b == nullptr
                             ? static_cast<const char*>(a)
                             : std::min(static_cast<const char*>(a), static_cast<const char*>(b));
      i = static_cast<size_t>(next - message.data());
    }
    size_t k = 1;
    while (k < text_.size() && Lower(message[i + k]) == text_[k]) ++k;
    if (k == text_.size()) return true;
  }
  return false;
}

bool LogMatchCollector::Wants(int64_t ordinal) const {
  if (search_.backward) return ordinal < search_.from;
  return ordinal > search_.from && kept_.size() < static_cast<size_t>(search_.max_matches);
}

void LogMatchCollector::Add(int64_t ordinal, model::LogEntry entry) {
  kept_.push_back({ordinal, std::move(entry)});
  if (search_.backward && kept_.size() > static_cast<size_t>(search_.max_matches)) {
    kept_.pop_front();
  }
}

bool LogMatchCollector::Full() const {
  return !search_.backward && !search_.count &&
         kept_.size() >= static_cast<size_t>(search_.max_matches);
}

void LogMatchCollector::Saw(int64_t ordinal) {
  ++total_;
  if (search_.backward ? ordinal < search_.from : ordinal <= search_.from) ++upto_;
}

LogSearchResult LogMatchCollector::Finish(int64_t lines_read) {
  LogSearchResult out;
  out.matches.assign(std::make_move_iterator(kept_.begin()), std::make_move_iterator(kept_.end()));
  if (search_.backward) std::reverse(out.matches.begin(), out.matches.end());
  out.total = search_.count ? total_ : -1;
  if (search_.count && !out.matches.empty()) out.index = search_.backward ? upto_ - 1 : upto_;
  out.lines_read = lines_read;
  return out;
}

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
