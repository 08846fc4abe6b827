// Seeds a daemon data dir for the console benchmark (bench_console.py): N finished jobs in
// project "bench" (a fifth FAILED, labels team=t0..t9) and one job, "big_log", with L log lines
// of its master ("line I"), written straight into <data_dir>/trainyard.db through the store.
//
//   ty_console_seed DATA_DIR [--jobs N] [--log-lines L]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "trainyard/core/time.h"
#include "trainyard/model/job_json.h"
#include "trainyard/store/store_sqlite.h"

using namespace trainyard;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ty_console_seed DATA_DIR [--jobs N] [--log-lines L]\n");
    return 2;
  }
  std::string dir = argv[1];
  int jobs = 100000;
  long lines = 1000000;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--jobs")) jobs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--log-lines")) lines = std::atol(argv[i + 1]);
  }
  auto opened = store::OpenSqliteJobStore({.path = dir + "/trainyard.db"});
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().message().c_str());
    return 1;
  }
  auto& st = **opened;
  Timestamp t0 = NowMicros() - Timestamp{jobs} * kMicrosPerSecond;
  auto make = [&](const std::string& id, int i) {
    std::string body = "{\"jobId\":\"" + id + "\",\"labels\":{\"team\":\"t" +
                       std::to_string(i % 10) +
                       "\"},\"trainingInput\":{\"packageUris\":[\"gs://b/p.tar.gz\"],"
                       "\"pythonModule\":\"trainer.task\",\"region\":\"us-central1\","
                       "\"args\":[\"--epochs\",\"" +
                       std::to_string(i % 50) + "\"]}}";
    auto job = model::ParseJobForCreate(body, "bench", {});
    if (!job.ok()) {
      std::fprintf(stderr, "%s\n", job.status().message().c_str());
      std::exit(1);
    }
    job->state = i % 5 == 0 ? model::JobState::kFailed : model::JobState::kSucceeded;
    if (job->state == model::JobState::kFailed) {
      job->error_message = "The replica master 0 exited with a non-zero status of 1.";
    }
    job->create_time = t0 + Timestamp{i} * kMicrosPerSecond;
    job->start_time = job->create_time + kMicrosPerSecond;
    job->end_time = job->start_time + 60 * kMicrosPerSecond;
    auto seq = st.CreateJob(*job);
    if (!seq.ok()) {
      std::fprintf(stderr, "%s\n", seq.status().message().c_str());
      std::exit(1);
    }
  };
  make("big_log", 0);
  for (int i = 1; i < jobs; ++i) make("job_" + std::to_string(i), i);
  std::printf("seeded %d jobs\n", jobs);
  std::vector<model::LogEntry> batch;
  for (long i = 0; i < lines;) {
    batch.clear();
    for (int k = 0; k < 1000 && i < lines; ++k, ++i) {
      model::LogEntry e;
      e.project = "bench";
      e.job_id = "big_log";
      e.task_name = "master-replica-0";
      e.timestamp = t0 + i;
      e.severity = i % 1000 == 999 ? model::Severity::kWarning : model::Severity::kInfo;
      e.message = "line " + std::to_string(i) + " loss=" + std::to_string(1.0 / (1 + i % 97));
      batch.push_back(std::move(e));
    }
    if (auto s = st.AppendLogs(batch); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }
  }
  std::printf("seeded %ld log lines of big_log\n", lines);
  return 0;
}
