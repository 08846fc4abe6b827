// AI Platform's IAM model as Trainyard applies it: permissions, Google's predefined roles with
// their permission sets (compat §13.3, docs/security.md), members, policies (bindings, etag,
// version) and their evaluation. Pure: no I/O, no threads, no clock.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::auth {

// What a policy is attached to. A permission on a job or bucket is granted by the resource's
// own policy or by its project's.
enum class ResourceKind { kProject, kJob, kBucket };

// Every permission Trainyard checks, in Google's spelling (compat §13.3), plus
// `trainyard.admin` (daemon administration: principals, tokens, admission, metrics), which only
// administrators hold.
std::span<const std::string_view> AllPermissions();
bool IsKnownPermission(std::string_view permission);
inline constexpr std::string_view kAdminPermission = "trainyard.admin";

// A predefined role and its permissions.
struct RoleInfo {
  std::string_view name;  // "roles/ml.developer"
  std::string_view title;
  std::vector<std::string_view> permissions;
  bool on_project, on_job, on_bucket;  // where it may be bound
};
std::span<const RoleInfo> PredefinedRoles();
// nullptr for an unknown role.
const RoleInfo* FindRole(std::string_view name);
bool RoleGrants(std::string_view role, std::string_view permission);

// A principal as a policy member names it: "user:alice@example.com" or
// "serviceAccount:trainer@proj.iam.gserviceaccount.com".
enum class PrincipalKind { kUser, kServiceAccount };
const char* PrincipalKindName(PrincipalKind kind);  // "user", "serviceAccount"
Result<PrincipalKind> ParsePrincipalKind(std::string_view text);
// Email-shaped: local@domain, ASCII letters, digits and ._%+- before the @, a dotted host after
// it, at most 254 characters. INVALID_ARGUMENT names `field`.
Status ValidateEmail(std::string_view email, std::string_view field);
std::string MemberOf(PrincipalKind kind, std::string_view email);
// A member of a binding: user:EMAIL, serviceAccount:EMAIL or allAuthenticatedUsers.
// INVALID_ARGUMENT names `field` (group:, domain:, allUsers and deleted: are not supported).
Status ValidateMember(std::string_view member, std::string_view field);

struct Binding {
  std::string role;
  std::vector<std::string> members;
};

// google.iam.v1.Policy (compat §5.1). Trainyard keeps version 1 (no conditions).
struct Policy {
  int version = 1;
  std::vector<Binding> bindings;
  std::string etag;  // base64 of 8 bytes; "" for a policy never set
};

// Limits on a policy (Google allows 1,500 members per policy).
inline constexpr size_t kMaxPolicyMembers = 1500;
inline constexpr size_t kMaxPolicyBytes = 64 * 1024;

// Parses a Policy JSON object. Unknown fields, conditions, unknown roles, roles not grantable
// on `kind`, malformed members and too many members are INVALID_ARGUMENT with a field
// violation naming the field (`field_prefix` + ".bindings[2].members[0]" ...). Duplicate
// members are dropped, bindings of one role merged, and bindings without members removed.
Result<Policy> ParsePolicy(std::string_view json_text, ResourceKind kind,
                           std::string_view field_prefix = "policy");
// The canonical JSON (bindings sorted by role, members sorted; `etag` and `version` always
// present, `bindings` omitted when empty, as Google answers).
std::string PolicyToJson(const Policy& policy);

// setIamPolicy's body {policy, updateMask}: mask paths "bindings", "etag", "version"
// (default "bindings,etag"); other paths are INVALID_ARGUMENT naming updateMask.
struct SetPolicyRequest {
  Policy policy;
  bool update_bindings = true;
  bool check_etag = true;  // etag in the mask and in the policy
  bool update_version = false;
};
Result<SetPolicyRequest> ParseSetPolicyRequest(std::string_view json_text, ResourceKind kind);

// testIamPermissions' body {permissions: [...]}: wildcards and unknown-looking names are
// INVALID_ARGUMENT naming permissions[i] (compat §5.1: no wildcards).
Result<std::vector<std::string>> ParseTestPermissionsRequest(std::string_view json_text);

// Whether `policy` grants `permission` to `member` (or to allAuthenticatedUsers).
bool PolicyGrants(const Policy& policy, std::string_view member, std::string_view permission);

// The policy a new job starts with: roles/ml.jobOwner for its creator (compat §13.3).
Policy CreatorPolicy(std::string_view creator_member);

}  // namespace trainyard::auth
