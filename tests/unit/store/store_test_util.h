// Shared helpers of the store tests and the store benchmark.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "temp_dir.h"
#include "trainyard/model/job.h"

namespace trainyard::store::testing {

// A fresh directory under $TMPDIR (or /tmp), removed on destruction.
class TempDir : public test_support::TempDir {
 public:
  TempDir() : test_support::TempDir("ty-store") {}
};

// A QUEUED job with every stored field set to something recognisable.
inline model::Job MakeJob(const std::string& project, const std::string& job_id) {
  model::Job job;
  job.project = project;
  job.job_id = job_id;
  job.state = model::JobState::kQueued;
  job.training_input_json =
      R"({"scaleTier":"CUSTOM","masterType":"n1-standard-4","region":"us-central1",)"
      R"("packageUris":["gs://bucket/trainer-0.1.tar.gz"],"pythonModule":"trainer.task"})";
  job.spec.scale_tier = "CUSTOM";
  job.spec.master.machine_type = "n1-standard-4";
  job.spec.package_uris = {"gs://bucket/trainer-0.1.tar.gz"};
  job.spec.python_module = "trainer.task";
  job.spec.region = "us-central1";
  job.labels = {{"owner", "alice"}};
  job.etag = "AAAAAAAAAAA=";
  job.create_time = 1700000000000000;
  return job;
}

}  // namespace trainyard::store::testing
