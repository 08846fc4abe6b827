// The settings that point Google's own clients at a Trainyard daemon: gcloud properties
// (`api_endpoint_overrides/...`, project, ...) and gsutil's boto file. One place for this
// knowledge, used by `trainyard gcloud-config` (a user's named configuration, docs/gcloud.md)
// and by the launcher (every replica's gcloud and gsutil, docs/writing-a-trainer.md).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::gcloud {

// An INI file as gcloud (configparser) and boto read it: sections in order, keys in order.
struct IniSection {
  std::string name;
  std::vector<std::pair<std::string, std::string>> entries;
};
using Ini = std::vector<IniSection>;

// Lenient parse: comments (`#`, `;`) and lines that are neither sections nor `key = value` are
// dropped; keys before any section are dropped.
Ini ParseIni(std::string_view text);
// `[section]` blocks separated by blank lines, `key = value` lines.
std::string RenderIni(const Ini& ini);
// base with every key of updates set (existing keys keep their place; new ones are appended).
Ini MergeIni(Ini base, const Ini& updates);

// "host:port" -> "http://host:port"; drops trailing '/'. Refuses non-http(s) schemes and an
// empty host.
Result<std::string> NormalizeEndpoint(std::string_view endpoint);

// The [api_endpoint_overrides] section for a daemon at `endpoint` (normalised, no trailing
// '/'): ml, storage and logging. The generated clients append their relative paths to these:
// `v1/projects/...` (ml), `b/...` (storage; uploads and downloads swap `/storage/v1/` for
// `/upload/storage/v1/` and `/download/storage/v1/`), `v2/entries:list` (logging).
IniSection EndpointOverrides(std::string_view endpoint);

// What a user's named configuration needs (`trainyard gcloud-config`).
struct GcloudSetup {
  std::string name;      // gcloud configuration name
  std::string endpoint;  // daemon URL, normalised by NormalizeEndpoint
  std::string tls_host;  // from the TLS endpoint
  std::string tls_port;
  std::string project;
  std::string region;
  std::string token_file;  // auth/access_token_file
  // The principal the token belongs to, "" when there is no token. With one, gcloud gets it as
  // core/account and gsutil runs through `gcloud storage` (use_gcloud_storage), because native
  // gsutil cannot send a static token; gcloud storage sends the token file's.
  std::string account;
};

// The gcloud properties of a user's configuration: endpoint overrides for ml, storage and
// logging, project, region, the access token file, and no usage reporting, update checks or
// surveys.
Ini GcloudProperties(const GcloudSetup& setup);
// The boto settings for native gsutil: JSON (and XML, so nothing falls back to Google) API host
// and port of the TLS listener, no certificate validation, the project.
Ini BotoSettings(const GcloudSetup& setup);

// gcloud inside a replica: the endpoint overrides, the project, and no credentials at all
// (`auth/disable_credentials`: requests go without Authorization, and gcloud never asks for
// an account), no GCE metadata probe, no usage reporting, update checks or prompts.
// With `token_file` (the job's credential, docs/security.md): gcloud sends it instead, as
// `account`, and passes it to gsutil's gcloud storage shim.
Ini TrainerGcloudProperties(std::string_view endpoint, std::string_view project,
                            std::string_view token_file = "", std::string_view account = "");
// gsutil inside a replica: gsutil runs its commands through `gcloud storage` (its "shim"), so
// it uses gcloud's plain-http storage override and needs no TLS listener. No gs_json_host: the
// shim would turn it into an https override of its own (without the trailing '/' gcloud
// requires) that replaces gcloud's.
Ini TrainerBotoSettings(std::string_view project);
// Each property as the environment variable gcloud reads before any configuration file:
// CLOUDSDK_<SECTION>_<PROPERTY>, upper case (`api_endpoint_overrides/storage` ->
// CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE).
std::map<std::string, std::string> PropertiesAsEnvironment(const Ini& properties);

}  // namespace trainyard::gcloud
