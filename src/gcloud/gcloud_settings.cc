#include "trainyard/gcloud/gcloud_settings.h"

#include <cctype>

#include "trainyard/core/util.h"

namespace trainyard::gcloud {

// --- INI ---------------------------------------------------------------------------------

Ini ParseIni(std::string_view text) {
  Ini ini;
  for (const std::string& raw : Split(text, '\n')) {
    std::string line = Trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      ini.push_back(IniSection{Trim(std::string_view(line).substr(1, line.size() - 2)), {}});
      continue;
    }
    size_t eq = line.find_first_of("=:");
    if (eq == std::string::npos || ini.empty()) continue;
    std::string key = Trim(std::string_view(line).substr(0, eq));
    if (key.empty()) continue;
    ini.back().entries.emplace_back(key, Trim(std::string_view(line).substr(eq + 1)));
  }
  return ini;
}

std::string RenderIni(const Ini& ini) {
  std::string out;
  for (const IniSection& section : ini) {
    if (!out.empty()) out += "\n";
    out += "[" + section.name + "]\n";
    for (const auto& [key, value] : section.entries) out += key + " = " + value + "\n";
  }
  return out;
}

Ini MergeIni(Ini base, const Ini& updates) {
  for (const IniSection& update : updates) {
    IniSection* target = nullptr;
    for (IniSection& s : base) {
      if (s.name == update.name) target = &s;
    }
    if (target == nullptr) {
      base.push_back(IniSection{update.name, {}});
      target = &base.back();
    }
    for (const auto& [key, value] : update.entries) {
      bool found = false;
      for (auto& entry : target->entries) {
        if (entry.first == key) {
          entry.second = value;
          found = true;
        }
      }
      if (!found) target->entries.emplace_back(key, value);
    }
  }
  return base;
}

// --- settings ----------------------------------------------------------------------------

Result<std::string> NormalizeEndpoint(std::string_view endpoint) {
  std::string e = Trim(endpoint);
  if (e.find("://") == std::string::npos) e = "http://" + e;
  if (!StartsWith(e, "http://") && !StartsWith(e, "https://")) {
    return Status(StatusCode::kInvalidArgument,
                  "endpoint [" + std::string(endpoint) + "] must be an http:// or https:// URL");
  }
  while (!e.empty() && e.back() == '/') e.pop_back();
  size_t host_start = e.find("://") + 3;
  if (host_start >= e.size() || e[host_start] == '/' || e[host_start] == ':') {
    return Status(StatusCode::kInvalidArgument,
                  "endpoint [" + std::string(endpoint) + "] has no host");
  }
  return e;
}

IniSection EndpointOverrides(std::string_view endpoint) {
  const std::string e(endpoint);
  // gcloud refuses an override without its trailing '/'.
  return {"api_endpoint_overrides",
          {{"ml", e + "/"}, {"storage", e + "/storage/v1/"}, {"logging", e + "/"}}};
}

Ini GcloudProperties(const GcloudSetup& s) {
  IniSection core = {"core",
                     {{"project", s.project},
                      {"disable_usage_reporting", "True"},
                      {"pass_credentials_to_gsutil", s.account.empty() ? "False" : "True"}}};
  if (!s.account.empty()) {
    core.entries.push_back({"account", s.account});
    // No GCE metadata probe when gcloud wraps gsutil (a network round trip off GCE).
    core.entries.push_back({"check_gce_metadata", "False"});
  }
  return {
      core,
      {"compute", {{"region", s.region}}},
      // Only models, versions and operations read this; a region there makes gcloud prefix the
      // endpoint's host with "REGION-" (us-central1-127.0.0.1), which cannot resolve. Jobs use
      // compute/region.
      {"ai_platform", {{"region", "global"}}},
      {"ml_engine", {{"polling_interval", "1"}}},
      {"auth", {{"access_token_file", s.token_file}}},
      {"component_manager", {{"disable_update_check", "True"}}},
      {"survey", {{"disable_prompts", "True"}}},
      EndpointOverrides(s.endpoint),
  };
}

Ini BotoSettings(const GcloudSetup& s) {
  Ini ini;
  if (s.account.empty()) {
    // gs_host/gs_port: the XML API, which gsutil falls back to for a few operations. The
    // daemon has none, but pointing it there keeps such calls local instead of sending them
    // to Google.
    ini.push_back({"Credentials",
                   {{"gs_json_host", s.tls_host},
                    {"gs_json_port", s.tls_port},
                    {"gs_host", s.tls_host},
                    {"gs_port", s.tls_port}}});
  }
  // With a token, gsutil runs through `gcloud storage` (the shim), which uses gcloud's plain
  // http storage override and token file; a gs_json_host would make the shim replace that
  // override with an https one of its own (as in TrainerBotoSettings).
  ini.push_back({"Boto", {{"https_validate_certificates", "False"}}});
  ini.push_back({"GSUtil",
                 {{"default_project_id", s.project},
                  {"prefer_api", "json"},
                  {"use_gcloud_storage", s.account.empty() ? "False" : "True"},
                  {"software_update_check_period", "0"}}});
  return ini;
}

Ini TrainerGcloudProperties(std::string_view endpoint, std::string_view project,
                            std::string_view token_file, std::string_view account) {
  const bool token = !token_file.empty();
  IniSection core = {"core",
                     {{"project", std::string(project)},
                      {"disable_usage_reporting", "True"},
                      // Without this gcloud asks the GCE metadata server whether it runs on
                      // Google's cloud (a network round trip that can take seconds off GCE).
                      {"check_gce_metadata", "False"},
                      {"pass_credentials_to_gsutil", token ? "True" : "False"}}};
  if (token) core.entries.push_back({"account", std::string(account)});
  return {
      core,
      token ? IniSection{"auth", {{"access_token_file", std::string(token_file)}}}
            : IniSection{"auth", {{"disable_credentials", "True"}}},
      {"component_manager", {{"disable_update_check", "True"}}},
      {"survey", {{"disable_prompts", "True"}}},
      EndpointOverrides(endpoint),
  };
}

Ini TrainerBotoSettings(std::string_view project) {
  return {
      {"GSUtil",
       {{"use_gcloud_storage", "True"},
        {"prefer_api", "json"},
        {"default_project_id", std::string(project)},
        {"software_update_check_period", "0"}}},
  };
}

std::map<std::string, std::string> PropertiesAsEnvironment(const Ini& properties) {
  std::map<std::string, std::string> env;
  auto upper = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  };
  for (const IniSection& section : properties) {
    for (const auto& [key, value] : section.entries) {
      env["CLOUDSDK_" + upper(section.name) + "_" + upper(key)] = value;
    }
  }
  return env;
}

}  // namespace trainyard::gcloud
