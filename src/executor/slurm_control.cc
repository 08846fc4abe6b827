// Restart in place under Slurm: the control.log protocol and srun's words on a step's end
// (slurm_control.h).
#include "trainyard/executor/slurm_control.h"

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "protocol_private.h"
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

std::string SlurmMetricFile(const std::string& work_dir, int attempt) {
  return work_dir + "/" + kMetricDir + "/attempt-" + std::to_string(std::max(attempt, 0)) +
         "/output.metrics";
}

std::string SlurmMetricFileToRead(const std::string& work_dir, int attempt,
                                  const std::string& spec_value) {
  const std::string shared = work_dir + "/" + kMetricFile;
  return spec_value == shared ? shared : SlurmMetricFile(work_dir, attempt);
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

namespace {

// The long flags Trainyard's batch script sets, or that would change what it is (sbatch's own
// behaviour, an array, a wrapped command): slurm.extra_sbatch_args may not give them.
const std::set<std::string_view>& TrainyardsLongFlags() {
  static const std::set<std::string_view> kFlags = {"--job-name",
                                                    "--output",
                                                    "--error",
                                                    "--signal",
                                                    "--requeue",
                                                    "--no-requeue",
                                                    "--export",
                                                    "--ntasks",
                                                    "--cpus-per-task",
                                                    "--mem",
                                                    "--mem-per-cpu",
                                                    "--gpus",
                                                    "--gres",
                                                    "--gpus-per-task",
                                                    "--time",
                                                    "--open-mode",
                                                    "--wait-all-nodes",
                                                    "--ntasks-per-node",
                                                    "--nodes",
                                                    "--array",
                                                    "--partition",
                                                    "--account",
                                                    "--qos",
                                                    "--hetjob",
                                                    "--mem-per-gpu",
                                                    "--cpus-per-gpu",
                                                    "--gpus-per-node",
                                                    "--gpus-per-socket",
                                                    "--ntasks-per-gpu",
                                                    "--ntasks-per-core",
                                                    "--ntasks-per-socket",
                                                    "--wrap",
                                                    "--parsable",
                                                    "--test-only",
                                                    "--wait",
                                                    "--input"};
  return kFlags;
}

// sbatch 22.05's short flags (slurm_opt.c's table, the ones sbatch takes): which take a value
// ('r' required, 'o' optional, 'n' none), and which of them Trainyard sets.
char ShortFlagArgument(char c) {
  switch (c) {
    case 'A':
    case 'B':
    case 'C':
    case 'D':
    case 'F':
    case 'G':
    case 'J':
    case 'L':
    case 'M':
    case 'N':
    case 'S':
    case 'a':
    case 'b':
    case 'c':
    case 'd':
    case 'e':
    case 'i':
    case 'm':
    case 'n':
    case 'o':
    case 'p':
    case 'q':
    case 't':
    case 'w':
    case 'x':
      return 'r';
    case 'k':
      return 'o';
    case 'H':
    case 'O':
    case 'Q':
    case 'V':
    case 'W':
    case 'h':
    case 's':
    case 'v':
      return 'n';
    default:
      return 0;  // not an sbatch flag
  }
}
constexpr std::string_view kTrainyardsShortFlags = "JoenNcGtapAqWi";

// A long flag ("--name", no value) as getopt_long takes it: exactly, or abbreviated.
bool LongFlagIsTrainyards(std::string_view name) {
  const auto& flags = TrainyardsLongFlags();
  if (flags.count(name) != 0) return true;
  if (name.size() < 3) return false;
  return std::any_of(flags.begin(), flags.end(),
                     [&](std::string_view f) { return f.substr(0, name.size()) == name; });
}

}  // namespace

std::string SbatchExtraArgsProblem(std::string_view line) {
  for (char c : line) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
      return "\"" + std::string(line) + "\" holds a line break or a control character";
    }
  }
  // The words, as sbatch's get_argument splits an #SBATCH line.
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size() || line[i] == '#') break;
    std::string word;
    char quote = 0;
    for (; i < line.size() && (quote != 0 || (line[i] != ' ' && line[i] != '\t')); ++i) {
      const char c = line[i];
      if (c == '\\' && i + 1 < line.size()) {
        word += line[++i];
      } else if (quote != 0) {
        if (c == quote) {
          quote = 0;
        } else {
          word += c;
        }
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '#') {
        break;  // the rest of the line is a comment
      } else {
        word += c;
      }
    }
    if (quote != 0) return "\"" + std::string(line) + "\" has an unmatched " + quote;
    words.push_back(std::move(word));
    if (i < line.size() && line[i] == '#') break;
  }
  const std::string in = " (in \"" + std::string(line) + "\")";
  bool value_may_follow = false;  // the word before may take this one as its value
  for (const std::string& w : words) {
    std::string lower = w;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "hetjob" || lower == "packjob") {
      return "\"" + w + "\" separates heterogeneous job components, which Trainyard sets" + in;
    }
    if (StartsWith(w, "--") && w.size() > 2) {
      const size_t eq = w.find('=');
      const std::string name = w.substr(0, eq);
      if (LongFlagIsTrainyards(name))
        return name + " is set by Trainyard and cannot be given here" + in;
      value_may_follow = eq == std::string::npos;
      continue;
    }
    if (StartsWith(w, "-") && w.size() > 1 && w != "--") {
      value_may_follow = false;
      for (size_t k = 1; k < w.size(); ++k) {
        const char c = w[k];
        const char arg = ShortFlagArgument(c);
        if (arg == 0) return "-" + std::string(1, c) + " is not an sbatch flag" + in;
        if (kTrainyardsShortFlags.find(c) != std::string_view::npos) {
          return "-" + std::string(1, c) + " is set by Trainyard and cannot be given here" + in;
        }
        if (arg == 'n') continue;
        // A flag taking a value ends the bundle: the rest is its value, else (required) the
        // next word is.
        if (arg == 'r' && k + 1 == w.size()) {
          if (&w == &words.back()) {
            return "-" + std::string(1, c) + " needs its value in the same entry" + in;
          }
          value_may_follow = true;
        }
        break;
      }
      continue;
    }
    if (!value_may_follow) return "\"" + w + "\" is not an sbatch flag" + in;
    value_may_follow = false;
  }
  return "";
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
