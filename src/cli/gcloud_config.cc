// gcloud-config: gcloud configuration and boto file for Google's clients (docs/gcloud.md).
#include "gcloud_config.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

#include "commands.h"
#include "trainyard/core/util.h"

namespace trainyard::cli {

namespace fs = std::filesystem;

namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// Writes a file only its owner can read: core's atomic writer under a 077 umask (the CLI is
// single-threaded, so changing the process umask for the call is safe).
Status WriteOwnerOnlyFile(const std::string& path, std::string_view data) {
  mode_t old = ::umask(077);
  Status st = WriteFileAtomic(path, data);
  ::umask(old);
  if (st.ok() && ::chmod(path.c_str(), 0600) != 0) {
    return Status(StatusCode::kInternal, "cannot chmod " + path + ": " + std::strerror(errno));
  }
  return st;
}

// Merges updates into the INI file at path (created when missing) and writes it back.
Status MergeIntoFile(const std::string& path, const Ini& updates) {
  Ini base;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    auto text = ReadFile(path);
    if (!text.ok()) return text.status();
    base = ParseIni(*text);
  }
  return WriteFileAtomic(path, RenderIni(MergeIni(std::move(base), updates)));
}

}  // namespace

// --- settings ----------------------------------------------------------------------------

bool IsValidGcloudConfigName(std::string_view name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

Result<std::pair<std::string, std::string>> ParseTlsEndpoint(std::string_view endpoint) {
  std::string e = Trim(endpoint);
  auto bad = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument,
                  "TLS endpoint [" + std::string(endpoint) + "] " + why);
  };
  if (!StartsWith(e, "https://")) {
    return bad("must be https://HOST:PORT: gsutil talks to its JSON API over https only");
  }
  std::string rest = e.substr(8);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) {
    return bad("must not have a path: gsutil cannot use a base path");
  }
  size_t colon = rest.rfind(':');
  std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  std::string port = colon == std::string::npos ? "" : rest.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return bad("has no host");
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) == 0 ||
      std::stoi(port) > 65535) {
    return bad("needs a port (https://HOST:PORT)");
  }
  return std::make_pair(host, port);
}

Result<std::string> GcloudConfigDirFromEnvironment() {
  std::string dir = EnvOr("CLOUDSDK_CONFIG", "");
  if (!dir.empty()) return dir;
  std::string home = EnvOr("HOME", "");
  if (home.empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "neither CLOUDSDK_CONFIG nor HOME is set: cannot find gcloud's configuration "
                  "directory");
  }
  return (fs::path(home) / ".config" / "gcloud").string();
}

std::string GcloudConfigFilePath(const GcloudSetup& setup) {
  return (fs::path(setup.config_dir) / "configurations" / ("config_" + setup.name)).string();
}

std::string GcloudTokenFilePath(const GcloudSetup& setup) {
  return (fs::path(setup.config_dir) / (setup.name + ".access_token")).string();
}

std::string BotoFilePath(const GcloudSetup& setup) {
  return (fs::path(setup.config_dir) / (setup.name + ".boto")).string();
}

namespace {

gcloud::GcloudSetup Shared(const GcloudSetup& s) {
  gcloud::GcloudSetup g;
  g.name = s.name;
  g.endpoint = s.endpoint;
  g.tls_host = s.tls_host;
  g.tls_port = s.tls_port;
  g.project = s.project;
  g.region = s.region;
  g.token_file = GcloudTokenFilePath(s);
  g.account = s.account;
  return g;
}

}  // namespace

Ini GcloudProperties(const GcloudSetup& s) { return gcloud::GcloudProperties(Shared(s)); }

Ini BotoSettings(const GcloudSetup& s) { return gcloud::BotoSettings(Shared(s)); }

// --- the command -------------------------------------------------------------------------

