// Principals, API tokens, IAM policies and audit records, kept in one SQLite database
// (<data_dir>/auth.db, WAL, numbered migrations like the job store's) with everything but the
// audit records cached in memory, so that authenticating and authorizing a request reads no
// disk. Thread-safe: reads share a lock, writes go to SQLite first and then to the cache.
//
// Tokens: "ty1.<id>.<secret>", the id 16 hex digits (public: listed, revoked by it), the secret
// 256 bits from getrandom(2) in base64url. Only SHA-256 of the whole token is stored; a
// presented token is looked up by its id and its hash compared in constant time. A token may
// expire and may be revoked; a disabled principal's tokens stop working.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainyard/auth/iam.h"
#include "trainyard/core/status.h"
#include "trainyard/core/time.h"

namespace trainyard::auth {

struct Principal {
  std::string email;
  PrincipalKind kind = PrincipalKind::kUser;
  bool admin = false;  // administers the daemon: every permission on every resource
  bool disabled = false;
  Timestamp created = 0;
  std::string description;
  // A running job's credential (JobToken): its project and job id. Such a principal holds
  // kJobPermissions on its project's buckets and nothing else (docs/security.md).
  std::string job_project;
  std::string job_id;
  // The job runs as this principal (its trainingInput.serviceAccount): its credential holds
  // what the policies grant this service account, of kJobPermissions only.
  bool job_as_service_account = false;
  std::string member() const { return MemberOf(kind, email); }
};

// What a job's credential may do: on the buckets of the job's project, or, for a job that runs
// as a service account, where the policies grant them to that account.
inline constexpr std::string_view kJobPermissions[] = {
    "storage.objects.get",    "storage.objects.list",   "storage.objects.create",
    "storage.objects.delete", "storage.objects.update", "storage.buckets.get",
    "storage.buckets.list"};

struct TokenInfo {
  std::string id;
  std::string principal;  // email
  Timestamp created = 0;
  Timestamp expires = 0;  // 0 = never
  Timestamp revoked = 0;  // 0 = live
  std::string description;
};

struct NewToken {
  TokenInfo info;
  std::string secret;  // the whole token; shown once, never stored
};

// One audited request (who, what, when, result).
struct AuditRecord {
  int64_t id = 0;  // assigned by AppendAudit, increasing
  Timestamp time = 0;
  std::string principal;  // email, or "" when authentication is off
  std::string method;     // "ml.projects.jobs.create", "storage.objects.create", ...
  std::string resource;   // "projects/p/jobs/j", "projects/_/buckets/b/objects/o"
  std::string project;    // the project the record belongs to ("" = the daemon's)
  int http_status = 0;
  StatusCode code = StatusCode::kOk;
  std::string message;  // the error message when not OK
  std::string caller_ip;
};

// Resource names as policies are keyed.
std::string ProjectResource(std::string_view project);
std::string JobResource(std::string_view project, std::string_view job);
std::string BucketResource(std::string_view bucket);

// The shape of a token ("ty1.<16 hex>.<43 base64url>"), without looking it up.
bool LooksLikeToken(std::string_view token);

class AuthStore {
 public:
  // Opens (creating and migrating) the database at `path` (":memory:" for tests).
  static Result<std::unique_ptr<AuthStore>> Open(const std::string& path);
  ~AuthStore();
  AuthStore(const AuthStore&) = delete;
  AuthStore& operator=(const AuthStore&) = delete;

  // --- principals ------------------------------------------------------------------------
  // ALREADY_EXISTS when the email is taken; INVALID_ARGUMENT naming `email`.
  Result<Principal> CreatePrincipal(std::string_view email, PrincipalKind kind, bool admin,
                                    std::string_view description, Timestamp now);
  std::vector<Principal> ListPrincipals() const;
  Result<Principal> GetPrincipal(std::string_view email) const;  // NOT_FOUND
  // Disables (or enables) a principal; a disabled one cannot authenticate.
  Status SetDisabled(std::string_view email, bool disabled);
  size_t principal_count() const;

  // --- tokens ----------------------------------------------------------------------------
  // NOT_FOUND for an unknown principal; `expires` 0 = never, else must be after `now`.
  Result<NewToken> CreateToken(std::string_view email, Timestamp expires,
                               std::string_view description, Timestamp now);
  // Every token of `email` ("" = all), revoked and expired ones included, oldest first.
  std::vector<TokenInfo> ListTokens(std::string_view email) const;
  // NOT_FOUND for an unknown id; revoking twice is OK.
  Status RevokeToken(std::string_view id, Timestamp now);
  // The principal a token belongs to, or UNAUTHENTICATED saying why (malformed, unknown,
  // expired, revoked, principal disabled); the message never contains the token.
  Result<Principal> Authenticate(std::string_view token, Timestamp now) const;

  // --- job credentials ---------------------------------------------------------------------
  // The credential a job's replicas get: "ty1j.<project>/<job>.<HMAC-SHA256 under the
  // daemon's secret>". Nothing is stored per job; the API accepts it only while the job is
  // unfinished, so it dies with the job (docs/security.md).
  std::string JobToken(std::string_view project, std::string_view job) const;
  // {project, job} of a well-formed job token whose MAC is right (compared in constant time);
  // UNAUTHENTICATED otherwise.
  Result<std::pair<std::string, std::string>> VerifyJobToken(std::string_view token) const;

  // --- policies --------------------------------------------------------------------------
  // The policy of a resource (empty, etag "", when none was set).
  Policy GetPolicy(std::string_view resource) const;
  // setIamPolicy: ABORTED when the request's etag (checked when the mask names it) is not the
  // stored one; the stored policy is unchanged then. Returns the new policy with a new etag.
  Result<Policy> SetPolicy(std::string_view resource, const SetPolicyRequest& request);
  // Replaces a policy unconditionally (a new job's creator binding, the bootstrap).
  Result<Policy> PutPolicy(std::string_view resource, Policy policy);
  // Whether `principal` holds `permission` on `resource` through the policy of the resource
  // or of `project_resource` (either may be ""). Administrators hold every permission.
  bool Check(const Principal& principal, std::string_view project_resource,
             std::string_view resource, std::string_view permission) const;

  // --- audit -----------------------------------------------------------------------------
  // Durable (committed) when it returns OK. Assigns record.id.
  Status AppendAudit(AuditRecord& record);
  // Records of `project` ("" = all) with id > after_id, oldest first, at most `limit`.
  Result<std::vector<AuditRecord>> ListAudit(std::string_view project, int64_t after_id,
                                             int limit) const;

 private:
  struct Impl;
  explicit AuthStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The first start of a daemon with authentication on: when the store has no principal, creates
// the administrator `email` with a token and writes the token to `token_path` (mode 0600,
// created with its directory). Returns true when it did (the caller prints the path once).
Result<bool> BootstrapAdmin(AuthStore& store, std::string_view email, const std::string& token_path,
                            Timestamp now);

}  // namespace trainyard::auth
