// `trainyard jobs trials`, `trainyard jobs queue` and `trainyard jobs history`: the console's
// API additions from the command line (docs/cli.md): a tuning job's trials with their
// intermediate reports (GET …/jobs/J/trials), what runs and what waits (GET …/jobs:queue), and
// a job's state changes (GET …/jobs/J/history).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "printers.h"
#include "trainyard/core/util.h"

namespace trainyard::cli {

using nlohmann::json;

namespace {

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_float()) return FormatGcloudFloat(it->get<double>());
  return it->dump();
}

std::string Gib(const std::string& bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", std::strtod(bytes.c_str(), nullptr) / (1 << 30));
  return buf;
}

}  // namespace

int RunJobTrials(const Invocation& inv, const JobTrialsArgs& args) {
  const std::string format = args.format.value_or("table");
  if (format != "table" && format != "json") {
    return inv.Fail("Invalid value for [--format]: \"" + format + "\" (table or json)");
  }
  auto c = inv.MakeClient();
  const std::string base = "/v1/projects/" + PercentEncode(c->options().project) + "/jobs/" +
                           PercentEncode(args.job) + "/trials?pageSize=1000";
  json trials = json::array();
  std::string tag;
  std::string token;
  do {
    std::string path = base;
    if (!token.empty()) path += "&pageToken=" + PercentEncode(token);
    if (args.trial) path += "&trialId=" + PercentEncode(*args.trial);
    auto body = c->CallJson("GET", path);
    if (!body.ok()) return inv.Fail(body.status());
    json page = json::parse(*body, nullptr, false);
    if (!page.is_object()) return inv.Fail("The daemon's answer is not a JSON object");
    for (auto& t : page.value("trials", json::array())) trials.push_back(std::move(t));
    tag = page.value("hyperparameterMetricTag", tag);
    token = page.value("nextPageToken", "");
  } while (!token.empty());
  if (format == "json") {
    inv.Out() << json{{"trials", trials}, {"hyperparameterMetricTag", tag}}.dump(2) << "\n";
    return kExitOk;
  }
  if (trials.empty()) {
    inv.Err() << "Job " << args.job << " has no trials.\n";
    return kExitOk;
  }
  // Columns: the trial, its state, objective and step, how many reports, the parameters.
  std::vector<std::string> names;
  for (const auto& t : trials) {
    const json hp = t.value("hyperparameters", json::object());
    for (const auto& [k, v] : hp.items()) {
      if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
    }
  }
  std::vector<std::string> headers = {"TRIAL", "STATE", "OBJECTIVE", "STEP", "REPORTS"};
  for (const auto& n : names) headers.push_back(n);
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : trials) {
    const json fm = t.value("finalMetric", json::object());
    std::string state = Str(t, "state");
    if (t.value("isTrialStoppedEarly", false)) state += " (stopped early)";
    std::vector<std::string> row = {Str(t, "trialId"), state, Str(fm, "objectiveValue"),
                                    Str(fm, "trainingStep"),
                                    std::to_string(t.value("allMetrics", json::array()).size())};
    const json hp = t.value("hyperparameters", json::object());
    for (const auto& n : names) row.push_back(Str(hp, n.c_str()));
    rows.push_back(std::move(row));
    if (args.show_metrics) {
      std::string steps;
      for (const auto& m : t.value("allMetrics", json::array())) {
        steps +=
            (steps.empty() ? "" : " ") + Str(m, "trainingStep") + ":" + Str(m, "objectiveValue");
      }
      if (!steps.empty()) rows.push_back({"", "  " + steps});
    }
  }
  inv.Out() << FormatTable(headers, rows);
  return kExitOk;
}

int RunJobHistory(const Invocation& inv, const JobHistoryArgs& args) {
  const std::string format = args.format.value_or("table");
  if (format != "table" && format != "json") {
    return inv.Fail("Invalid value for [--format]: \"" + format + "\" (table or json)");
  }
  auto c = inv.MakeClient();
  auto body = c->CallJson("GET", "/v1/projects/" + PercentEncode(c->options().project) + "/jobs/" +
                                     PercentEncode(args.job) + "/history");
  if (!body.ok()) return inv.Fail(body.status());
  json h = json::parse(*body, nullptr, false);
  if (!h.is_object()) return inv.Fail("The daemon's answer is not a JSON object");
  if (format == "json") {
    inv.Out() << h.dump(2) << "\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& change : h.value("stateChanges", json::array())) {
    // One line per change: a reason's line breaks (a traceback's last lines) become spaces.
    std::string reason = Str(change, "reason");
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    rows.push_back({Str(change, "time"), Str(change, "state"), reason});
  }
  inv.Out() << FormatTable({"TIME", "STATE", "REASON"}, rows);
  return kExitOk;
}

