// Status and Result<T>: the one error vocabulary of Trainyard.
//
// Expected failures cross module boundaries as values, never as exceptions. The code set is
// google.rpc.Code (so the API maps it to HTTP in one place) kept to the codes we actually use.
// A Status may carry field violations, which the API renders as a google.rpc.BadRequest detail.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace trainyard {

enum class StatusCode {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// "INVALID_ARGUMENT", "NOT_FOUND", ... (google.rpc.Code names).
const char* StatusCodeName(StatusCode code);
// Canonical HTTP status for a code (INVALID_ARGUMENT -> 400, NOT_FOUND -> 404, ...).
int HttpStatusForCode(StatusCode code);

// One entry of google.rpc.BadRequest.fieldViolations.
struct FieldViolation {
  std::string field;        // e.g. "job.training_input.scale_tier" or "jobId"
  std::string description;  // human readable, names the problem
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::vector<FieldViolation>& violations() const { return violations_; }

  Status& AddViolation(std::string field, std::string description) {
    violations_.push_back({std::move(field), std::move(description)});
    return *this;
  }
  // "NOT_FOUND: message" (for logs and tests).
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::vector<FieldViolation> violations_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}

// Either a value or a non-OK Status. Shaped so it can become std::expected later.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace trainyard

#define TRAINYARD_CONCAT_INNER(a, b) a##b
#define TRAINYARD_CONCAT(a, b) TRAINYARD_CONCAT_INNER(a, b)

#define TRAINYARD_RETURN_IF_ERROR(expr)      \
  do {                                       \
    ::trainyard::Status _ty_status = (expr); \
    if (!_ty_status.ok()) return _ty_status; \
  } while (0)

#define TRAINYARD_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.ok()) return tmp.status();                   \
  lhs = std::move(tmp).value()

// TRAINYARD_ASSIGN_OR_RETURN(auto x, Foo()); returns Foo()'s status on error.
#define TRAINYARD_ASSIGN_OR_RETURN(lhs, expr) \
  TRAINYARD_ASSIGN_OR_RETURN_IMPL(TRAINYARD_CONCAT(_ty_result_, __LINE__), lhs, expr)
