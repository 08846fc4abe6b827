#include "trainyard/auth/iam.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace trainyard::auth {

using nlohmann::json;

namespace {

// Every permission a route may need (docs/security.md has the route table).
constexpr std::string_view kPermissions[] = {
    // ml v1 (compat §13.3)
    "ml.jobs.create",
    "ml.jobs.get",
    "ml.jobs.list",
    "ml.jobs.cancel",
    "ml.jobs.update",
    "ml.jobs.getIamPolicy",
    "ml.jobs.setIamPolicy",
    "ml.locations.get",
    "ml.locations.list",
    "ml.operations.get",
    "ml.operations.list",
    "ml.operations.cancel",
    "ml.projects.getConfig",
    // Cloud Storage
    "storage.buckets.create",
    "storage.buckets.delete",
    "storage.buckets.get",
    "storage.buckets.list",
    "storage.buckets.update",
    "storage.buckets.getIamPolicy",
    "storage.buckets.setIamPolicy",
    "storage.objects.create",
    "storage.objects.delete",
    "storage.objects.get",
    "storage.objects.list",
    "storage.objects.update",
    // Cloud Logging
    "logging.logEntries.list",
    // IAM: running a job as a service account (trainingInput.serviceAccount)
    "iam.serviceAccounts.actAs",
    // Resource Manager: the project's own policy
    "resourcemanager.projects.get",
    "resourcemanager.projects.getIamPolicy",
    "resourcemanager.projects.setIamPolicy",
    // Trainyard: daemon administration
    "trainyard.admin",
};

std::vector<std::string_view> Known() {
  std::vector<std::string_view> out;
  for (auto p : kPermissions) out.push_back(p);
  return out;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::vector<std::string_view> Matching(bool (*pred)(std::string_view)) {
  std::vector<std::string_view> out;
  for (auto p : Known()) {
    if (pred(p)) out.push_back(p);
  }
  return out;
}

bool IsRead(std::string_view p) {
  return EndsWith(p, ".get") || EndsWith(p, ".list") || EndsWith(p, ".getIamPolicy") ||
         p == "ml.projects.getConfig";
}

// compat §13.3: the job permissions of each ml role are from the roles page [W-iam]; the
// locations/operations/getConfig permissions follow the same page (docs/compatibility.md).
std::vector<RoleInfo> BuildRoles() {
  const std::vector<std::string_view> ml_common_read = {"ml.locations.get", "ml.locations.list",
                                                        "ml.operations.get", "ml.operations.list",
                                                        "ml.projects.getConfig"};
  auto with = [](std::vector<std::string_view> a, const std::vector<std::string_view>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  std::vector<RoleInfo> roles;
  roles.push_back({"roles/ml.admin", "ML Engine Admin",
                   Matching([](std::string_view p) { return StartsWith(p, "ml."); }), true, true,
                   false});
  roles.push_back({"roles/ml.editor", "ML Engine Editor",
                   with({"ml.jobs.cancel", "ml.jobs.create", "ml.jobs.get", "ml.jobs.getIamPolicy",
                         "ml.jobs.list", "ml.jobs.update", "ml.operations.cancel"},
                        ml_common_read),
                   true, true, false});
  roles.push_back({"roles/ml.developer", "ML Engine Developer",
                   with({"ml.jobs.create", "ml.jobs.get", "ml.jobs.getIamPolicy", "ml.jobs.list"},
                        ml_common_read),
                   true, true, false});
  roles.push_back({"roles/ml.viewer", "ML Engine Viewer",
                   with({"ml.jobs.get", "ml.jobs.getIamPolicy", "ml.jobs.list"}, ml_common_read),
                   true, true, false});
  roles.push_back({"roles/ml.jobOwner", "ML Engine Job Owner",
                   Matching([](std::string_view p) { return StartsWith(p, "ml.jobs."); }), true,
                   true, false});
  // The simplified storage set (docs/security.md).
  roles.push_back({"roles/storage.admin", "Storage Admin",
                   Matching([](std::string_view p) { return StartsWith(p, "storage."); }), true,
                   false, true});
  roles.push_back({"roles/storage.objectAdmin", "Storage Object Admin",
                   Matching([](std::string_view p) { return StartsWith(p, "storage.objects."); }),
                   true, false, true});
  roles.push_back({"roles/storage.objectCreator",
                   "Storage Object Creator",
                   {"storage.objects.create"},
                   true,
                   false,
                   true});
  roles.push_back({"roles/storage.objectViewer",
                   "Storage Object Viewer",
                   {"storage.objects.get", "storage.objects.list"},
                   true,
                   false,
                   true});
  roles.push_back(
      {"roles/logging.viewer", "Logs Viewer", {"logging.logEntries.list"}, true, false, false});
  // Submitting a job whose trainingInput.serviceAccount is a service account (compat §13.3).
  roles.push_back({"roles/iam.serviceAccountUser",
                   "Service Account User",
                   {"iam.serviceAccounts.actAs"},
                   true,
                   false,
                   false});
  // Basic roles: viewer reads everything, editor also changes everything but policies, owner
  // also sets policies. None of them administers the daemon.
  roles.push_back({"roles/viewer", "Viewer", Matching([](std::string_view p) {
                     return p != kAdminPermission && (IsRead(p) || p == "logging.logEntries.list");
                   }),
                   true, false, false});
  roles.push_back({"roles/editor", "Editor", Matching([](std::string_view p) {
                     return p != kAdminPermission && !EndsWith(p, ".setIamPolicy");
                   }),
                   true, false, false});
  roles.push_back({"roles/owner", "Owner",
                   Matching([](std::string_view p) { return p != kAdminPermission; }), true, false,
                   false});
  return roles;
}

const std::vector<RoleInfo>& Roles() {
  static const std::vector<RoleInfo>* roles = new std::vector<RoleInfo>(BuildRoles());
  return *roles;
}

const std::vector<std::string_view>& KnownPermissions() {
  static const std::vector<std::string_view>* known = new std::vector<std::string_view>(Known());
  return *known;
}

Status Violation(std::string field, std::string description) {
  std::string message = "Invalid value at '" + field + "': " + description;
  return Status(StatusCode::kInvalidArgument, message)
      .AddViolation(std::move(field), std::move(description));
}

const char* KindName(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kProject:
      return "a project";
    case ResourceKind::kJob:
      return "a job";
    case ResourceKind::kBucket:
      return "a bucket";
  }
  return "a resource";
}

bool Grantable(const RoleInfo& role, ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kProject:
      return role.on_project;
    case ResourceKind::kJob:
      return role.on_job;
    case ResourceKind::kBucket:
      return role.on_bucket;
  }
  return false;
}

Result<Policy> PolicyFromJson(const json& j, ResourceKind kind, const std::string& prefix) {
  if (!j.is_object()) return Violation(prefix, "must be a JSON object (google.iam.v1.Policy)");
  Policy policy;
  std::map<std::string, std::set<std::string>> by_role;
  size_t members = 0;
  for (const auto& [key, value] : j.items()) {
    const std::string field = prefix + "." + key;
    if (key == "version") {
      if (!value.is_number_integer() && !value.is_string()) {
        return Violation(field, "must be an integer (0, 1 or 3)");
      }
      int v = -1;
      if (value.is_number_integer()) {
        v = value.get<int>();
      } else {
        const std::string s = value.get<std::string>();
        if (s == "0" || s == "1" || s == "3") v = s[0] - '0';
      }
      if (v != 0 && v != 1 && v != 3) return Violation(field, "must be 0, 1 or 3");
    } else if (key == "etag") {
      if (!value.is_string()) return Violation(field, "must be a base64 string");
      policy.etag = value.get<std::string>();
      if (policy.etag.size() > 64) return Violation(field, "is not an etag this server issued");
    } else if (key == "auditConfigs") {
      if (!value.is_array() || !value.empty()) {
        return Violation(field,
                         "audit configurations are not supported (every mutating "
                         "request is audited; docs/security.md)");
      }
    } else if (key == "bindings") {
      if (!value.is_array()) return Violation(field, "must be an array of bindings");
      for (size_t i = 0; i < value.size(); ++i) {
        const json& b = value[i];
        const std::string bf = field + "[" + std::to_string(i) + "]";
        if (!b.is_object()) return Violation(bf, "must be an object {role, members}");
        std::string role;
        std::vector<std::string> list;
        for (const auto& [bk, bv] : b.items()) {
          if (bk == "role") {
            if (!bv.is_string()) return Violation(bf + ".role", "must be a string");
            role = bv.get<std::string>();
          } else if (bk == "members") {
            if (!bv.is_array()) return Violation(bf + ".members", "must be an array of strings");
            for (size_t m = 0; m < bv.size(); ++m) {
              const std::string mf = bf + ".members[" + std::to_string(m) + "]";
              if (!bv[m].is_string()) return Violation(mf, "must be a string");
              std::string member = bv[m].get<std::string>();
              TRAINYARD_RETURN_IF_ERROR(ValidateMember(member, mf));
              list.push_back(std::move(member));
            }
          } else if (bk == "condition") {
            if (!bv.is_null()) {
              return Violation(bf + ".condition", "conditional role bindings are not supported");
            }
          } else {
            return Violation(bf + "." + bk, "unknown field of a binding (role, members)");
          }
        }
        if (role.empty()) return Violation(bf + ".role", "is required");
        const RoleInfo* info = FindRole(role);
        if (info == nullptr) {
          return Violation(bf + ".role", "Role " + role +
                                             " is not a role Trainyard knows (the predefined "
                                             "roles are listed in docs/security.md)");
        }
        if (!Grantable(*info, kind)) {
          return Violation(bf + ".role",
                           "Role " + role + " cannot be granted on " + KindName(kind));
        }
        auto& set = by_role[role];
        for (auto& m : list) {
          if (set.insert(std::move(m)).second) ++members;
        }
        if (members > kMaxPolicyMembers) {
          return Violation(bf + ".members", "a policy holds at most " +
                                                std::to_string(kMaxPolicyMembers) + " members");
        }
      }
    } else {
      return Violation(field, "unknown field of a policy (version, bindings, etag)");
    }
  }
  for (auto& [role, set] : by_role) {
    if (set.empty()) continue;
    policy.bindings.push_back({role, std::vector<std::string>(set.begin(), set.end())});
  }
  return policy;
}

Result<json> ParseObject(std::string_view text, std::string_view what) {
  if (text.size() > kMaxPolicyBytes) {
    return Violation(std::string(what),
                     "the request is larger than " + std::to_string(kMaxPolicyBytes) + " bytes");
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(StatusCode::kInvalidArgument, "Invalid JSON payload received: the body of " +
                                                    std::string(what) + " must be a JSON object");
  }
  return j;
}

}  // namespace

