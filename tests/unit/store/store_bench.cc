// ty_store_bench: throughput and latency of the SQLite store (numbers quoted in docs/store.md).
//
//   ty_store_bench [--dir DIR] [--jobs N] [--log-lines N] [--synchronous MODE]
//
// (a) durable CreateJob/s from 8 threads; (b) ListJobs page-of-100 latency with N jobs stored,
// unfiltered and filtered; (c) AppendLogs throughput in batches of 1000 and ReadLogs latency.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "store_test_util.h"
#include "test_filters.h"
#include "trainyard/core/time.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::store {
namespace {

using model::Job;
using model::JobState;

struct Latencies {
  std::vector<double> ms;
  void Add(int64_t micros) { ms.push_back(static_cast<double>(micros) / 1000.0); }
  double Pct(double p) {
    std::sort(ms.begin(), ms.end());
    if (ms.empty()) return 0;
    size_t i = static_cast<size_t>(p * static_cast<double>(ms.size() - 1) + 0.5);
    return ms[std::min(i, ms.size() - 1)];
  }
};

// CPU seconds used by the calling thread (the bench box may be shared; wall rates then lie).
double ThreadCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

Job BenchJob(int i) {
  Job job = testing::MakeJob("bench", (i % 100 == 0 ? "census_" : "job_") + std::to_string(i));
  int r = i % 20;
  job.state = r < 14   ? JobState::kSucceeded
              : r < 17 ? JobState::kFailed
              : r < 18 ? JobState::kRunning
                       : JobState::kQueued;
  job.labels = {{"team", "t" + std::to_string(i % 10)}, {"owner", "alice"}};
  job.create_time = 1700000000000000 + i;
  return job;
}

// Creates jobs [from, to) from `threads` threads; returns seconds taken.
double CreateJobs(JobStore& store, int from, int to, int threads) {
  std::atomic<int> next{from};
  std::atomic<int> errors{0};
  int64_t start = MonotonicMicros();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < to; i = next++) {
        if (!store.CreateJob(BenchJob(i)).ok()) ++errors;
      }
    });
  }
  for (auto& th : pool) th.join();
  if (errors > 0) std::fprintf(stderr, "%d creates failed\n", errors.load());
  return static_cast<double>(MonotonicMicros() - start) / 1e6;
}

void ListLatency(JobStore& store, const char* name, const model::Filter* filter) {
  Latencies first;
  Latencies deep;
  size_t matched = 0;
  for (int round = 0; round < 20; ++round) {
    ListJobsRequest request{.project = "bench", .filter = filter, .page_size = 100};
    for (int page = 0; page < 10; ++page) {
      int64_t start = MonotonicMicros();
      auto response = store.ListJobs(request);
      (page == 0 ? first : deep).Add(MonotonicMicros() - start);
      if (!response.ok()) {
        std::fprintf(stderr, "list failed: %s\n", response.status().ToString().c_str());
        return;
      }
      if (round == 0) matched += response->jobs.size();
      if (response->next_page_token.empty()) break;
      request.page_token = response->next_page_token;
    }
  }
  Latencies all;
  all.ms = first.ms;
  all.ms.insert(all.ms.end(), deep.ms.begin(), deep.ms.end());
  std::printf(
      "  %-28s first page p50 %6.2f ms p99 %6.2f ms | all pages p50 %6.2f p99 %6.2f "
      "max %6.2f ms (%zu jobs in 10 pages)\n",
      name, first.Pct(0.5), first.Pct(0.99), all.Pct(0.5), all.Pct(0.99), all.Pct(1.0), matched);
}

