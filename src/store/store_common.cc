#include "store_common.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <tuple>

#include "trainyard/core/hash.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"

namespace trainyard::store::internal {

int64_t TimeSortValue(Timestamp t) {
  if (t == 0) return std::numeric_limits<int64_t>::max();
  int64_t secs = t / kMicrosPerSecond;
  if (t % kMicrosPerSecond < 0) --secs;  // floored, as RFC 3339 shows times before 1970
  return secs;
}

namespace {

// The states by the name the API shows ("None" for STATE_UNSPECIFIED, which JSON omits),
// alphabetically: gcloud's --sort-by=state compares those strings.
constexpr model::JobState kStatesByName[kJobStateCount] = {
    model::JobState::kCancelled,        model::JobState::kCancelling, model::JobState::kFailed,
    model::JobState::kStateUnspecified, model::JobState::kPreparing,  model::JobState::kQueued,
    model::JobState::kRunning,          model::JobState::kSucceeded};

char KeyChar(JobOrderKey key) {
  switch (key) {
    case JobOrderKey::kDefault:
      return 'n';
    case JobOrderKey::kCreateTime:
      return 'c';
    case JobOrderKey::kStartTime:
      return 's';
    case JobOrderKey::kEndTime:
      return 'e';
    case JobOrderKey::kJobId:
      return 'j';
    case JobOrderKey::kState:
      return 't';
  }
  return '?';
}

bool Plain(const ListJobsRequest& r) {
  return r.order.key == JobOrderKey::kDefault && r.filter_text.empty();
}

// "o<key><direction><16 hex digits of the filter's FNV-1a hash>:"
std::string TokenScope(const ListJobsRequest& r) {
  const uint64_t h = Fnv1a(r.filter_text);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  const bool desc = r.order.key == JobOrderKey::kDefault || r.order.descending;
  return std::string("o") + KeyChar(r.order.key) + (desc ? 'd' : 'a') + hex + ":";
}

bool ParseInt64(std::string_view text, int64_t* out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

}  // namespace

int64_t StateSortRank(model::JobState state) {
  for (int i = 0; i < kJobStateCount; ++i) {
    if (kStatesByName[i] == state) return i;
  }
  return kJobStateCount;
}

model::JobState StateOfSortRank(int64_t rank) { return kStatesByName[rank]; }

JobSortValue SortValueOf(const model::Job& job, JobOrderKey key) {
  switch (key) {
    case JobOrderKey::kDefault:
      return {};
    case JobOrderKey::kCreateTime:
      return {TimeSortValue(job.create_time), {}};
    case JobOrderKey::kStartTime:
      return {TimeSortValue(job.start_time), {}};
    case JobOrderKey::kEndTime:
      return {TimeSortValue(job.end_time), {}};
    case JobOrderKey::kJobId:
      return {0, job.job_id};
    case JobOrderKey::kState:
      return {StateSortRank(job.state), {}};
  }
  return {};
}

bool CursorLess(const JobOrder& order, const JobCursor& a, const JobCursor& b) {
  if (order.key == JobOrderKey::kDefault) return a.seq > b.seq;
  auto ka = std::tie(a.value, a.seq);
  auto kb = std::tie(b.value, b.seq);
  return order.descending ? kb < ka : ka < kb;
}

namespace {

// "<seq>:<sort value>" (no value for kDefault).
std::string CursorText(JobOrderKey key, const JobCursor& cursor) {
  std::string text = std::to_string(cursor.seq) + ":";
  if (key == JobOrderKey::kJobId) {
    text += cursor.value.text;
  } else if (key != JobOrderKey::kDefault) {
    text += std::to_string(cursor.value.number);
  }
  return text;
}

}  // namespace

std::string EncodeCursor(const ListJobsRequest& request, const JobCursor& cursor) {
  if (Plain(request)) return Base64Encode("s" + std::to_string(cursor.seq));
  return Base64Encode(TokenScope(request) + CursorText(request.order.key, cursor));
}

std::string EncodePageToken(const ListJobsRequest& request, const model::Job& last) {
  return EncodeCursor(request, CursorOf(last, request.order.key));
}

Result<std::optional<JobCursor>> DecodePageToken(const ListJobsRequest& request) {
  const std::string& token = request.page_token;
  if (token.empty()) return std::optional<JobCursor>();
  Status invalid = InvalidArgument("Invalid page token");
  invalid.AddViolation("pageToken", "pass the nextPageToken of the previous page");
  auto decoded = Base64Decode(token);
  if (!decoded.ok()) return invalid;
  const std::string& text = decoded.value();
  Status elsewhere = InvalidArgument(
      "Invalid page token: it continues a listing with another orderBy or filter (pass the "
      "orderBy and filter of the request that returned it)");
  elsewhere.AddViolation("pageToken", "a nextPageToken of a listing with this orderBy and filter");
  JobCursor cursor;
  if (!text.empty() && text[0] == 's') {
    if (text.size() < 2 || text.size() > 20) return invalid;
    if (!ParseInt64(std::string_view(text).substr(1), &cursor.seq) || cursor.seq <= 0) {
      return invalid;
    }
    // Reject non-canonical spellings ("s007", trailing garbage hidden by padding).
    if (Base64Encode("s" + std::to_string(cursor.seq)) != token) return invalid;
    if (!Plain(request)) return elsewhere;
    return std::optional<JobCursor>(cursor);
  }
  // "o" + key + direction + 16 hex + ":" + seq + ":" + value
  if (text.size() < 20 || text[0] != 'o' || text[19] != ':') return invalid;
  const size_t colon = text.find(':', 20);
  if (colon == std::string::npos) return invalid;
  if (!ParseInt64(std::string_view(text).substr(20, colon - 20), &cursor.seq) || cursor.seq <= 0) {
    return invalid;
  }
  const std::string_view value = std::string_view(text).substr(colon + 1);
  const std::string scope = text.substr(0, 20);
  static constexpr JobOrderKey kKeys[] = {JobOrderKey::kDefault,   JobOrderKey::kCreateTime,
                                          JobOrderKey::kStartTime, JobOrderKey::kEndTime,
                                          JobOrderKey::kJobId,     JobOrderKey::kState};
  std::optional<JobOrderKey> key;
  for (JobOrderKey k : kKeys) {
    if (KeyChar(k) == scope[1]) key = k;
  }
  if (!key || (scope[2] != 'a' && scope[2] != 'd') ||
      (*key == JobOrderKey::kDefault && scope[2] != 'd')) {
    return invalid;
  }
  if (*key == JobOrderKey::kJobId) {
    cursor.value.text = std::string(value);
  } else if (*key == JobOrderKey::kDefault) {
    if (!value.empty()) return invalid;
  } else {
    if (!ParseInt64(value, &cursor.value.number)) return invalid;
    if (*key == JobOrderKey::kState &&
        (cursor.value.number < 0 || cursor.value.number >= kJobStateCount)) {
      return invalid;
    }
  }
  // Canonical spellings only (as above).
  if (Base64Encode(scope + CursorText(*key, cursor)) != token) return invalid;
  if (Plain(request) || scope != TokenScope(request)) return elsewhere;
  return std::optional<JobCursor>(cursor);
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
