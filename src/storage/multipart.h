// A streaming parser for multipart/related bodies (RFC 2387), as sent by Cloud Storage
// multipart uploads: a JSON metadata part followed by the media part. Part bodies are handed out
// in pieces as they arrive, so the media never has to be held in memory. Accepts CRLF and bare
// LF line breaks (Python's email generator, used by apitools, writes LF). Private to storage.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "trainyard/core/status.h"

namespace trainyard::storage::internal {

// The boundary parameter of a multipart Content-Type ("multipart/related; boundary=xyz"), with
// surrounding quotes (double or single) removed. INVALID_ARGUMENT when absent.
Result<std::string> MultipartBoundary(std::string_view content_type);

class MultipartParser {
 public:
  // Header names are lower-cased.
  using Headers = std::map<std::string, std::string>;
  using OnHeaders = std::function<Status(size_t part, const Headers& headers)>;
  using OnData = std::function<Status(size_t part, const char* data, size_t size)>;

  MultipartParser(std::string boundary, OnHeaders on_headers, OnData on_data);

  // Feeds the next piece of the body; returns the first error of a callback or of the format.
  Status Feed(const char* data, size_t size);
  // INVALID_ARGUMENT unless the closing delimiter has been seen.
  Status Finish() const;
  size_t parts() const { return part_; }

 private:
  enum class State { kPreamble, kHeaders, kBody, kAfterDelimiter, kDone };
  Status Step(bool* progressed);

  std::string delimiter_;  // "\n--" + boundary
  OnHeaders on_headers_;
  OnData on_data_;
  State state_ = State::kPreamble;
  std::string buf_;
  size_t part_ = 0;  // parts seen so far; the current part's index is part_ - 1
  Headers headers_;
};

}  // namespace trainyard::storage::internal
