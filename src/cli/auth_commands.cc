// trainyard admin principals|tokens|projects|buckets|audit|roles|whoami, and the CLI's config
// file (docs/security.md, docs/cli.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <set>

#include "commands.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"
#include "trainyard/gcloud/gcloud_settings.h"

namespace trainyard::cli {

using nlohmann::json;

std::string CliConfigPath() {
  if (const char* f = std::getenv("TRAINYARD_CLI_CONFIG"); f != nullptr && *f) return f;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x != nullptr && *x) {
    return std::string(x) + "/trainyard/cli.conf";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h) {
    return std::string(h) + "/.config/trainyard/cli.conf";
  }
  return "";
}

CliConfig ReadCliConfig() {
  CliConfig c;
  const std::string path = CliConfigPath();
  if (path.empty()) return c;
  auto text = ReadFile(path);
  if (!text.ok()) return c;
  for (const auto& section : gcloud::ParseIni(*text)) {
    for (const auto& [k, v] : section.entries) {
      if (k == "endpoint") c.endpoint = v;
      if (k == "project") c.project = v;
      if (k == "token_file") c.token_file = v;
    }
  }
  return c;
}

std::string LocalAdminTokenFile() {
  std::string dir;
  if (const char* d = std::getenv("TRAINYARD_DATA_DIR"); d != nullptr && *d) {
    dir = d;
  } else if (const char* x = std::getenv("XDG_DATA_HOME"); x != nullptr && *x) {
    dir = std::string(x) + "/trainyard";
  } else if (const char* h = std::getenv("HOME"); h != nullptr && *h) {
    dir = std::string(h) + "/.local/share/trainyard";
  }
  return dir.empty() ? "" : dir + "/admin-token";
}

std::string ReadTokenFile(const std::string& path) {
  if (path.empty()) return "";
  std::string p = path;
  if (p.rfind("~/", 0) == 0) {
    if (const char* h = std::getenv("HOME")) p = std::string(h) + p.substr(1);
  }
  auto text = ReadFile(p);
  if (!text.ok()) return "";
  return Trim(text->substr(0, text->find('\n')));
}

namespace {

Status WriteOwnerOnly(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("cannot write " + path + ": " + std::strerror(errno));
  bool ok = ::fchmod(fd, 0600) == 0 &&
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok ? Status::Ok() : Internal("cannot write " + path);
}

std::string Str(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

Result<json> Parse(const Result<std::string>& body) {
  if (!body.ok()) return body.status();
  json j = json::parse(*body, nullptr, false);
  if (j.is_discarded()) return Internal("the daemon answered with invalid JSON");
  return j;
}

// "90d", "12h", "30m", "45s" or "3600" as Google's duration text ("7776000s").
Result<std::string> TtlSeconds(const std::string& text) {
  if (text.empty()) return InvalidArgument("Invalid value for [--ttl]: empty");
  int64_t unit = 1;
  std::string num = text;
  switch (text.back()) {
    case 'd':
      unit = 86400;
      num.pop_back();
      break;
    case 'h':
      unit = 3600;
      num.pop_back();
      break;
    case 'm':
      unit = 60;
      num.pop_back();
      break;
    case 's':
      num.pop_back();
      break;
    default:
      break;
  }
  int64_t n = 0;
  auto r = std::from_chars(num.data(), num.data() + num.size(), n);
  if (num.empty() || r.ec != std::errc() || r.ptr != num.data() + num.size() || n <= 0 ||
      n > 100LL * 365 * 86400 / unit) {
    return InvalidArgument("Invalid value for [--ttl]: \"" + text +
                           "\" (a positive number with s, m, h or d, e.g. 90d)");
  }
  return std::to_string(n * unit) + "s";
}

// Read-modify-write of a policy: adds or removes one binding member, retrying on an etag race.
int EditBinding(const Invocation& inv, client::Client& c, const std::string& get_path,
                const std::string& set_method, const std::string& set_path, bool wrap,
                const AuthAdminArgs& a, bool add) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto policy = Parse(wrap ? c.CallJson("POST", get_path, "{}") : c.CallJson("GET", get_path));
    if (!policy.ok()) return inv.Fail(policy.status());
    json& p = *policy;
    json bindings = p.contains("bindings") ? p["bindings"] : json::array();
    bool found = false;
    for (auto& b : bindings) {
      if (Str(b, "role") != a.role) continue;
      found = true;
      std::set<std::string> members;
      for (const auto& m : b["members"]) members.insert(m.get<std::string>());
      if (add) {
        members.insert(a.member);
      } else {
        members.erase(a.member);
      }
      b["members"] = json(members);
    }
    if (!found && add) bindings.push_back({{"role", a.role}, {"members", {a.member}}});
    p["bindings"] = bindings;
    p.erase("kind");
    p.erase("resourceId");
    json body = wrap ? json{{"policy", p}} : p;
    auto set = c.CallJson(set_method, set_path, body.dump());
    if (set.ok()) {
      inv.Err() << (add ? "Updated IAM policy (added " : "Updated IAM policy (removed ") << a.member
                << " from " << a.role << ").\n";
      inv.Out() << *set << "\n";
      return kExitOk;
    }
    if (set.status().code() != StatusCode::kAborted) return inv.Fail(set.status());
  }
  return inv.Fail("The policy kept changing (etag conflicts); try again.");
}

}  // namespace

