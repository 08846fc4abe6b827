// The encoding of a log chunk's `data` column (table log_chunks, see docs/store.md).
// Private to src/store.
//
// A chunk holds consecutive log lines of one (project, job_id, task_name, trial_id) stream, whose
// insert ids are first_id, first_id + 1, ... in order. Per line, `data` holds: the timestamp as a
// zigzag varint delta from the previous line's (from 0 for the first line), the severity as a
// zigzag varint, the message length as a varint, and the message bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trainyard/core/status.h"

namespace trainyard::store::sqlite {

// Appends one line to `data`; `prev_timestamp` is the previous line's timestamp (0 for the first)
// and is updated to `timestamp`.
void AppendLogLine(std::string* data, int64_t* prev_timestamp, int64_t timestamp, int64_t severity,
                   std::string_view message);

struct DecodedLogLine {
  int64_t timestamp = 0;
  int64_t severity = 0;
  std::string_view message;  // points into the decoded data
};

// Reads the lines of a chunk's data in order.
class LogChunkReader {
 public:
  explicit LogChunkReader(std::string_view data) : data_(data) {}
  // true: `line` holds the next line; false: no more lines. INTERNAL when `data` is malformed.
  Result<bool> Next(DecodedLogLine* line);

 private:
  std::string_view data_;
  size_t pos_ = 0;
  int64_t prev_timestamp_ = 0;
};

}  // namespace trainyard::store::sqlite