int RunJobsQueue(const Invocation& inv, const JobsQueueArgs& args) {
  const std::string format = args.format.value_or("table");
  if (format != "table" && format != "json") {
    return inv.Fail("Invalid value for [--format]: \"" + format + "\" (table or json)");
  }
  auto c = inv.MakeClient();
  std::string path = "/v1/projects/" + PercentEncode(c->options().project) + "/jobs:queue";
  if (args.page_size) path += "?pageSize=" + PercentEncode(*args.page_size);
  auto body = c->CallJson("GET", path);
  if (!body.ok()) return inv.Fail(body.status());
  json q = json::parse(*body, nullptr, false);
  if (!q.is_object()) return inv.Fail("The daemon's answer is not a JSON object");
  if (format == "json") {
    inv.Out() << q.dump(2) << "\n";
    return kExitOk;
  }
  const json adm = q.value("admission", json::object());
  const json node = q.value("node", json::object());
  std::ostream& out = inv.Out();
  out << "Admission: "
      << (adm.value("paused", false)   ? "paused"
          : adm.contains("holdReason") ? "held: " + Str(adm, "holdReason")
                                       : std::string("admitting"))
      << "\n";
  if (adm.contains("backendProblem"))
    out << "Backend problem: " << Str(adm, "backendProblem") << "\n";
  // With Slurm (`scope` cluster) the capacity is the partition's and "free" is what Trainyard's
  // own jobs leave of it.
  const bool cluster = node.value("scope", "") == "cluster";
  out << (cluster ? "Cluster capacity (left by Trainyard's jobs): " : "Capacity: ")
      << Str(node, "freeVcpus") << " of " << Str(node, "vcpus") << " vCPUs free, "
      << Gib(Str(node, "freeMemoryBytes")) << " of " << Gib(Str(node, "memoryBytes"))
      << " memory free, " << Str(node, "freeGpus") << " of " << Str(node, "gpus") << " GPUs free\n";
  std::vector<std::vector<std::string>> gpus;
  for (const auto& g : q.value("gpus", json::array())) {
    std::string holder = !g.value("inUse", false) ? "free"
                         : g.contains("jobId")
                             ? Str(g, "jobId") +
                                   (g.contains("trialId") ? " trial " + Str(g, "trialId") : "") +
                                   " " + Str(g, "taskName")
                             : "(another project)";
    gpus.push_back({Str(g, "index"), Str(g, "type"), holder});
  }
  if (!gpus.empty()) out << "\n" << FormatTable({"GPU", "TYPE", "HELD_BY"}, gpus);
  std::vector<std::vector<std::string>> running;
  std::vector<std::vector<std::string>> in_cluster;  // submitted, QUEUED in Slurm's queue
  for (const auto& j : q.value("admitted", json::array())) {
    if (Str(j, "state") == "QUEUED") {
      in_cluster.push_back({Str(j, "jobPosition"), Str(j, "jobId"), Str(j, "waitReason")});
      continue;
    }
    for (const auto& r : j.value("replicas", json::array())) {
      std::string gpu = r.contains("gpuIndices") ? r["gpuIndices"].dump() : "";
      running.push_back({Str(j, "jobId"), Str(j, "state"), Str(r, "trialId"), Str(r, "taskName"),
                         Str(r, "state"), Str(r, "vcpus"), Gib(Str(r, "memoryBytes")),
                         Str(r, "gpus") + (gpu.empty() ? "" : " " + gpu)});
    }
    if (j.value("replicas", json::array()).empty()) {
      running.push_back({Str(j, "jobId"), Str(j, "state"), "", "", "", "", "", ""});
    }
  }
  out << "\nRunning:\n";
  out << (running.empty() ? "  none\n"
                          : FormatTable({"JOB_ID", "STATE", "TRIAL", "TASK", "REPLICA", "VCPUS",
                                         "MEMORY", "GPUS"},
                                        running));
  if (!in_cluster.empty()) {
    out << "\nWaiting in the cluster's queue:\n"
        << FormatTable({"POSITION", "JOB_ID", "WAIT_REASON"}, in_cluster);
  }
  std::vector<std::vector<std::string>> waiting;
  for (const auto& j : q.value("queued", json::array())) {
    waiting.push_back({Str(j, "jobPosition"), Str(j, "jobId"), Str(j, "waitReason")});
  }
  out << "\nWaiting (admission order):\n";
  out << (waiting.empty() ? "  none\n"
                          : FormatTable({"POSITION", "JOB_ID", "WAIT_REASON"}, waiting));
  if (q.contains("nextPageToken")) out << "(more queued jobs: raise --page-size)\n";
  return kExitOk;
}

}  // namespace trainyard::cli
