// The job lifecycle (compat §1, §12) as one transition function. The scheduler, store and API
// all use it, so there is one definition of "legal".
#pragma once

#include "trainyard/core/status.h"
#include "trainyard/model/job.h"

namespace trainyard::model {

enum class JobEvent {
  kPrepare,    // QUEUED -> PREPARING (admitted; environments being prepared)
  kRun,        // PREPARING -> RUNNING (all replicas run)
  kSucceed,    // RUNNING -> SUCCEEDED
  kFail,       // QUEUED|PREPARING|RUNNING -> FAILED
  kCancel,     // QUEUED|PREPARING|RUNNING -> CANCELLING
  kCancelled,  // CANCELLING -> CANCELLED (also QUEUED -> CANCELLED directly)
  kRequeue,    // PREPARING|RUNNING -> QUEUED (restart recovery, whole-job retry)
};

const char* JobEventName(JobEvent e);

// The state after `event` in `from`, or FAILED_PRECONDITION naming both.
Result<JobState> Transition(JobState from, JobEvent event);

}  // namespace trainyard::model
