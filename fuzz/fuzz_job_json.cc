// The body of projects.jobs.create: parse and validate, then the canonical round trip must hold
// (parse -> print -> parse gives the same job).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "trainyard/model/job_json.h"

using trainyard::model::Capabilities;
using trainyard::model::Job;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Capabilities caps{.multi_replica = true, .containers = true, .tuning = true, .gpus = true};
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto first = trainyard::model::ParseJobForCreate(body, "proj", caps);
  if (!first.ok()) return 0;
  Job job = *first;
  job.create_time = 1700000000000000;
  job.etag = "fhCHZ7hsq10=";
  const std::string printed = trainyard::model::JobToJson(job);
  auto again = trainyard::model::ParseJobForCreate(printed, "proj", caps);
  if (!again.ok()) {
    std::fprintf(stderr, "the printed job is refused: %s\n%s\n", again.status().ToString().c_str(),
                 printed.c_str());
    std::abort();
  }
  if (again->job_id != first->job_id || again->labels != first->labels ||
      again->training_input_json != first->training_input_json) {
    std::fprintf(stderr, "round trip changed the job:\n%s\n%s\n",
                 first->training_input_json.c_str(), again->training_input_json.c_str());
    std::abort();
  }
  return 0;
}
