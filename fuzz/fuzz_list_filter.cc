// The filter of projects.jobs.list: parse, then evaluate against a job.
#include <cstdint>
#include <string_view>

#include "trainyard/model/filter.h"
#include "trainyard/model/job.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto filter = trainyard::model::ParseFilter(text);
  if (!filter.ok()) return 0;
  trainyard::model::Job job;
  job.project = "p";
  job.job_id = "census_1";
  job.state = trainyard::model::JobState::kRunning;
  job.labels = {{"owner", "alice"}, {"team", ""}};
  job.create_time = 1700000000000000;
  (void)(*filter)->Matches(job);
  return 0;
}
