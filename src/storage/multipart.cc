#include "multipart.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace trainyard::storage::internal {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Longest header block accepted for one part.
constexpr size_t kMaxHeaderBytes = 64 * 1024;

}  // namespace

Result<std::string> MultipartBoundary(std::string_view content_type) {
  std::string lower = Lower(content_type);
  size_t pos = lower.find("boundary=");
  if (pos == std::string::npos) {
    return InvalidArgument("multipart Content-Type has no boundary parameter");
  }
  std::string_view v = content_type.substr(pos + 9);
  size_t end = v.find(';');
  v = Trim(v.substr(0, end));
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    v = v.substr(1, v.size() - 2);
  }
  if (v.empty() || v.size() > 200) return InvalidArgument("invalid multipart boundary");
  return std::string(v);
}

MultipartParser::MultipartParser(std::string boundary, OnHeaders on_headers, OnData on_data)
    : delimiter_("\n--" + boundary),
      on_headers_(std::move(on_headers)),
      on_data_(std::move(on_data)) {
  // The first delimiter may start the body, with no line break before it.
  buf_.push_back('\n');
}

Status MultipartParser::Feed(const char* data, size_t size) {
  if (state_ == State::kDone) return Status::Ok();  // the epilogue is ignored
  buf_.append(data, size);
  bool progressed = true;
  while (progressed && state_ != State::kDone) {
    progressed = false;
    TRAINYARD_RETURN_IF_ERROR(Step(&progressed));
  }
  return Status::Ok();
}

Status MultipartParser::Step(bool* progressed) {
  switch (state_) {
    case State::kPreamble: {
      size_t pos = buf_.find(delimiter_);
      if (pos == std::string::npos) {
        // Keep only what could be the start of a delimiter.
        if (buf_.size() > delimiter_.size()) buf_.erase(0, buf_.size() - delimiter_.size());
        return Status::Ok();
      }
      buf_.erase(0, pos + delimiter_.size());
      state_ = State::kAfterDelimiter;
      *progressed = true;
      return Status::Ok();
    }
    case State::kAfterDelimiter: {
      if (buf_.size() < 2) return Status::Ok();
      if (buf_.compare(0, 2, "--") == 0) {
        state_ = State::kDone;
        buf_.clear();
        *progressed = true;
        return Status::Ok();
      }
      size_t eol = buf_.find('\n');
      if (eol == std::string::npos) {
        if (buf_.size() > 1024) return InvalidArgument("malformed multipart delimiter line");
        return Status::Ok();
      }
      buf_.erase(0, eol + 1);
      ++part_;
      headers_.clear();
      state_ = State::kHeaders;
      *progressed = true;
      return Status::Ok();
    }
    case State::kHeaders: {
      for (;;) {
        size_t eol = buf_.find('\n');
        if (eol == std::string::npos) {
          if (buf_.size() > kMaxHeaderBytes) return InvalidArgument("multipart headers too long");
          return Status::Ok();
        }
        std::string_view line = Trim(std::string_view(buf_).substr(0, eol));
        if (line.empty()) {
          buf_.erase(0, eol + 1);
          TRAINYARD_RETURN_IF_ERROR(on_headers_(part_ - 1, headers_));
          state_ = State::kBody;
          *progressed = true;
          return Status::Ok();
        }
        size_t colon = line.find(':');
        if (colon != std::string_view::npos) {
          headers_[Lower(Trim(line.substr(0, colon)))] = std::string(Trim(line.substr(colon + 1)));
        }
        buf_.erase(0, eol + 1);
      }
    }
    case State::kBody: {
      size_t pos = buf_.find(delimiter_);
      if (pos == std::string::npos) {
        // Hand out everything that cannot belong to a delimiter ("\r" + delimiter).
        size_t keep = delimiter_.size() + 1;
        if (buf_.size() > keep) {
          size_t n = buf_.size() - keep;
          TRAINYARD_RETURN_IF_ERROR(on_data_(part_ - 1, buf_.data(), n));
          buf_.erase(0, n);
        }
        return Status::Ok();
      }
      size_t n = pos;
      if (n > 0 && buf_[n - 1] == '\r') --n;
      if (n > 0) TRAINYARD_RETURN_IF_ERROR(on_data_(part_ - 1, buf_.data(), n));
      buf_.erase(0, pos + delimiter_.size());
      state_ = State::kAfterDelimiter;
      *progressed = true;
      return Status::Ok();
    }
    case State::kDone:
      return Status::Ok();
  }
  return Status::Ok();
}

Status MultipartParser::Finish() const {
  if (state_ != State::kDone) {
    return InvalidArgument("multipart body ended before its closing boundary");
  }
  return Status::Ok();
}

}  // namespace trainyard::storage::internal