int Main(int argc, char** argv) {
  std::string dir;
  int jobs = 100000;
  int log_lines = 1000000;
  std::string synchronous = "NORMAL";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--dir"))
      dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--jobs"))
      jobs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--log-lines"))
      log_lines = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--synchronous"))
      synchronous = argv[i + 1];
  }
  testing::TempDir temp;
  if (dir.empty()) dir = temp.path();
  auto opened = OpenSqliteJobStore({.path = dir + "/bench.db", .synchronous = synchronous});
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    return 1;
  }
  JobStore& store = **opened;
  std::printf("SQLite store benchmark (synchronous=%s, dir %s)\n", synchronous.c_str(),
              dir.c_str());

  // (a) Durable creates from 8 threads.
  const int kCreateSample = std::min(jobs, 20000);
  double secs = CreateJobs(store, 0, kCreateSample, 8);
  std::printf("(a) CreateJob, 8 threads: %d creates in %.2f s = %.0f creates/s\n", kCreateSample,
              secs, kCreateSample / secs);
  const int kSingle = std::min(2000, jobs - kCreateSample);
  secs = CreateJobs(store, kCreateSample, kCreateSample + kSingle, 1);
  std::printf("    CreateJob, 1 thread:  %d creates in %.2f s = %.0f creates/s\n", kSingle, secs,
              kSingle / secs);
  CreateJobs(store, kCreateSample + kSingle, jobs, 8);
  std::printf("    populated %d jobs\n", jobs);

  // (b) ListJobs latency.
  std::printf("(b) ListJobs page_size=100 over %d jobs:\n", jobs);
  ListLatency(store, "no filter", nullptr);
  auto failed = testing::StateIs(JobState::kFailed);
  ListLatency(store, "state=FAILED (15%)", &failed);
  auto running = testing::StateIs(JobState::kRunning);
  ListLatency(store, "state=RUNNING (5%)", &running);
  auto census = testing::JobIdStartsWith("census");
  ListLatency(store, "jobId:census* (1%)", &census);
  auto job_prefix = testing::JobIdStartsWith("job_");
  ListLatency(store, "jobId:job_* (99%)", &job_prefix);
  auto team = testing::LabelIs("team", "t3");
  ListLatency(store, "labels.team=t3 (10%, no hint)", &team);
  auto rare = testing::LabelIs("team", "none");
  Latencies rare_lat;
  for (int i = 0; i < 5; ++i) {
    int64_t t0 = MonotonicMicros();
    auto r = store.ListJobs({.project = "bench", .filter = &rare, .page_size = 100});
    rare_lat.Add(MonotonicMicros() - t0);
  }
  std::printf("  %-28s full scan p50 %6.2f ms (matches nothing: reads every job)\n",
              "labels.team=none (0%)", rare_lat.Pct(0.5));

  // (c) Logs.
  const int kBatch = 1000;
  const int kJobsWithLogs = 10;
  std::vector<model::LogEntry> batch(kBatch);
  int64_t start = MonotonicMicros();
  double cpu_start = ThreadCpuSeconds();
  for (int b = 0; b < log_lines / kBatch; ++b) {
    for (int i = 0; i < kBatch; ++i) {
      auto& e = batch[static_cast<size_t>(i)];
      e.project = "bench";
      e.job_id = "job_" + std::to_string(b % kJobsWithLogs);
      e.task_name = "master-replica-0";
      e.timestamp = 1700000000000000 + b * kBatch + i;
      e.severity = model::Severity::kInfo;
      e.message =
          "INFO:root:Epoch 3/10 - loss: 0.2345 - accuracy: 0.9123 - step " + std::to_string(i);
    }
    Status s = store.AppendLogs(batch);
    if (!s.ok()) {
      std::fprintf(stderr, "append failed: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  secs = static_cast<double>(MonotonicMicros() - start) / 1e6;
  double cpu = ThreadCpuSeconds() - cpu_start;
  int64_t last_id = batch.back().insert_id;
  std::printf(
      "(c) AppendLogs: %d lines in batches of %d in %.2f s = %.0f lines/s "
      "(%.2f s CPU = %.0f lines per CPU-second)\n",
      log_lines, kBatch, secs, log_lines / secs, cpu, log_lines / cpu);
  Latencies reads;
  std::mt19937_64 rng(42);
  size_t got = 0;
  for (int i = 0; i < 200; ++i) {
    LogQuery q{.project = "bench",
               .job_id = "job_" + std::to_string(i % kJobsWithLogs),
               .after_insert_id = static_cast<int64_t>(rng() % static_cast<uint64_t>(last_id)),
               .limit = 1000};
    int64_t t0 = MonotonicMicros();
    auto r = store.ReadLogs(q);
    reads.Add(MonotonicMicros() - t0);
    if (r.ok()) got += r->size();
  }
  std::printf(
      "    ReadLogs (job, random cursor, limit 1000): p50 %.2f ms p99 %.2f ms "
      "(%zu lines read)\n",
      reads.Pct(0.5), reads.Pct(0.99), got);
  return 0;
}

}  // namespace
}  // namespace trainyard::store

int main(int argc, char** argv) { return trainyard::store::Main(argc, argv); }
