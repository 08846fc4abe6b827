#include "trainer_env.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "trainyard/core/util.h"
#include "trainyard/gcloud/gcloud_settings.h"

namespace trainyard::launcher {

namespace fs = std::filesystem;

const std::vector<std::string>& DefaultHostAllowlist() {
  static const std::vector<std::string> kList = {
      "PATH",     "HOME", "USER", "LOGNAME", "SHELL",           "HOSTNAME",      "LANG",
      "LANGUAGE", "LC_*", "TZ",   "TMPDIR",  "LD_LIBRARY_PATH", "SSL_CERT_FILE", "SSL_CERT_DIR"};
  return kList;
}

std::vector<std::string> ParseAllowlist(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool Allowed(std::string_view name, const std::vector<std::string>& allowlist) {
  for (const std::string& entry : allowlist) {
    if (!entry.empty() && entry.back() == '*') {
      if (name.starts_with(std::string_view(entry).substr(0, entry.size() - 1))) return true;
    } else if (name == entry) {
      return true;
    }
  }
  return false;
}

EnvMap ToEnvMap(const std::vector<std::string>& lines) {
  EnvMap env;
  for (const std::string& kv : lines) {
    size_t eq = kv.find('=');
    if (eq != std::string::npos && eq > 0) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::vector<std::string> ToEnvLines(const EnvMap& env) {
  std::vector<std::string> lines;
  lines.reserve(env.size());
  for (const auto& [k, v] : env) lines.push_back(k + "=" + v);
  return lines;
}

EnvMap HostEnvironment(const EnvMap& launcher_env, const std::vector<std::string>& extra) {
  std::vector<std::string> allow = DefaultHostAllowlist();
  if (auto it = launcher_env.find(kAllowEnvVar); it != launcher_env.end()) {
    for (std::string& e : ParseAllowlist(it->second)) allow.push_back(std::move(e));
  }
  allow.insert(allow.end(), extra.begin(), extra.end());
  EnvMap out;
  for (const auto& [k, v] : launcher_env) {
    if (Allowed(k, allow)) out[k] = v;
  }
  return out;
}

EnvMap StorageClientEnvironment(const EnvMap& spec_env, const std::string& work_dir,
                                StorageClientFiles* files) {
  auto host = spec_env.find("STORAGE_EMULATOR_HOST");
  if (host == spec_env.end() || host->second.empty()) return {};
  auto endpoint = gcloud::NormalizeEndpoint(host->second);
  if (!endpoint.ok()) return {};
  std::string project = "default";
  if (auto p = spec_env.find("CLOUD_ML_PROJECT_ID"); p != spec_env.end() && !p->second.empty()) {
    project = p->second;
  }
  StorageClientFiles f;
  f.dir = work_dir + "/cloudsdk";
  f.config_dir = f.dir + "/config";
  f.boto_file = f.dir + "/boto";
  f.boto_text = gcloud::RenderIni(gcloud::TrainerBotoSettings(project));
  // With authentication on, the job's credential (TRAINYARD_JOB_TOKEN, docs/security.md) goes
  // to gcloud, and through it to gsutil's gcloud storage shim.
  std::string account;
  if (auto t = spec_env.find("TRAINYARD_JOB_TOKEN"); t != spec_env.end() && !t->second.empty()) {
    f.token_file = f.dir + "/access_token";
    f.token_text = t->second + "\n";
    account = "job@" + project + ".trainyard.local";
  }
  EnvMap env = gcloud::PropertiesAsEnvironment(
      gcloud::TrainerGcloudProperties(*endpoint, project, f.token_file, account));
  // A private configuration directory: gcloud writes its logs and caches there, and never
  // reads the host user's accounts or active configuration.
  env["CLOUDSDK_CONFIG"] = f.config_dir;
  env["BOTO_CONFIG"] = f.boto_file;
  // google-cloud-storage uses STORAGE_EMULATOR_HOST (anonymous credentials) and this project.
  env["GOOGLE_CLOUD_PROJECT"] = project;
  if (files != nullptr) *files = std::move(f);
  return env;
}

EnvMap TrainerEnvironment(const EnvMap& launcher_env, const EnvMap& defaults,
                          const EnvMap& spec_env) {
  EnvMap env = defaults;
  for (auto& [k, v] : HostEnvironment(launcher_env)) env[k] = std::move(v);
  for (const auto& [k, v] : spec_env) env[k] = v;
  return env;
}

std::vector<std::string> RelativeGsFiles(const std::string& cwd, size_t max, size_t* total) {
  std::vector<std::string> files;
  size_t count = 0;
  const fs::path root = fs::path(cwd) / "gs:";
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(root, ec))) {
    if (total != nullptr) *total = 0;
    return files;
  }
  std::vector<std::string> all;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    ++count;
    if (all.size() < 10000) all.push_back(fs::relative(it->path(), cwd, ec).string());
  }
  std::sort(all.begin(), all.end());
  if (all.size() > max) all.resize(max);
  files = std::move(all);
  if (total != nullptr) *total = count;
  return files;
}

std::string RelativeGsWarning(const std::string& cwd, const std::vector<std::string>& files,
                              size_t total) {
  if (files.empty()) return "";
  std::string list;
  for (const std::string& f : files) list += (list.empty() ? "" : ", ") + f;
  if (total > files.size()) list += " and " + std::to_string(total - files.size()) + " more";
  return "The trainer wrote " + std::to_string(total) + " file" + (total == 1 ? "" : "s") +
         " into the relative directory gs: of its working directory " + cwd +
         ", not to Cloud Storage: " + list +
         ". A gs:// path given to a file API that does not know gs:// (open, os, torch.save, "
         "joblib.dump) becomes a local path; write to /gcs/BUCKET/PATH or copy the files with "
         "gsutil cp.";
}

std::string LocalJobDirFromCloudMlJob(std::string_view cloud_ml_job) {
  nlohmann::json j = nlohmann::json::parse(cloud_ml_job, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "";
  auto it = j.find("job_dir");
  if (it == j.end() || !it->is_string()) return "";
  std::string dir = it->get<std::string>();
  if (dir.starts_with("file://")) {
    auto decoded = PercentDecode(std::string_view(dir).substr(7));
    if (!decoded.ok()) return "";
    dir = *decoded;
  }
  if (dir.empty() || dir[0] != '/') return "";
  dir = fs::path(dir).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace trainyard::launcher