std::span<const std::string_view> AllPermissions() { return KnownPermissions(); }

bool IsKnownPermission(std::string_view permission) {
  const auto& k = KnownPermissions();
  return std::find(k.begin(), k.end(), permission) != k.end();
}

std::span<const RoleInfo> PredefinedRoles() { return Roles(); }

const RoleInfo* FindRole(std::string_view name) {
  for (const RoleInfo& r : Roles()) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

bool RoleGrants(std::string_view role, std::string_view permission) {
  const RoleInfo* r = FindRole(role);
  if (r == nullptr) return false;
  return std::find(r->permissions.begin(), r->permissions.end(), permission) !=
         r->permissions.end();
}

const char* PrincipalKindName(PrincipalKind kind) {
  return kind == PrincipalKind::kUser ? "user" : "serviceAccount";
}

Result<PrincipalKind> ParsePrincipalKind(std::string_view text) {
  if (text == "user") return PrincipalKind::kUser;
  if (text == "serviceAccount") return PrincipalKind::kServiceAccount;
  return Violation("kind", "must be user or serviceAccount");
}

Status ValidateEmail(std::string_view email, std::string_view field) {
  const std::string f(field);
  if (email.empty()) return Violation(f, "an email address is required");
  if (email.size() > 254) return Violation(f, "an email address has at most 254 characters");
  size_t at = email.find('@');
  if (at == std::string_view::npos || at == 0 || email.find('@', at + 1) != std::string::npos) {
    return Violation(f, "must be an email address (name@domain)");
  }
  for (size_t i = 0; i < at; ++i) {
    char c = email[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
    if (!ok) return Violation(f, "must be an email address (name@domain)");
  }
  std::string_view domain = email.substr(at + 1);
  if (domain.empty() || domain.front() == '.' || domain.back() == '.' ||
      domain.find('.') == std::string_view::npos || domain.find("..") != std::string_view::npos) {
    return Violation(f, "must be an email address whose domain has a dot (name@example.com)");
  }
  for (char c : domain) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-';
    if (!ok) return Violation(f, "must be an email address (name@domain)");
  }
  return Status::Ok();
}

std::string MemberOf(PrincipalKind kind, std::string_view email) {
  return std::string(PrincipalKindName(kind)) + ":" + std::string(email);
}

Status ValidateMember(std::string_view member, std::string_view field) {
  if (member == "allAuthenticatedUsers") return Status::Ok();
  size_t colon = member.find(':');
  std::string_view kind = member.substr(0, colon);
  if (colon == std::string_view::npos || (kind != "user" && kind != "serviceAccount")) {
    return Violation(std::string(field),
                     "member '" + std::string(member.substr(0, 100)) +
                         "' must be user:EMAIL, serviceAccount:EMAIL or allAuthenticatedUsers");
  }
  return ValidateEmail(member.substr(colon + 1), field);
}

Result<Policy> ParsePolicy(std::string_view json_text, ResourceKind kind,
                           std::string_view field_prefix) {
  TRAINYARD_ASSIGN_OR_RETURN(json j, ParseObject(json_text, field_prefix));
  return PolicyFromJson(j, kind, std::string(field_prefix));
}

std::string PolicyToJson(const Policy& policy) {
  json j = json::object();
  j["version"] = policy.version;
  if (!policy.bindings.empty()) {
    json bindings = json::array();
    for (const Binding& b : policy.bindings) {
      bindings.push_back({{"role", b.role}, {"members", b.members}});
    }
    j["bindings"] = bindings;
  }
  j["etag"] = policy.etag.empty() ? "ACAB" : policy.etag;  // Google's etag of an empty policy
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<SetPolicyRequest> ParseSetPolicyRequest(std::string_view json_text, ResourceKind kind) {
  TRAINYARD_ASSIGN_OR_RETURN(json j, ParseObject(json_text, "setIamPolicy"));
  SetPolicyRequest req;
  std::string mask = "bindings,etag";
  bool has_policy = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "policy") {
      has_policy = true;
      TRAINYARD_ASSIGN_OR_RETURN(req.policy, PolicyFromJson(value, kind, "policy"));
    } else if (key == "updateMask" || key == "update_mask") {
      if (!value.is_string()) return Violation("updateMask", "must be a string of field paths");
      mask = value.get<std::string>();
    } else {
      return Violation(key, "unknown field of a SetIamPolicyRequest (policy, updateMask)");
    }
  }
  if (!has_policy) return Violation("policy", "is required");
  req.update_bindings = req.check_etag = req.update_version = false;
  size_t start = 0;
  while (start <= mask.size()) {
    size_t end = mask.find(',', start);
    if (end == std::string::npos) end = mask.size();
    std::string path = mask.substr(start, end - start);
    path.erase(0, path.find_first_not_of(' '));
    while (!path.empty() && path.back() == ' ') path.pop_back();
    if (path.rfind("policy.", 0) == 0) path = path.substr(7);
    if (path == "bindings") {
      req.update_bindings = true;
    } else if (path == "etag") {
      req.check_etag = true;
    } else if (path == "version") {
      req.update_version = true;
    } else if (!path.empty()) {
      return Violation("updateMask",
                       "unknown path '" + path.substr(0, 64) + "' (bindings, etag, version)");
    }
    start = end + 1;
  }
  if (req.policy.etag.empty()) req.check_etag = false;
  return req;
}

