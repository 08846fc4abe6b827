#include "trainyard/model/state_machine.h"

namespace trainyard::model {

const char* JobEventName(JobEvent e) {
  switch (e) {
    case JobEvent::kPrepare:
      return "prepare";
    case JobEvent::kRun:
      return "run";
    case JobEvent::kSucceed:
      return "succeed";
    case JobEvent::kFail:
      return "fail";
    case JobEvent::kCancel:
      return "cancel";
    case JobEvent::kCancelled:
      return "cancelled";
    case JobEvent::kRequeue:
      return "requeue";
  }
  return "unknown";
}

Result<JobState> Transition(JobState from, JobEvent event) {
  using S = JobState;
  switch (event) {
    case JobEvent::kPrepare:
      if (from == S::kQueued) return S::kPreparing;
      break;
    case JobEvent::kRun:
      if (from == S::kPreparing) return S::kRunning;
      break;
    case JobEvent::kSucceed:
      if (from == S::kRunning) return S::kSucceeded;
      break;
    case JobEvent::kFail:
      if (from == S::kQueued || from == S::kPreparing || from == S::kRunning ||
          from == S::kCancelling)
        return S::kFailed;
      break;
    case JobEvent::kCancel:
      if (from == S::kQueued || from == S::kPreparing || from == S::kRunning) return S::kCancelling;
      break;
    case JobEvent::kCancelled:
      if (from == S::kCancelling || from == S::kQueued) return S::kCancelled;
      break;
    case JobEvent::kRequeue:
      if (from == S::kPreparing || from == S::kRunning) return S::kQueued;
      break;
  }
  return FailedPrecondition(std::string("a job in state ") + JobStateName(from) + " cannot " +
                            JobEventName(event));
}

}  // namespace trainyard::model
