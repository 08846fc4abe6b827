// What every command handler gets: where to write, the global flags, how the command was
// invoked (for gcloud-style error prefixes and follow-up hints), and a client factory.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "trainyard/client/client.h"
#include "trainyard/core/status.h"

namespace trainyard::cli {

// Exit statuses (docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

struct GlobalFlags {
  std::string endpoint;    // "" = environment / config file / default
  std::string project;     // "" = environment / config file / default
  std::string token;       // "" = --token-file, environment, config file
  std::string token_file;  // first line is the API token
  bool quiet = false;
};

struct Invocation {
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  bool err_is_tty = false;
  GlobalFlags globals;
  // "trainyard.ai-platform.jobs.describe" (the ERROR prefix) and "trainyard ai-platform" (the
  // group the user typed, reused in follow-up hints).
  std::string command_path;
  std::string user_prefix;
  // Everything after a literal `--`.
  bool has_user_args = false;
  std::vector<std::string> user_args;

  std::ostream& Out() const { return *out; }
  std::ostream& Err() const { return *err; }

  client::ClientOptions ResolvedClientOptions() const;
  std::unique_ptr<client::Client> MakeClient() const;

  // Prints `ERROR: (command.path) message` and returns kExitError.
  int Fail(const std::string& message) const;
  // Prints a Status: API errors as `STATUS: message`, connection errors as their message.
  int Fail(const Status& status) const;
  // Prints `WARNING: message`.
  void Warn(const std::string& message) const;
  // "--project P" when the project came from the flag, for hints.
  std::string ProjectHint() const;
};

}  // namespace trainyard::cli
