#include "upload_range.h"

#include <charconv>
#include <limits>

namespace trainyard::storage::internal {
namespace {

std::optional<int64_t> ParseInt64(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

Result<ContentRange> ParseContentRange(std::string_view r) {
  const Status bad = InvalidArgument("Invalid Content-Range");
  if (r.substr(0, 6) != "bytes ") return bad;
  r.remove_prefix(6);
  size_t slash = r.find('/');
  if (slash == std::string_view::npos) return bad;
  std::string_view span = r.substr(0, slash);
  std::string_view tot = r.substr(slash + 1);
  ContentRange out;
  if (tot != "*") {
    out.total = ParseInt64(tot);
    if (!out.total || *out.total < 0) return bad;
  }
  if (span != "*") {
    size_t dash = span.find('-');
    if (dash == std::string_view::npos) return bad;
    out.first = ParseInt64(span.substr(0, dash));
    out.last = ParseInt64(span.substr(dash + 1));
    // LAST = INT64_MAX would make the chunk's length overflow; no object is that large.
    if (!out.first || !out.last || *out.first < 0 || *out.last < *out.first ||
        *out.last == std::numeric_limits<int64_t>::max() ||
        (out.total && *out.last >= *out.total)) {
      return bad;
    }
  }
  return out;
}

}  // namespace trainyard::storage::internal
