// The scheduler module's entry point. `Scheduler` is the name the API and the daemon have
// always used for the JobService facade (job_service.h); new code says JobService.
#pragma once

#include "trainyard/scheduler/job_service.h"
#include "trainyard/scheduler/options.h"
#include "trainyard/scheduler/resources.h"

namespace trainyard::scheduler {

using Scheduler = JobService;

}  // namespace trainyard::scheduler