int RunGcloudConfig(const Invocation& inv, const GcloudConfigArgs& a) {
  GcloudSetup s;
  if (a.name) s.name = *a.name;
  if (!IsValidGcloudConfigName(s.name)) {
    return inv.Fail("argument --name: Invalid configuration name [" + s.name +
                    "]. Names must start with a lowercase letter and contain only lowercase "
                    "letters, digits and dashes");
  }
  client::ClientOptions options = inv.ResolvedClientOptions();
  auto endpoint = NormalizeEndpoint(options.endpoint);
  if (!endpoint.ok()) return inv.Fail(endpoint.status().message());
  s.endpoint = *endpoint;
  auto tls = ParseTlsEndpoint(
      a.tls_endpoint ? *a.tls_endpoint : EnvOr("TRAINYARD_TLS_ENDPOINT", kDefaultTlsEndpoint));
  if (!tls.ok()) return inv.Fail(tls.status().message());
  s.tls_host = tls->first;
  s.tls_port = tls->second;
  s.project = options.project;
  s.region = a.region ? *a.region : EnvOr("TRAINYARD_REGION", "us-central1");
  auto dir = GcloudConfigDirFromEnvironment();
  if (!dir.ok()) return inv.Fail(dir.status().message());
  s.config_dir = *dir;
  if (!options.token.empty()) {
    // The token's principal becomes gcloud's account (docs/gcloud.md, "Authentication").
    auto who = inv.MakeClient()->CallJson("GET", "/v1/whoami");
    if (who.ok()) {
      auto j = nlohmann::json::parse(*who, nullptr, false);
      if (j.is_object() && j.contains("email") && j["email"].is_string()) {
        s.account = j["email"].get<std::string>();
      }
    } else if (!client::IsConnectionError(who.status())) {
      inv.Warn("The daemon refused the API token (" + who.status().ToString() +
               "): gcloud will be refused too.");
    }
  }

  const std::string config_file = GcloudConfigFilePath(s);
  const std::string token_file = GcloudTokenFilePath(s);
  const std::string boto_file = BotoFilePath(s);

  if (!a.apply) {
    inv.Out() << "# gcloud configuration [" << s.name << "]: " << config_file << "\n"
              << RenderIni(GcloudProperties(s)) << "\n"
              << "# gsutil boto config: " << boto_file << " (export BOTO_CONFIG=" << boto_file
              << ")\n"
              << RenderIni(BotoSettings(s)) << "\n"
              << "# access token file (the API token from --token-file, TRAINYARD_TOKEN or the "
                 "CLI config file): "
              << token_file << "\n";
    inv.Err() << "Run `trainyard gcloud-config --apply` to write these files"
              << (a.activate ? "" : " (add --activate to make the configuration active)") << ".\n";
    return kExitOk;
  }

  Status st = MakeDirs((fs::path(s.config_dir) / "configurations").string());
  if (!st.ok()) return inv.Fail(st.message());
  // gcloud creates an empty `default` configuration the first time it runs in a directory with
  // none (migrating a legacy `properties` file into it). Do the same, so that switching back
  // with `gcloud config configurations activate default` works in a fresh directory.
  std::error_code ec;
  fs::path default_config = fs::path(s.config_dir) / "configurations" / "config_default";
  if (s.name != "default" && !fs::exists(default_config, ec) &&
      !fs::exists(fs::path(s.config_dir) / "properties", ec)) {
    st = WriteFileAtomic(default_config.string(), "");
    if (!st.ok()) return inv.Fail(st.message());
  }
  // The token gcloud sends as `Authorization: Bearer` (auth/access_token_file): the CLI's own
  // credential; without one, a placeholder only a daemon with authentication off accepts.
  std::string token = options.token.empty() ? "trainyard" : options.token;
  if (options.token.empty()) {
    inv.Warn("No API token (--token-file, TRAINYARD_TOKEN or token_file in " + CliConfigPath() +
             "): gcloud will send a placeholder, which a daemon with authentication on refuses.");
  }
  st = WriteOwnerOnlyFile(token_file, token + "\n");
  if (!st.ok()) return inv.Fail(st.message());
  st = MergeIntoFile(config_file, GcloudProperties(s));
  if (!st.ok()) return inv.Fail(st.message());
  st = MergeIntoFile(boto_file, BotoSettings(s));
  if (!st.ok()) return inv.Fail(st.message());
  inv.Err() << "Wrote gcloud configuration [" << s.name << "] to " << config_file << ".\n"
            << "Wrote the gsutil boto config to " << boto_file << ".\n"
            << "Wrote the access token file " << token_file << ".\n";
  if (a.activate) {
    st = WriteFileAtomic((fs::path(s.config_dir) / "active_config").string(), s.name);
    if (!st.ok()) return inv.Fail(st.message());
    inv.Err() << "Activated [" << s.name << "].\n";
  }
  inv.Err() << "\nUse it with:\n";
  if (!a.activate) inv.Err() << "  gcloud config configurations activate " << s.name << "\n";
  inv.Err() << "  export BOTO_CONFIG=" << boto_file << "\n"
            << "gcloud talks to " << s.endpoint << ", gsutil to https://" << s.tls_host << ":"
            << s.tls_port << " (the daemon's tls_listen).\n"
            << "Switch back with:\n"
            << "  gcloud config configurations activate default && unset BOTO_CONFIG\n";
  return kExitOk;
}

}  // namespace trainyard::cli