int RunAuthAdmin(const Invocation& inv, AuthAdminAction action, const AuthAdminArgs& a) {
  auto c = inv.MakeClient();
  auto print = [&](const Result<std::string>& r) {
    if (!r.ok()) return inv.Fail(r.status());
    inv.Out() << *r << "\n";
    return kExitOk;
  };
  const std::string email = PercentEncode(a.email);
  const std::string project_path = "/v1/projects/" + PercentEncode(a.resource);
  const std::string bucket_path = "/storage/v1/b/" + PercentEncode(a.resource) + "/iam";
  switch (action) {
    case AuthAdminAction::kCreatePrincipal: {
      json body = {{"email", a.email},
                   {"kind", a.service_account ? "serviceAccount" : "user"},
                   {"admin", a.admin}};
      if (a.description) body["description"] = *a.description;
      return print(c->CallJson("POST", "/v1/admin/principals", body.dump()));
    }
    case AuthAdminAction::kListPrincipals: {
      auto j = Parse(c->CallJson("GET", "/v1/admin/principals"));
      if (!j.ok()) return inv.Fail(j.status());
      inv.Out() << std::left << std::setw(40) << "EMAIL" << std::setw(16) << "KIND"
                << "FLAGS\n";
      for (const auto& p : (*j)["principals"]) {
        std::string flags = std::string(p.value("admin", false) ? "admin " : "") +
                            (p.value("disabled", false) ? "disabled" : "");
        inv.Out() << std::setw(40) << Str(p, "email") << std::setw(16) << Str(p, "kind") << flags
                  << "\n";
      }
      return kExitOk;
    }
    case AuthAdminAction::kDisablePrincipal:
      return print(c->CallJson("POST", "/v1/admin/principals/" + email + ":disable", "{}"));
    case AuthAdminAction::kEnablePrincipal:
      return print(c->CallJson("POST", "/v1/admin/principals/" + email + ":enable", "{}"));
    case AuthAdminAction::kCreateToken: {
      json body = json::object();
      if (a.ttl) {
        auto ttl = TtlSeconds(*a.ttl);
        if (!ttl.ok()) return inv.Fail(ttl.status().message());
        body["ttl"] = *ttl;
      }
      if (a.description) body["description"] = *a.description;
      auto j = Parse(c->CallJson("POST", "/v1/admin/principals/" + email + "/tokens", body.dump()));
      if (!j.ok()) return inv.Fail(j.status());
      const std::string token = Str(*j, "token");
      inv.Err() << "Created token " << Str(*j, "id") << " for " << a.email
                << (j->contains("expireTime") ? ", expiring " + Str(*j, "expireTime") : "")
                << ". It is shown once: keep it secret.\n";
      if (a.output_file) {
        if (Status st = WriteOwnerOnly(*a.output_file, token + "\n"); !st.ok()) {
          return inv.Fail(st.message());
        }
        inv.Err() << "Wrote it to " << *a.output_file << " (mode 0600).\n";
      } else {
        inv.Out() << token << "\n";
      }
      return kExitOk;
    }
    case AuthAdminAction::kListTokens: {
      auto j =
          Parse(c->CallJson("GET", a.email.empty() ? "/v1/admin/tokens"
                                                   : "/v1/admin/principals/" + email + "/tokens"));
      if (!j.ok()) return inv.Fail(j.status());
      inv.Out() << std::left << std::setw(18) << "ID" << std::setw(36) << "PRINCIPAL"
                << std::setw(22) << "CREATED"
                << "STATE\n";
      for (const auto& t : (*j)["tokens"]) {
        std::string state = t.contains("revokeTime")   ? "revoked " + Str(t, "revokeTime")
                            : t.contains("expireTime") ? "expires " + Str(t, "expireTime")
                                                       : "live";
        inv.Out() << std::setw(18) << Str(t, "id") << std::setw(36) << Str(t, "principal")
                  << std::setw(22) << Str(t, "createTime") << state << "\n";
      }
      return kExitOk;
    }
    case AuthAdminAction::kRevokeToken: {
      auto r =
          c->CallJson("POST", "/v1/admin/tokens/" + PercentEncode(a.token_id) + ":revoke", "{}");
      if (!r.ok()) return inv.Fail(r.status());
      inv.Err() << "Revoked token " << a.token_id << ".\n";
      return kExitOk;
    }
    case AuthAdminAction::kGetProjectPolicy:
      return print(c->CallJson("POST", project_path + ":getIamPolicy", "{}"));
    case AuthAdminAction::kGetBucketPolicy:
      return print(c->CallJson("GET", bucket_path));
    case AuthAdminAction::kSetProjectPolicy:
    case AuthAdminAction::kSetBucketPolicy: {
      auto text = ReadFile(a.policy_file);
      if (!text.ok()) return inv.Fail(text.status().message());
      json policy = json::parse(*text, nullptr, false);
      if (policy.is_discarded() || !policy.is_object()) {
        return inv.Fail("Invalid policy file [" + a.policy_file + "]: not a JSON object.");
      }
      if (action == AuthAdminAction::kSetBucketPolicy) {
        return print(c->CallJson("PUT", bucket_path, policy.dump()));
      }
      if (policy.contains("policy")) policy = policy["policy"];  // a SetIamPolicyRequest
      return print(
          c->CallJson("POST", project_path + ":setIamPolicy", json{{"policy", policy}}.dump()));
    }
    case AuthAdminAction::kAddProjectBinding:
    case AuthAdminAction::kRemoveProjectBinding:
      return EditBinding(inv, *c, project_path + ":getIamPolicy", "POST",
                         project_path + ":setIamPolicy", true, a,
                         action == AuthAdminAction::kAddProjectBinding);
    case AuthAdminAction::kAddBucketBinding:
    case AuthAdminAction::kRemoveBucketBinding:
      return EditBinding(inv, *c, bucket_path, "PUT", bucket_path, false, a,
                         action == AuthAdminAction::kAddBucketBinding);
    case AuthAdminAction::kAudit: {
      std::string token;
      do {
        std::string path = "/v1/admin/audit?pageSize=1000";
        if (!a.resource.empty()) path += "&project=" + PercentEncode(a.resource);
        if (!token.empty()) path += "&pageToken=" + PercentEncode(token);
        auto j = Parse(c->CallJson("GET", path));
        if (!j.ok()) return inv.Fail(j.status());
        for (const auto& e : (*j)["entries"]) {
          const json& p = e["protoPayload"];
          inv.Out() << Str(e, "timestamp") << "  " << Str(p["authenticationInfo"], "principalEmail")
                    << "  " << Str(p, "methodName") << "  " << Str(p, "resourceName") << "  "
                    << e["httpRequest"].value("status", 0) << "\n";
        }
        token = Str(*j, "nextPageToken");
      } while (!token.empty());
      return kExitOk;
    }
    case AuthAdminAction::kRoles: {
      auto j = Parse(c->CallJson("GET", "/v1/roles"));
      if (!j.ok()) return inv.Fail(j.status());
      for (const auto& r : (*j)["roles"]) {
        inv.Out() << Str(r, "name") << " (" << Str(r, "title") << "):";
        for (const auto& p : r["includedPermissions"]) inv.Out() << " " << p.get<std::string>();
        inv.Out() << "\n";
      }
      return kExitOk;
    }
    case AuthAdminAction::kWhoAmI:
      return print(c->CallJson("GET", "/v1/whoami"));
  }
  return kExitError;
}

}  // namespace trainyard::cli
