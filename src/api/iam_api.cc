#include "iam_api.h"

#include <httplib.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "trainyard/core/hash.h"
#include "trainyard/core/time.h"

namespace trainyard::api {

using nlohmann::json;

namespace {

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void Send(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(Dump(body), "application/json; charset=UTF-8");
}

// gcloud's regional endpoints (compat §13.1).
constexpr std::string_view kRegions[] = {
    "asia-east1",   "asia-northeast1", "asia-southeast1", "australia-southeast1",    "europe-west1",
    "europe-west2", "europe-west3",    "europe-west4",    "northamerica-northeast1", "us-central1",
    "us-east1",     "us-east4",        "us-west1"};

// A stable 12-digit project number for a project id (Trainyard has no project registry).
uint64_t ProjectNumber(std::string_view project) {
  return 100000000000ULL + Fnv1a(project, kFnv1aLegacyBasis) % 900000000000ULL;
}

json LocationOf(std::string_view project, std::string_view region,
                std::span<const std::string> accelerators) {
  json cap = {{"type", "TRAINING"}};
  std::set<std::string> types(accelerators.begin(), accelerators.end());
  if (!types.empty()) cap["availableAccelerators"] = json(types);
  return {{"name", "projects/" + std::string(project) + "/locations/" + std::string(region)},
          {"capabilities", json::array({cap})}};
}

}  // namespace

std::string BearerToken(const httplib::Request& req) {
  std::string auth = req.get_header_value("Authorization");
  if (!auth.empty()) {
    if (auth.size() > 7 &&
        (auth.compare(0, 7, "Bearer ") == 0 || auth.compare(0, 7, "bearer ") == 0)) {
      std::string t = auth.substr(7);
      while (!t.empty() && t.front() == ' ') t.erase(0, 1);
      while (!t.empty() && (t.back() == ' ' || t.back() == '\r' || t.back() == '\n')) t.pop_back();
      return t.empty() ? std::string(" ") : t;  // "Bearer " alone: present but malformed
    }
    return " ";  // another scheme (Basic, ...): present but not a bearer token
  }
  if (req.has_param("access_token")) return req.get_param_value("access_token");
  if (req.has_param("oauth_token")) return req.get_param_value("oauth_token");
  return "";
}

std::string SessionCookieToken(const httplib::Request& req) {
  // Cookie: a=1; ty_console_session=ty1....; b=2 (several Cookie headers are allowed too).
  const std::string name = std::string(kSessionCookie) + "=";
  for (auto [it, end] = req.headers.equal_range("Cookie"); it != end; ++it) {
    std::string_view rest = it->second;
    while (!rest.empty()) {
      size_t semi = rest.find(';');
      std::string_view pair = rest.substr(0, semi);
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
      if (pair.substr(0, name.size()) == name) {
        std::string_view value = pair.substr(name.size());
        while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
        if (!value.empty()) return std::string(value.substr(0, kMaxCredentialBytes));
      }
    }
  }
  return "";
}

bool SessionCookieUsable(const httplib::Request& req) {
  if (req.method == "GET" || req.method == "HEAD") return true;
  if (req.get_header_value(kConsoleHeader) != "1") return false;
  if (!req.has_header("Origin")) return true;
  const std::string origin = req.get_header_value("Origin");
  const std::string host = req.get_header_value("Host");
  return !host.empty() && (origin == "http://" + host || origin == "https://" + host);
}

std::string SessionCookie(std::string_view token, int64_t max_age_s, bool secure) {
  std::string c = std::string(kSessionCookie) + "=" + std::string(token) +
                  "; Path=/; Max-Age=" + std::to_string(max_age_s) + "; HttpOnly; SameSite=Strict";
  if (secure) c += "; Secure";
  return c;
}

void WriteUnauthenticated(httplib::Response& res, const std::string& message, bool storage,
                          std::string_view permission) {
  res.set_header("WWW-Authenticate", "Bearer realm=\"trainyard\"");
  if (storage) {
    std::string m = "Anonymous caller does not have " + std::string(permission) +
                    " access to the Google Cloud Storage resource. " + message;
    Send(res, 401,
         {{"error",
           {{"code", 401},
            {"message", m},
            {"errors", json::array({{{"message", m},
                                     {"domain", "global"},
                                     {"reason", "required"},
                                     {"locationType", "header"},
                                     {"location", "Authorization"}}})}}}});
    return;
  }
  Send(res, 401, {{"error", {{"code", 401}, {"message", message}, {"status", "UNAUTHENTICATED"}}}});
}

void WritePermissionDenied(httplib::Response& res, std::string_view permission,
                           std::string_view resource, std::string_view who, bool storage) {
  if (storage) {
    std::string m = std::string(who.empty() ? "The caller" : who) + " does not have " +
                    std::string(permission) +
                    " access to the Google Cloud Storage resource (or it may not exist).";
    Send(res, 403,
         {{"error",
           {{"code", 403},
            {"message", m},
            {"errors",
             json::array({{{"message", m}, {"domain", "global"}, {"reason", "forbidden"}}})}}}});
    return;
  }
  std::string m = "Permission '" + std::string(permission) + "' denied on resource '" +
                  std::string(resource) + "' (or it may not exist).";
  json detail = {{"@type", "type.googleapis.com/google.rpc.ErrorInfo"},
                 {"reason", "IAM_PERMISSION_DENIED"},
                 {"domain", "iam.googleapis.com"},
                 {"metadata", {{"permission", permission}, {"resource", resource}}}};
  Send(res, 403,
       {{"error",
         {{"code", 403},
          {"message", m},
          {"status", "PERMISSION_DENIED"},
          {"details", json::array({detail})}}}});
}

std::string PrincipalJson(const auth::Principal& p) {
  json j = {{"email", p.email},
            {"kind", auth::PrincipalKindName(p.kind)},
            {"member", p.member()},
            {"createTime", FormatRfc3339(p.created)}};
  if (p.admin) j["admin"] = true;
  if (p.disabled) j["disabled"] = true;
  if (!p.description.empty()) j["description"] = p.description;
  return Dump(j);
}

std::string TokenJson(const auth::TokenInfo& t, std::string_view secret) {
  json j = {{"id", t.id}, {"principal", t.principal}, {"createTime", FormatRfc3339(t.created)}};
  if (t.expires != 0) j["expireTime"] = FormatRfc3339(t.expires);
  if (t.revoked != 0) j["revokeTime"] = FormatRfc3339(t.revoked);
  if (!t.description.empty()) j["description"] = t.description;
  if (!secret.empty()) j["token"] = secret;
  return Dump(j);
}

std::string GetConfigJson(std::string_view project) {
  const std::string number = std::to_string(ProjectNumber(project));
  return Dump(
      {{"serviceAccount", "service-" + number + "@cloud-ml.google.com.iam.gserviceaccount.com"},
       {"serviceAccountProject", number},
       {"config",
        {{"tpuServiceAccount", "service-" + number + "@cloud-tpu.iam.gserviceaccount.com"}}}});
}

std::string ListLocationsJson(std::string_view project, std::span<const std::string> accelerators) {
  json list = json::array();
  for (std::string_view r : kRegions) list.push_back(LocationOf(project, r, accelerators));
  return Dump({{"locations", list}});
}

Result<std::string> GetLocationJson(std::string_view project, std::string_view location,
                                    std::span<const std::string> accelerators) {
  for (std::string_view r : kRegions) {
    if (r == location) return Dump(LocationOf(project, r, accelerators));
  }
  return NotFound("Location projects/" + std::string(project) + "/locations/" +
                  std::string(location) + " not found (the locations are gcloud's regions)");
}

std::string BucketPolicyJson(std::string_view bucket, const auth::Policy& policy) {
  json j = json::parse(auth::PolicyToJson(policy));
  j["kind"] = "storage#policy";
  j["resourceId"] = "projects/_/buckets/" + std::string(bucket);
  return Dump(j);
}

Result<auth::SetPolicyRequest> ParseBucketPolicyRequest(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("Invalid JSON payload received: the body must be a Policy object");
  }
  j.erase("kind");
  j.erase("resourceId");
  json wrapped = {{"policy", j}};
  return auth::ParseSetPolicyRequest(Dump(wrapped), auth::ResourceKind::kBucket);
}

