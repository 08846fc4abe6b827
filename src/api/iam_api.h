// The pieces of authentication, authorization and the IAM-related methods that the route
// handlers (api_server.cc) put together: credentials from a request, Google's 401/403 bodies,
// the JSON of principals, tokens, bucket policies, projects.getConfig and projects.locations,
// and audit records as Cloud Logging entries. Private to ty_api.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "trainyard/auth/auth_store.h"
#include "trainyard/core/status.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace trainyard::api {

// The longest credential looked at; longer ones are refused as malformed without hashing.
inline constexpr size_t kMaxCredentialBytes = 4096;

// What a request presents: `Authorization: Bearer <token>` (what gcloud, gsutil and
// googleapiclient send), else ?access_token= or ?oauth_token=. "" when none.
std::string BearerToken(const httplib::Request& req);

// The web console's session (docs/security.md "The console"): an HttpOnly, SameSite=Strict
// cookie holding a short-lived API token that signing in created.
inline constexpr char kSessionCookie[] = "ty_console_session";
// The header the console adds to every request that is not a GET; a browser sends it on a
// cross-site request only after a CORS preflight, which Trainyard never allows.
inline constexpr char kConsoleHeader[] = "X-Trainyard-Console";
// The session token in the Cookie header, "" when there is none.
std::string SessionCookieToken(const httplib::Request& req);
// Whether a request that authenticates with the session cookie may use it: GET and HEAD
// always; anything else only with kConsoleHeader and, when the browser sent Origin, the
// request's own origin (CSRF: the cookie alone never changes anything).
bool SessionCookieUsable(const httplib::Request& req);
// Set-Cookie values that start (token, max_age_s) and end a session.
std::string SessionCookie(std::string_view token, int64_t max_age_s, bool secure);

// 401 UNAUTHENTICATED with a WWW-Authenticate header. `storage`: GCS's error shape.
void WriteUnauthenticated(httplib::Response& res, const std::string& message, bool storage,
                          std::string_view permission);
// 403 PERMISSION_DENIED in Google's shape: "Permission 'P' denied on resource 'R' (or it may
// not exist)." with a google.rpc.ErrorInfo detail (reason IAM_PERMISSION_DENIED). `storage`:
// GCS's shape ("WHO does not have P access ...", reason forbidden).
void WritePermissionDenied(httplib::Response& res, std::string_view permission,
                           std::string_view resource, std::string_view who, bool storage);

std::string PrincipalJson(const auth::Principal& p);
// `secret` is included only when not empty (the answer to a create).
std::string TokenJson(const auth::TokenInfo& t, std::string_view secret);

// projects.getConfig (compat §5.2): the project's service agent (compat §13.3) and number.
std::string GetConfigJson(std::string_view project);
// projects.locations.list/get (compat §5.2, §13.1): every gcloud region with TRAINING and the
// accelerator types of this node (e.g. "NVIDIA_TESLA_T4").
std::string ListLocationsJson(std::string_view project, std::span<const std::string> accelerators);
Result<std::string> GetLocationJson(std::string_view project, std::string_view location,
                                    std::span<const std::string> accelerators);

// A bucket's policy as the storage JSON API shows it (kind storage#policy, resourceId).
std::string BucketPolicyJson(std::string_view bucket, const auth::Policy& policy);
// The PUT body of storage buckets.setIamPolicy: the policy itself, kind/resourceId ignored.
Result<auth::SetPolicyRequest> ParseBucketPolicyRequest(std::string_view body);

// An audit record as a Cloud Logging entry: logName
// projects/P/logs/cloudaudit.googleapis.com%2Factivity, protoPayload an AuditLog
// (authenticationInfo.principalEmail, methodName, resourceName, status).
std::string AuditEntryJson(const auth::AuditRecord& r);
inline constexpr std::string_view kAuditLogId = "cloudaudit.googleapis.com%2Factivity";
// A page of audit entries of `project` ("" = every project) after `page_token` (the last id of
// the previous page; "" = from the start), oldest first: {"entries": [...], "nextPageToken"}.
Result<std::string> ListAuditEntries(const auth::AuthStore& store, std::string_view project,
                                     std::string_view page_token, int page_size);

}  // namespace trainyard::api
