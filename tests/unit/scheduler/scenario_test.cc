// Data-driven scenarios of admission and outcome rules, in the manner of DuckDB's sqllogictest:
// each scenarios/*.test file is a script of jobs, capacity and executor events, with the states
// and messages expected after them. One GoogleTest case per file; a failure names the file and
// line. The scheduler runs in step mode on a fake clock with a fake executor (the fixture of
// the other scheduler tests), so a script says exactly when time passes.
//
// The language, one command per line ('#' starts a comment line):
//   node cpus=N memory=SIZE gpus=TYPE,TYPE...   the node (before start; SIZE like 24GiB)
//   option replica_restarts=N | max_running_jobs=N | admission_paused=true|false |
//          oversize_jobs=run_alone|refuse
//   start                                      starts the scheduler (recovery, then step mode)
//   submit ID [priority=N] [workers=N] [ps=N] [evaluators=N] [gpus=N] [max_wait=Ds]
//          [max_run=Ds] [refused=WORD]         a CUSTOM n1-standard-4 job, accelerators on the
//                                              master (T4), checked as at create (CheckRunnable)
//                                              and submitted; submitting never admits by itself;
//                                              refused=WORD: create must refuse it (400) with
//                                              WORD in the message
//   cancel ID | pause | resume
//   step                                       the scheduler does what it can without time
//   advance Ds                                 time passes (e.g. 0.05s), then step
//   running ID                                 every launched, live replica of ID runs
//   exit ID TASK-INDEX HOW                     HOW: ok | code=N | signal=N | oom | lost |
//                                              install | stopped (a stop Trainyard asked for)
//   expect launched ID/TASK-INDEX ... | none   launches since the last `expect launched`
//   expect killed ID/TASK-INDEX ... | none     stop requests since the last `expect killed`
//   expect state ID STATE
//   expect position ID N
//   expect gpus ID/TASK-INDEX LIST             CUDA_VISIBLE_DEVICES of its last launch
//   expect error ID                            the job's errorMessage: the following lines,
//   <message lines>                            joined with "\n", up to a line "----"
//   expect service ID                          a service log line of the job, exactly
//   <line>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "scheduler_fixture.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"

