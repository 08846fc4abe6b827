// Restart in place under Slurm: the control.log protocol and srun's words on a step's end
// (slurm_control.h).
#include "trainyard/executor/slurm_control.h"

#include <sys/wait.h>

#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

#include "trainyard/core/util.h"
#include "trainyard/executor/launcher_protocol.h"

namespace trainyard::executor {

namespace {

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

}  // namespace

std::string SlurmControlLine(const SlurmControl& c) {
  std::string line = c.verb + " " + c.task;
  if (c.attempt >= 0) line += " " + std::to_string(c.attempt);
  return line;
}

std::optional<SlurmControl> ParseSlurmControlLine(std::string_view line) {
  const std::vector<std::string_view> w = Words(line);
  if (w.size() < 2 || w.size() > 3 || (w[0] != "restart" && w[0] != "release")) return {};
  SlurmControl c;
  c.verb = std::string(w[0]);
  c.task = std::string(w[1]);
  if (w.size() == 3) {
    int attempt = -1;
    auto [end, ec] = std::from_chars(w[2].data(), w[2].data() + w[2].size(), attempt);
    if (ec != std::errc() || end != w[2].data() + w[2].size() || attempt < 0) return {};
    c.attempt = attempt;
  }
  return c;
}

SlurmControlAction DecideSlurmControl(const SlurmControl& c, int current) {
  // Without both attempts known (an older daemon's line, or a plan without attempts) the
  // line is obeyed as it always was.
  const bool known = c.attempt >= 0 && current >= 0;
  if (c.verb == "restart") {
    return !known || c.attempt > current ? SlurmControlAction::kRestart
                                         : SlurmControlAction::kIgnore;
  }
  if (c.verb == "release") {
    return known && c.attempt < current ? SlurmControlAction::kIgnore
                                        : SlurmControlAction::kRelease;
  }
  return SlurmControlAction::kIgnore;
}

int SpecAttemptIn(const std::string& work_dir) {
  auto text = ReadFile(work_dir + "/" + kSpecFile);
  if (!text.ok()) return -1;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return -1;
  auto it = j.find("attempt");
  if (it == j.end()) return 0;  // SpecToJson leaves out attempt 0
  return it->is_number_integer() ? it->get<int>() : -1;
}

bool AttemptSuperseded(int own, int spec_attempt) { return own >= 0 && spec_attempt > own; }

std::string SupersededExitFile(int attempt) {
  return "exit.attempt-" + std::to_string(attempt) + ".json";
}

bool SbatchFailureIsTransient(std::string_view err) {
  // Slurm's words (slurm_errno.c, 22.05) for a controller away, busy or not reachable, and the
  // network or munge between: none is about the job itself.
  static constexpr std::string_view kTransient[] = {
      "unable to contact slurm controller",
      "socket timed out",
      "slurm temporarily unable",
      "resource temporarily unavailable",
      "connection refused",
      "connection timed out",
      "communication connection failure",
      "zero bytes were transmitted",
      "backup controller in standby",
      "transport endpoint is not connected",
      "network is unreachable",
      "no route to host",
      "slurmctld is not responding",
      "munge communication error",
      "unable to connect to munge",
  };
  std::string lower(err);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view t : kTransient) {
    if (Contains(lower, t)) return true;
  }
  return false;
}

bool SlurmExitIsStale(int exit_attempt, int spec_attempt) {
  return exit_attempt >= 0 && exit_attempt < spec_attempt;
}

SrunStepEnd ClassifySrunStepEnd(const std::vector<std::string>& stderr_lines, int wait_status) {
  SrunStepEnd end;
  bool task_killed = false;
  for (const std::string& line : stderr_lines) {
    if (Contains(line, ": Out Of Memory")) {
      end.out_of_memory = true;
    } else if (Contains(line, "Node failure") || Contains(line, " CANCELLED AT ") ||
               Contains(line, "step aborted") || Contains(line, "DUE TO")) {
      end.slurm_ended = true;
    } else if (Contains(line, ": task ") && !Contains(line, "Exited with exit code")) {
      // "srun: error: n1: task 0: Killed" (or "Terminated", "Segmentation fault", ...).
      task_killed = true;
    }
  }
  // srun exits 128 + the signal that killed its task.
  const int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 0;
  if (task_killed && !end.out_of_memory && !end.slurm_ended && code > 128 && code < 128 + 65) {
    end.task_signal = code - 128;
  }
  return end;
}

}  // namespace trainyard::executor