Result<std::vector<std::string>> ParseTestPermissionsRequest(std::string_view json_text) {
  TRAINYARD_ASSIGN_OR_RETURN(json j, ParseObject(json_text, "testIamPermissions"));
  std::vector<std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (key != "permissions") {
      return Violation(key, "unknown field of a TestIamPermissionsRequest (permissions)");
    }
    if (!value.is_array()) return Violation("permissions", "must be an array of strings");
    for (size_t i = 0; i < value.size(); ++i) {
      const std::string f = "permissions[" + std::to_string(i) + "]";
      if (!value[i].is_string()) return Violation(f, "must be a string");
      std::string p = value[i].get<std::string>();
      if (p.find('*') != std::string::npos) {
        return Violation(f,
                         "permissions with wildcards (such as '*' or 'storage.*') are not "
                         "allowed");
      }
      if (p.empty() || p.size() > 128 || std::count(p.begin(), p.end(), '.') < 2) {
        return Violation(f, "'" + p.substr(0, 128) + "' is not a valid permission name");
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

bool PolicyGrants(const Policy& policy, std::string_view member, std::string_view permission) {
  for (const Binding& b : policy.bindings) {
    if (!RoleGrants(b.role, permission)) continue;
    for (const std::string& m : b.members) {
      if (m == member || m == "allAuthenticatedUsers") return true;
    }
  }
  return false;
}

Policy CreatorPolicy(std::string_view creator_member) {
  Policy p;
  p.bindings.push_back({"roles/ml.jobOwner", {std::string(creator_member)}});
  return p;
}

}  // namespace trainyard::auth