std::string AuditEntryJson(const auth::AuditRecord& r) {
  const std::string project = r.project.empty() ? "_" : r.project;
  json status = {{"code", static_cast<int>(r.code)}};
  if (!r.message.empty()) status["message"] = r.message;
  std::string service = r.method.substr(0, r.method.find('.'));
  service = service == "ml"                     ? "ml.googleapis.com"
            : service == "storage"              ? "storage.googleapis.com"
            : service == "logging"              ? "logging.googleapis.com"
            : service == "cloudresourcemanager" ? "cloudresourcemanager.googleapis.com"
                                                : "trainyard";
  json payload = {
      {"@type", "type.googleapis.com/google.cloud.audit.AuditLog"},
      {"authenticationInfo", {{"principalEmail", r.principal.empty() ? "anonymous" : r.principal}}},
      {"requestMetadata", {{"callerIp", r.caller_ip}}},
      {"serviceName", service},
      {"methodName", r.method},
      {"resourceName", r.resource},
      {"status", status}};
  json j = {{"insertId", std::to_string(r.id)},
            {"logName", "projects/" + project + "/logs/" + std::string(kAuditLogId)},
            {"timestamp", FormatRfc3339Micros(r.time)},
            {"receiveTimestamp", FormatRfc3339Micros(r.time)},
            {"severity", r.code == StatusCode::kOk ? "NOTICE" : "ERROR"},
            {"resource",
             {{"type", "audited_resource"},
              {"labels", {{"project_id", project}, {"service", service}, {"method", r.method}}}}},
            {"protoPayload", payload},
            {"httpRequest", {{"status", r.http_status}}}};
  return Dump(j);
}

Result<std::string> ListAuditEntries(const auth::AuthStore& store, std::string_view project,
                                     std::string_view page_token, int page_size) {
  int64_t after = 0;
  if (!page_token.empty()) {
    auto r = std::from_chars(page_token.data(), page_token.data() + page_token.size(), after);
    if (r.ec != std::errc() || r.ptr != page_token.data() + page_token.size() || after < 0) {
      return Status(StatusCode::kInvalidArgument, "Invalid pageToken for the audit log")
          .AddViolation("pageToken", "not a token this server issued");
    }
  }
  if (page_size <= 0) page_size = 1000;
  TRAINYARD_ASSIGN_OR_RETURN(auto records, store.ListAudit(project, after, page_size));
  std::string out = "{\"entries\":[";
  for (size_t i = 0; i < records.size(); ++i) {
    if (i) out += ',';
    out += AuditEntryJson(records[i]);
  }
  out += "]";
  if (static_cast<int>(records.size()) == page_size) {
    out += ",\"nextPageToken\":\"" + std::to_string(records.back().id) + "\"";
  }
  out += "}";
  return out;
}

}  // namespace trainyard::api