namespace trainyard::scheduler {
namespace {

using model::Job;
using model::JobState;
using namespace testing_support;  // NOLINT(google-build-using-namespace): the fixture

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// "key=value" arguments after the positional ones.
std::map<std::string, std::string> Args(const std::vector<std::string>& words, size_t from) {
  std::map<std::string, std::string> out;
  for (size_t i = from; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    out[words[i].substr(0, eq)] = eq == std::string::npos ? "" : words[i].substr(eq + 1);
  }
  return out;
}

int64_t Size(const std::string& text) {
  const int64_t n = std::stoll(text);
  if (text.ends_with("GiB")) return n << 30;
  if (text.ends_with("MiB")) return n << 20;
  return n;
}

std::string KeyName(const executor::ReplicaKey& k) {
  return k.job_id + "/" + k.task_type + "-" + std::to_string(k.index);
}

class ScenarioTest : public SchedulerTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void Run(const std::string& path) {
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path;
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    size_t launches_seen = 0, kills_seen = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string where = path + ":" + std::to_string(i + 1);
      SCOPED_TRACE(where);
      const auto w = Words(lines[i]);
      if (w.empty() || w[0][0] == '#') continue;
      const std::string& cmd = w[0];
      if (cmd == "node") {
        auto a = Args(w, 1);
        if (a.count("cpus")) options_.node.cpu_millis = std::stoll(a["cpus"]) * 1000;
        if (a.count("memory")) options_.node.memory_bytes = Size(a["memory"]);
        if (a.count("gpus")) {
          options_.node.gpus.clear();
          for (const auto& t : Split(a["gpus"], ',')) {
            options_.node.gpus.push_back({static_cast<int>(options_.node.gpus.size()), t, ""});
          }
        }
      } else if (cmd == "option") {
        auto a = Args(w, 1);
        if (a.count("replica_restarts"))
          options_.replica_restarts = std::stoi(a["replica_restarts"]);
        if (a.count("max_running_jobs"))
          options_.max_running_jobs = std::stoi(a["max_running_jobs"]);
        if (a.count("admission_paused"))
          options_.admission_paused = a["admission_paused"] == "true";
        if (a.count("oversize_jobs"))
          options_.oversize_jobs = *ParseOversizePolicy(a["oversize_jobs"]);
      } else if (cmd == "start") {
        StartScheduler();
      } else if (cmd == "submit") {
        ASSERT_GE(w.size(), 2u);
        auto a = Args(w, 2);
        Job job = MakeJob(w[1], a.count("priority") ? std::stoi(a["priority"]) : 0);
        job.spec.scale_tier = "CUSTOM";
        job.spec.master.machine_type = "n1-standard-4";
        for (auto [flag, role] :
             {std::pair{"workers", &job.spec.worker}, std::pair{"ps", &job.spec.parameter_server},
              std::pair{"evaluators", &job.spec.evaluator}}) {
          if (a.count(flag)) {
            role->machine_type = "n1-standard-4";
            role->count = std::stoi(a[flag]);
          }
        }
        if (a.count("gpus"))
          job.spec.master.accelerator = {"NVIDIA_TESLA_T4", std::stoi(a["gpus"])};
        if (a.count("max_wait")) job.spec.scheduling.max_wait_time = *ParseDuration(a["max_wait"]);
        if (a.count("max_run")) job.spec.scheduling.max_running_time = *ParseDuration(a["max_run"]);
        // What the API checks at create beyond the model (CheckRunnable), then the submit.
        Status runnable = sched_->CheckRunnable(job);
        if (a.count("refused")) {
          ASSERT_FALSE(runnable.ok()) << w[1] << " was accepted";
          EXPECT_EQ(runnable.code(), StatusCode::kInvalidArgument);
          EXPECT_NE(runnable.ToString().find(a["refused"]), std::string::npos)
              << runnable.ToString();
          continue;
        }
        ASSERT_TRUE(runnable.ok()) << runnable.ToString();
        auto st = sched_->Submit(job);
        ASSERT_TRUE(st.ok()) << st.status().ToString();
      } else if (cmd == "cancel") {
        ASSERT_TRUE(sched_->Cancel("p", w.at(1)).ok());
      } else if (cmd == "pause" || cmd == "resume") {
        sched_->SetAdmissionPaused(cmd == "pause");
      } else if (cmd == "step") {
        sched_->RunUntilIdle();
      } else if (cmd == "advance") {
        Advance(*ParseDuration(w.at(1)));
      } else if (cmd == "running") {
        for (const auto& spec : exec_.Launched()) {
          if (spec.key.job_id == w.at(1)) sched_->OnReplicaRunning(spec.key);
        }
      } else if (cmd == "exit") {
        ASSERT_EQ(w.size(), 4u);
        const size_t dash = w[2].rfind('-');
        executor::ReplicaKey key{"p", w[1], "", w[2].substr(0, dash),
                                 std::stoi(w[2].substr(dash + 1))};
        executor::ReplicaExit e;
        e.phase = "run";
        const std::string& how = w[3];
        if (how == "ok") {
        } else if (how.starts_with("code=")) {
          e.exit_code = std::stoi(how.substr(5));
        } else if (how.starts_with("signal=")) {
          e.signal = std::stoi(how.substr(7));
          e.exit_code = 128 + e.signal;
        } else if (how == "oom") {
          e.signal = SIGKILL;
          e.exit_code = 137;
          e.oom_killed = true;
        } else if (how == "lost") {
          e.phase = "lost";
          e.exit_code = -1;
          e.message = "its launcher exited without reporting how the trainer ended";
        } else if (how == "install") {
          e.phase = "install";
          e.exit_code = 1;
          e.message = "ERROR: No matching distribution found for nope";
        } else if (how == "stopped") {
          e.signal = SIGTERM;
          e.exit_code = 128 + SIGTERM;
          e.killed_by_request = true;
        } else {
          FAIL() << "unknown exit " << how;
        }
        sched_->OnReplicaExit(key, e);
      } else if (cmd == "expect") {
        ASSERT_GE(w.size(), 2u);
        const std::string& what = w[1];
        if (what == "launched" || what == "killed") {
          std::vector<std::string> got;
          if (what == "launched") {
            auto all = exec_.Launched();
            for (size_t k = launches_seen; k < all.size(); ++k) got.push_back(KeyName(all[k].key));
            launches_seen = all.size();
          } else {
            auto all = exec_.Killed();
            for (size_t k = kills_seen; k < all.size(); ++k) got.push_back(KeyName(all[k]));
            kills_seen = all.size();
          }
          std::vector<std::string> want(w.begin() + 2, w.end());
          if (want == std::vector<std::string>{"none"}) want.clear();
          EXPECT_EQ(got, want) << what;
        } else if (what == "state") {
          auto job = sched_->GetJob("p", w.at(2));
          ASSERT_TRUE(job.ok()) << job.status().ToString();
          EXPECT_EQ(model::JobStateName(job->state), w.at(3));
        } else if (what == "position") {
          EXPECT_EQ(sched_->GetJob("p", w.at(2))->job_position, std::stoll(w.at(3)));
        } else if (what == "gpus") {
          std::string got = "(not launched)";
          for (const auto& spec : exec_.Launched()) {
            if (KeyName(spec.key) == w.at(2)) got = spec.env.at("CUDA_VISIBLE_DEVICES");
          }
          EXPECT_EQ(got, w.size() > 3 ? w[3] : "");
        } else if (what == "error" || what == "service") {
          std::string want;
          size_t j = i + 1;
          for (; j < lines.size() && lines[j] != "----"; ++j) {
            want += (want.empty() ? "" : "\n") + lines[j];
          }
          ASSERT_LT(j, lines.size()) << "no ---- after the message";
          i = j;
          if (what == "error") {
            EXPECT_EQ(sched_->GetJob("p", w.at(2))->error_message, want);
          } else {
            auto got = ServiceLines(w.at(2));
            EXPECT_NE(std::find(got.begin(), got.end(), want), got.end())
                << "no service line \"" << want << "\" among:\n"
                << ::testing::PrintToString(got);
          }
        } else {
          FAIL() << "unknown expectation " << what;
        }
      } else {
        FAIL() << "unknown command " << cmd;
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
};

TEST_P(ScenarioTest, Runs) { Run(GetParam()); }

std::vector<std::string> ScenarioFiles() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(TRAINYARD_SCENARIO_DIR)) {
    if (e.path().extension() == ".test") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ScenarioTest, ::testing::ValuesIn(ScenarioFiles()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name =
                               std::filesystem::path(param_info.param).stem().string();
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace trainyard::scheduler
