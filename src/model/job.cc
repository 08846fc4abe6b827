#include "trainyard/model/job.h"

namespace trainyard::model {

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kStateUnspecified:
      return "STATE_UNSPECIFIED";
    case JobState::kQueued:
      return "QUEUED";
    case JobState::kPreparing:
      return "PREPARING";
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kSucceeded:
      return "SUCCEEDED";
    case JobState::kFailed:
      return "FAILED";
    case JobState::kCancelling:
      return "CANCELLING";
    case JobState::kCancelled:
      return "CANCELLED";
  }
  return "STATE_UNSPECIFIED";
}

std::optional<JobState> ParseJobState(std::string_view name) {
  for (int i = 0; i <= 7; ++i) {
    auto s = static_cast<JobState>(i);
    if (name == JobStateName(s)) return s;
  }
  return std::nullopt;
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kDefault:
      return "DEFAULT";
    case Severity::kDebug:
      return "DEBUG";
    case Severity::kInfo:
      return "INFO";
    case Severity::kNotice:
      return "NOTICE";
    case Severity::kWarning:
      return "WARNING";
    case Severity::kError:
      return "ERROR";
    case Severity::kCritical:
      return "CRITICAL";
    case Severity::kAlert:
      return "ALERT";
    case Severity::kEmergency:
      return "EMERGENCY";
  }
  return "DEFAULT";
}

std::optional<Severity> ParseSeverity(std::string_view name) {
  for (Severity s : {Severity::kDefault, Severity::kDebug, Severity::kInfo, Severity::kNotice,
                     Severity::kWarning, Severity::kError, Severity::kCritical, Severity::kAlert,
                     Severity::kEmergency}) {
    if (name == SeverityName(s)) return s;
  }
  return std::nullopt;
}

}  // namespace trainyard::model
