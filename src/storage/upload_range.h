// The Content-Range header of a resumable-upload PUT (Cloud Storage's resumable protocol):
// "bytes FIRST-LAST/TOTAL", "bytes FIRST-LAST/*", "bytes */TOTAL" or "bytes */*". Private to
// storage.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trainyard/core/status.h"

namespace trainyard::storage::internal {

struct ContentRange {
  std::optional<int64_t> first;  // set together with last: the chunk's bytes
  std::optional<int64_t> last;   // inclusive
  std::optional<int64_t> total;  // the object's size, when the client knows it

  // Bytes in FIRST-LAST (never overflows: the parser refuses a LAST of INT64_MAX).
  int64_t Length() const { return *last - *first + 1; }
};

// INVALID_ARGUMENT ("Invalid Content-Range") unless 0 <= FIRST <= LAST < INT64_MAX and, with a
// TOTAL, LAST < TOTAL.
Result<ContentRange> ParseContentRange(std::string_view header);

}  // namespace trainyard::storage::internal
