// `trainyard gcloud-config`: the gcloud named configuration and the gsutil boto file that point
// Google's own clients at a Trainyard daemon (docs/gcloud.md). The pure parts live here so they
// can be tested without touching a real gcloud config directory.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/gcloud/gcloud_settings.h"

namespace trainyard::cli {

// Where native gsutil finds the daemon's TLS listener unless --tls-endpoint or
// TRAINYARD_TLS_ENDPOINT say otherwise (the daemon's `tls_listen` example port).
inline constexpr char kDefaultTlsEndpoint[] = "https://127.0.0.1:8471";
inline constexpr char kDefaultGcloudConfigName[] = "trainyard";

// The INI helpers and the settings themselves are shared with the launcher (ty_gcloud).
using gcloud::Ini;
using gcloud::IniSection;
using gcloud::MergeIni;
using gcloud::NormalizeEndpoint;
using gcloud::ParseIni;
using gcloud::RenderIni;

struct GcloudSetup {
  std::string name = kDefaultGcloudConfigName;  // gcloud configuration name
  std::string endpoint;                         // daemon URL, normalised by NormalizeEndpoint
  std::string tls_host;                         // from the TLS endpoint
  std::string tls_port;
  std::string project;
  std::string region;
  std::string config_dir;  // gcloud's config directory (CLOUDSDK_CONFIG)
  std::string account;     // the token's principal ("" = no token or authentication off)
};

// gcloud's rule for configuration names: a lowercase letter, then lowercase letters, digits and
// dashes.
bool IsValidGcloudConfigName(std::string_view name);
// "https://HOST:PORT" -> {HOST, PORT}. gsutil hard-codes https and has no base path, so any other
// scheme, a path or a missing port is refused with a message saying why.
Result<std::pair<std::string, std::string>> ParseTlsEndpoint(std::string_view endpoint);
// $CLOUDSDK_CONFIG, else $HOME/.config/gcloud (gcloud's own rule on Linux and macOS).
Result<std::string> GcloudConfigDirFromEnvironment();

// <config_dir>/configurations/config_<name>
std::string GcloudConfigFilePath(const GcloudSetup& setup);
// <config_dir>/<name>.access_token
std::string GcloudTokenFilePath(const GcloudSetup& setup);
// <config_dir>/<name>.boto
std::string BotoFilePath(const GcloudSetup& setup);

// The gcloud properties of the configuration: endpoint overrides for ml, storage and logging,
// project, region, the access token file, and no usage reporting, update checks or surveys.
Ini GcloudProperties(const GcloudSetup& setup);
// The boto settings for native gsutil: JSON (and XML, so nothing falls back to Google) API host
// and port of the TLS listener, no certificate validation, the project.
Ini BotoSettings(const GcloudSetup& setup);

}  // namespace trainyard::cli
