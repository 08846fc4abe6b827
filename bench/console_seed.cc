// Seeds a daemon data dir for the console benchmark (bench_console.py): N finished jobs in
// project "bench" (a fifth FAILED, labels team=t0..t9, start and end times spread) and one job,
// "big_log", with L log lines of its master ("line I"), written straight into
// <data_dir>/trainyard.db through the store.
//
// With --trials T, also "tuned": a finished tuning job (MINIMIZE, three parameters) of T trials,
// each with R intermediate reports (--reports, default 50) in its metric file where the local
// executor keeps it (<data_dir>/jobs/bench/tuned/trial-I/master-replica-0/hypertune/...).
//
//   ty_console_seed DATA_DIR [--jobs N] [--log-lines L] [--trials T] [--reports R]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trainyard/core/time.h"
#include "trainyard/model/job_json.h"
#include "trainyard/store/store_sqlite.h"

using namespace trainyard;

// The local executor's work dir of a trial's master (docs/on-disk-layout.md).
static std::string dir_of_trial(const std::string& data_dir, int trial) {
  return data_dir + "/jobs/bench/tuned/trial-" + std::to_string(trial) + "/master-replica-0";
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ty_console_seed DATA_DIR [--jobs N] [--log-lines L]\n");
    return 2;
  }
  std::string dir = argv[1];
  int jobs = 100000;
  long lines = 1000000;
  int trials = 0;
  int reports = 50;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--trials")) trials = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reports")) reports = std::atoi(argv[i + 1]);
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
    // Waits of 1 s to 1 h and runs of 1 s to 2 h, spread, so the jobs' start and end orders
    // differ from their creation order (bench_console.py sorts by each).
    job->start_time = job->create_time + (1 + (Timestamp{i} * 7919) % 3600) * kMicrosPerSecond;
    job->end_time = job->start_time + (1 + (Timestamp{i} * 104729) % 7200) * kMicrosPerSecond;
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
  if (trials > 0) {
    auto job = model::ParseJobForCreate(
        R"({"jobId":"tuned","trainingInput":{"packageUris":["gs://b/p.tar.gz"],)"
        R"("pythonModule":"trainer.task","region":"us-central1","hyperparameters":{)"
        R"("goal":"MINIMIZE","hyperparameterMetricTag":"loss","maxTrials":)" +
            std::to_string(trials) +
            R"(,"maxParallelTrials":4,"params":[)"
            R"({"parameterName":"lr","type":"DOUBLE","minValue":0.0001,"maxValue":0.1,)"
            R"("scaleType":"UNIT_LOG_SCALE"},)"
            R"({"parameterName":"layers","type":"INTEGER","minValue":1,"maxValue":8},)"
            R"({"parameterName":"opt","type":"CATEGORICAL","categoricalValues":["adam","sgd"]}]}}})",
        "bench", {.tuning = true});
    if (!job.ok()) {
      std::fprintf(stderr, "%s\n", job.status().message().c_str());
      return 1;
    }
    job->state = model::JobState::kSucceeded;
    job->create_time = NowMicros() - 3600 * kMicrosPerSecond;
    job->start_time = job->create_time + kMicrosPerSecond;
    job->end_time = NowMicros();
    std::string out = R"({"completedTrialCount":")" + std::to_string(trials) + R"(","trials":[)";
    unsigned rng = 12345;
    auto uniform = [&rng] {
      rng = rng * 1103515245u + 12345u;
      return static_cast<double>((rng >> 8) & 0xffffff) / 0x1000000;
    };
    for (int t = 1; t <= trials; ++t) {
      const double lr = std::pow(10.0, -4 + 3 * uniform());
      const int layers = 1 + static_cast<int>(uniform() * 8) % 8;
      const bool sgd = uniform() < 0.5;
      const double final_loss = std::fabs(std::log10(lr) + 2.5) + 0.1 * layers + (sgd ? 0.3 : 0);
      const std::string trial_dir = dir_of_trial(dir, t);
      std::filesystem::create_directories(trial_dir + "/hypertune");
      std::ofstream metrics(trial_dir + "/hypertune/output.metrics");
      for (int r = 1; r <= reports; ++r) {
        metrics << R"({"timestamp": )" << 1000 + r << R"(, "trial": ")" << t << R"(", "loss": ")"
                << final_loss * (1 + 1.0 / r) << R"(", "global_step": ")" << r * 100 << "\"}\n";
      }
      char lr_text[32];
      std::snprintf(lr_text, sizeof lr_text, "%.17g", lr);
      char loss_text[32];
      std::snprintf(loss_text, sizeof loss_text, "%.17g", final_loss * (1 + 1.0 / reports));
      out += std::string(t > 1 ? "," : "") + R"({"trialId":")" + std::to_string(t) +
             R"(","hyperparameters":{"lr":")" + lr_text + R"(","layers":")" +
             std::to_string(layers) + R"(","opt":")" + (sgd ? "sgd" : "adam") +
             R"("},"finalMetric":{"trainingStep":")" + std::to_string(reports * 100) +
             R"(","objectiveValue":)" + loss_text +
             R"(},"startTime":"2026-01-01T00:00:00Z","endTime":"2026-01-01T00:10:00Z",)"
             R"("state":"SUCCEEDED"})";
    }
    out += R"(],"isHyperparameterTuningJob":true,"hyperparameterMetricTag":"loss"})";
    job->training_output_json = out;
    if (auto seq = st.CreateJob(*job); !seq.ok()) {
      std::fprintf(stderr, "%s\n", seq.status().message().c_str());
      return 1;
    }
    std::printf("seeded tuned: %d trials of %d reports\n", trials, reports);
  }
  return 0;
}
