#include "trainyard/auth/auth_store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sqlite3.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <tuple>

#include "trainyard/core/util.h"

namespace trainyard::auth {

using nlohmann::json;

namespace {

// Numbered migrations, applied in order inside one IMMEDIATE transaction (PRAGMA user_version
// records the last one), as the job store does (docs/store.md). Append only.
constexpr const char* kMigrations[] = {
    // 1: principals, tokens (hashes only), policies, audit records.
    R"sql(
CREATE TABLE principals (
  email       TEXT PRIMARY KEY,
  kind        INTEGER NOT NULL,
  admin       INTEGER NOT NULL DEFAULT 0,
  disabled    INTEGER NOT NULL DEFAULT 0,
  created     INTEGER NOT NULL,
  description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE tokens (
  id          TEXT PRIMARY KEY,
  principal   TEXT NOT NULL REFERENCES principals (email),
  sha256      TEXT NOT NULL,
  created     INTEGER NOT NULL,
  expires     INTEGER NOT NULL DEFAULT 0,
  revoked     INTEGER NOT NULL DEFAULT 0,
  description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE policies (
  resource    TEXT PRIMARY KEY,
  policy_json TEXT NOT NULL,
  etag        TEXT NOT NULL
);
CREATE TABLE audit_log (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  time        INTEGER NOT NULL,
  principal   TEXT NOT NULL,
  method      TEXT NOT NULL,
  resource    TEXT NOT NULL,
  project     TEXT NOT NULL,
  http_status INTEGER NOT NULL,
  code        INTEGER NOT NULL,
  message     TEXT NOT NULL DEFAULT '',
  caller_ip   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_project ON audit_log (project, id);
)sql",
    // 2: the daemon's secret, the key of job credentials (JobToken).
    R"sql(
CREATE TABLE daemon_secret (
  id     INTEGER PRIMARY KEY CHECK (id = 1),
  secret TEXT NOT NULL
);
)sql",
};
constexpr int kLatestVersion = static_cast<int>(std::size(kMigrations));
constexpr char kTokenPrefix[] = "ty1.";
constexpr size_t kIdHex = 16;
constexpr size_t kSecretChars = 43;  // 32 bytes, base64url without padding

Status SqlError(sqlite3* db, std::string_view what) {
  return Status(StatusCode::kUnavailable,
                "auth store: " + std::string(what) + ": " + sqlite3_errmsg(db));
}

// A prepared statement, finalized when it goes out of scope.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& Bind(int i, std::string_view v) {
    if (rc_ == SQLITE_OK) {
      rc_ = sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    }
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // true: a row; false: done.
  Result<bool> Step() {
    if (rc_ != SQLITE_OK) return SqlError(db_, "prepare/bind");
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqlError(db_, "step");
  }
  Status Run() {
    auto r = Step();
    return r.ok() ? Status::Ok() : r.status();
  }
  int64_t Int(int c) const { return sqlite3_column_int64(stmt_, c); }
  std::string Text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, c));
    return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(stmt_, c));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    return Status(StatusCode::kUnavailable, "auth store: " + m);
  }
  return Status::Ok();
}

Status Migrate(sqlite3* db, const std::string& path) {
  TRAINYARD_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
  auto apply = [&]() -> Status {
    Stmt v(db, "PRAGMA user_version");
    TRAINYARD_ASSIGN_OR_RETURN(bool row, v.Step());
    int current = row ? static_cast<int>(v.Int(0)) : 0;
    if (current > kLatestVersion) {
      return FailedPrecondition("Database " + path + " has schema version " +
                                std::to_string(current) + ", newer than the " +
                                std::to_string(kLatestVersion) +
                                " this Trainyard supports; upgrade Trainyard to open it");
    }
    for (int i = current; i < kLatestVersion; ++i) {
      TRAINYARD_RETURN_IF_ERROR(Exec(db, kMigrations[i]));
      TRAINYARD_RETURN_IF_ERROR(
          Exec(db, ("PRAGMA user_version = " + std::to_string(i + 1)).c_str()));
    }
    return Status::Ok();
  };
  Status st = apply();
  if (!st.ok()) {
    (void)Exec(db, "ROLLBACK");
    return st;
  }
  return Exec(db, "COMMIT");
}

Status RandomBytes(void* out, size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    ssize_t got = ::getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return Internal(std::string("getrandom: ") + std::strerror(errno));
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return Status::Ok();
}

std::string Base64Url(std::string_view bytes) {
  std::string s = Base64Encode(bytes);
  for (char& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  while (!s.empty() && s.back() == '=') s.pop_back();
  return s;
}

std::string Hex(std::string_view bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

// Constant time in the length of the (equal-length) inputs.
bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

Status Unauthenticated(std::string m) { return Status(StatusCode::kUnauthenticated, std::move(m)); }

struct StoredToken {
  TokenInfo info;
  std::string sha256;
};

std::string NewEtag() {
  unsigned char b[8];
  if (!RandomBytes(b, sizeof b).ok()) return RandomEtag();
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(b), sizeof b));
}

}  // namespace

std::string ProjectResource(std::string_view project) { return "projects/" + std::string(project); }
std::string JobResource(std::string_view project, std::string_view job) {
  return "projects/" + std::string(project) + "/jobs/" + std::string(job);
}
std::string BucketResource(std::string_view bucket) {
  return "projects/_/buckets/" + std::string(bucket);
}

bool LooksLikeToken(std::string_view token) {
  const size_t prefix = sizeof(kTokenPrefix) - 1;
  if (token.size() != prefix + kIdHex + 1 + kSecretChars) return false;
  if (token.substr(0, prefix) != kTokenPrefix) return false;
  for (size_t i = prefix; i < prefix + kIdHex; ++i) {
    char c = token[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  if (token[prefix + kIdHex] != '.') return false;
  for (char c : token.substr(prefix + kIdHex + 1)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

struct AuthStore::Impl {
  std::string path;
  sqlite3* db = nullptr;
  mutable std::mutex write_mu;  // the connection (one statement at a time)
  std::string secret;           // 32 bytes; immutable after Open
  mutable std::shared_mutex cache_mu;
  std::map<std::string, Principal, std::less<>> principals;  // guarded by cache_mu
  std::map<std::string, StoredToken, std::less<>> tokens;    // by id; guarded by cache_mu
  std::map<std::string, Policy, std::less<>> policies;       // guarded by cache_mu

  ~Impl() {
    if (db != nullptr) sqlite3_close_v2(db);
  }

  Status LoadSecret() {
    Stmt read(db, "SELECT secret FROM daemon_secret WHERE id = 1");
    TRAINYARD_ASSIGN_OR_RETURN(bool row, read.Step());
    if (row) {
      auto decoded = Base64Decode(read.Text(0));
      if (!decoded.ok() || decoded->size() != 32) {
        return Internal("auth store: the daemon secret is damaged");
      }
      secret = *decoded;
      return Status::Ok();
    }
    unsigned char bytes[32];
    TRAINYARD_RETURN_IF_ERROR(RandomBytes(bytes, sizeof bytes));
    secret.assign(reinterpret_cast<const char*>(bytes), sizeof bytes);
    Stmt write(db, "INSERT INTO daemon_secret (id, secret) VALUES (1, ?)");
    write.Bind(1, Base64Encode(secret));
    return write.Run();
  }

  Status Load() {
    TRAINYARD_RETURN_IF_ERROR(LoadSecret());
    {
      Stmt s(db, "SELECT email, kind, admin, disabled, created, description FROM principals");
      for (;;) {
        TRAINYARD_ASSIGN_OR_RETURN(bool row, s.Step());
        if (!row) break;
        Principal p;
        p.email = s.Text(0);
        p.kind = s.Int(1) == 1 ? PrincipalKind::kServiceAccount : PrincipalKind::kUser;
        p.admin = s.Int(2) != 0;
        p.disabled = s.Int(3) != 0;
        p.created = s.Int(4);
        p.description = s.Text(5);
        principals[p.email] = p;
      }
    }
    {
      Stmt s(db,
             "SELECT id, principal, sha256, created, expires, revoked, description FROM tokens");
      for (;;) {
        TRAINYARD_ASSIGN_OR_RETURN(bool row, s.Step());
        if (!row) break;
        StoredToken t;
        t.info.id = s.Text(0);
        t.info.principal = s.Text(1);
        t.sha256 = s.Text(2);
        t.info.created = s.Int(3);
        t.info.expires = s.Int(4);
        t.info.revoked = s.Int(5);
        t.info.description = s.Text(6);
        tokens[t.info.id] = t;
      }
    }
    {
      Stmt s(db, "SELECT resource, policy_json, etag FROM policies");
      for (;;) {
        TRAINYARD_ASSIGN_OR_RETURN(bool row, s.Step());
        if (!row) break;
        std::string resource = s.Text(0);
        // Stored policies were validated when set; parse leniently on the resource kind.
        ResourceKind kind = resource.rfind("projects/_/buckets/", 0) == 0  ? ResourceKind::kBucket
                            : resource.find("/jobs/") != std::string::npos ? ResourceKind::kJob
                                                                           : ResourceKind::kProject;
        auto p = ParsePolicy(s.Text(1), kind);
        if (!p.ok()) {
          return Internal("auth store: the stored policy of " + resource +
                          " does not parse: " + p.status().message());
        }
        p->etag = s.Text(2);
        policies[resource] = *p;
      }
    }
    return Status::Ok();
  }

  Status WritePolicy(const std::string& resource, const Policy& p) {
    Stmt s(db, "INSERT OR REPLACE INTO policies (resource, policy_json, etag) VALUES (?, ?, ?)");
    s.Bind(1, resource).Bind(2, PolicyToJson(p)).Bind(3, p.etag);
    return s.Run();
  }
};

AuthStore::AuthStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AuthStore::~AuthStore() = default;

Result<std::unique_ptr<AuthStore>> AuthStore::Open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  if (path != ":memory:") {
    std::error_code ec;
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  }
  int rc =
      sqlite3_open_v2(path.c_str(), &impl->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string m = impl->db != nullptr ? sqlite3_errmsg(impl->db) : "out of memory";
    return Unavailable("cannot open the auth store " + path + ": " + m);
  }
  TRAINYARD_RETURN_IF_ERROR(Exec(impl->db, "PRAGMA busy_timeout = 5000"));
  if (path != ":memory:") {
    TRAINYARD_RETURN_IF_ERROR(Exec(impl->db, "PRAGMA journal_mode = WAL"));
  }
  TRAINYARD_RETURN_IF_ERROR(
      Exec(impl->db, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON"));
  TRAINYARD_RETURN_IF_ERROR(Migrate(impl->db, path));
  TRAINYARD_RETURN_IF_ERROR(impl->Load());
  return std::unique_ptr<AuthStore>(new AuthStore(std::move(impl)));
}

namespace {

constexpr char kJobTokenPrefix[] = "ty1j.";

std::string JobMac(const std::string& secret, std::string_view subject) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const std::string data = "trainyard job credential:" + std::string(subject);
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return Base64Url(std::string_view(reinterpret_cast<const char*>(out), len));
}

}  // namespace

std::string AuthStore::JobToken(std::string_view project, std::string_view job) const {
  const std::string subject = std::string(project) + "/" + std::string(job);
  return kJobTokenPrefix + subject + "." + JobMac(impl_->secret, subject);
}

Result<std::pair<std::string, std::string>> AuthStore::VerifyJobToken(
    std::string_view token) const {
  const size_t prefix = sizeof(kJobTokenPrefix) - 1;
  size_t dot = token.rfind('.');
  if (token.substr(0, prefix) != kJobTokenPrefix || dot == std::string_view::npos || dot < prefix) {
    return Unauthenticated(
        "Request had invalid authentication credentials: the job credential is malformed.");
  }
  std::string_view subject = token.substr(prefix, dot - prefix);
  size_t slash = subject.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == subject.size() ||
      subject.find('/', slash + 1) != std::string_view::npos) {
    return Unauthenticated(
        "Request had invalid authentication credentials: the job credential is malformed.");
  }
  const std::string expected = JobMac(impl_->secret, subject);
  if (!ConstantTimeEqual(expected, token.substr(dot + 1))) {
    return Unauthenticated(
        "Request had invalid authentication credentials: the job credential is not valid.");
  }
  return std::make_pair(std::string(subject.substr(0, slash)),
                        std::string(subject.substr(slash + 1)));
}

Result<Principal> AuthStore::CreatePrincipal(std::string_view email, PrincipalKind kind, bool admin,
                                             std::string_view description, Timestamp now) {
  TRAINYARD_RETURN_IF_ERROR(ValidateEmail(email, "email"));
  if (description.size() > 1024) {
    return Status(StatusCode::kInvalidArgument, "description is longer than 1024 characters")
        .AddViolation("description", "at most 1024 characters");
  }
  std::lock_guard<std::mutex> w(impl_->write_mu);
  {
    std::shared_lock<std::shared_mutex> r(impl_->cache_mu);
    if (impl_->principals.count(email) > 0) {
      return AlreadyExists("Principal " + std::string(email) + " already exists");
    }
  }
  Principal p;
  p.email = std::string(email);
  p.kind = kind;
  p.admin = admin;
  p.created = now;
  p.description = std::string(description);
  Stmt s(impl_->db,
         "INSERT INTO principals (email, kind, admin, disabled, created, description) "
         "VALUES (?, ?, ?, 0, ?, ?)");
  s.Bind(1, p.email)
      .Bind(2, int64_t{kind == PrincipalKind::kServiceAccount ? 1 : 0})
      .Bind(3, int64_t{admin ? 1 : 0})
      .Bind(4, now)
      .Bind(5, p.description);
  TRAINYARD_RETURN_IF_ERROR(s.Run());
  std::unique_lock<std::shared_mutex> c(impl_->cache_mu);
  impl_->principals[p.email] = p;
  return p;
}

std::vector<Principal> AuthStore::ListPrincipals() const {
  std::shared_lock<std::shared_mutex> r(impl_->cache_mu);
  std::vector<Principal> out;
  for (const auto& [_, p] : impl_->principals) out.push_back(p);
  return out;
}

Result<Principal> AuthStore::GetPrincipal(std::string_view email) const {
  std::shared_lock<std::shared_mutex> r(impl_->cache_mu);
  auto it = impl_->principals.find(email);
  if (it == impl_->principals.end()) {
    return NotFound("Principal " + std::string(email) + " not found");
  }
  return it->second;
}

size_t AuthStore::principal_count() const {
  std::shared_lock<std::shared_mutex> r(impl_->cache_mu);
  return impl_->principals.size();
}

Status AuthStore::SetDisabled(std::string_view email, bool disabled) {
  std::lock_guard<std::mutex> w(impl_->write_mu);
  {
    std::shared_lock<std::shared_mutex> r(impl_->cache_mu);
    if (impl_->principals.count(email) == 0) {
      return NotFound("Principal " + std::string(email) + " not found");
    }
  }
  Stmt s(impl_->db, "UPDATE principals SET disabled = ? WHERE email = ?");
  s.Bind(1, int64_t{disabled ? 1 : 0}).Bind(2, email);
  TRAINYARD_RETURN_IF_ERROR(s.Run());
  std::unique_lock<std::shared_mutex> c(impl_->cache_mu);
  impl_->principals.find(email)->second.disabled = disabled;
  return Status::Ok();
}

Result<NewToken> AuthStore::CreateToken(std::string_view email, Timestamp expires,
                                        std::string_view description, Timestamp now) {
  if (expires != 0 && expires <= now) {
    return Status(StatusCode::kInvalidArgument, "the token's expiry time is in the past")
        .AddViolation("expireTime", "must be in the future");
  }
  if (description.size() > 1024) {
    return Status(StatusCode::kInvalidArgument, "description is longer than 1024 characters")
        .AddViolation("description", "at most 1024 characters");
  }
  unsigned char id_bytes[kIdHex / 2];
  unsigned char secret[32];
  TRAINYARD_RETURN_IF_ERROR(RandomBytes(id_bytes, sizeof id_bytes));
  TRAINYARD_RETURN_IF_ERROR(RandomBytes(secret, sizeof secret));
  NewToken t;
  t.info.id = Hex(std::string_view(reinterpret_cast<const char*>(id_bytes), sizeof id_bytes));
  t.info.principal = std::string(email);
  t.info.created = now;
  t.info.expires = expires;
  t.info.description = std::string(description);
  t.secret = std::string(kTokenPrefix) + t.info.id + "." +
             Base64Url(std::string_view(reinterpret_cast<const char*>(secret), sizeof secret));
  StoredToken stored{t.info, Sha256Hex(t.secret)};
  std::lock_guard<std::mutex> w(impl_->write_mu);
  {
    std::shared_lock<std::shared_mutex> r(impl_->cache_mu);
    if (impl_->principals.count(email) == 0) {
      return NotFound("Principal " + std::string(email) + " not found");
    }
  }
  Stmt s(impl_->db,
         "INSERT INTO tokens (id, principal, sha256, created, expires, revoked, description) "
         "VALUES (?, ?, ?, ?, ?, 0, ?)");
  s.Bind(1, t.info.id)
      .Bind(2, t.info.principal)
      .Bind(3, stored.sha256)
      .Bind(4, now)
      .Bind(5, expires)
      .Bind(6, t.info.description);
  TRAINYARD_RETURN_IF_ERROR(s.Run());
  std::unique_lock<std::shared_mutex> c(impl_->cache_mu);
  impl_->tokens[t.info.id] = std::move(stored);
  return t;
}

std::vector<TokenInfo> AuthStore::ListTokens(std::string_view email) const {
  std::shared_lock<std::shared_mutex> r(impl_->cache_mu);
  std::vector<TokenInfo> out;
  for (const auto& [_, t] : impl_->tokens) {
    if (email.empty() || t.info.principal == email) out.push_back(t.info);
  }
  std::sort(out.begin(), out.end(), [](const TokenInfo& a, const TokenInfo& b) {
    return std::tie(a.created, a.id) < std::tie(b.created, b.id);
  });
  return out;
}

Status AuthStore::RevokeToken(std::string_view id, Timestamp now) {
  std::lock_guard<std::mutex> w(impl_->write_mu);
  {
    std::shared_lock<std::shared_mutex> r(impl_->cache_mu);
    auto it = impl_->tokens.find(id);
    if (it == impl_->tokens.end()) return NotFound("Token " + std::string(id) + " not found");
    if (it->second.info.revoked != 0) return Status::Ok();
  }
  Stmt s(impl_->db, "UPDATE tokens SET revoked = ? WHERE id = ?");
  s.Bind(1, now).Bind(2, id);
  TRAINYARD_RETURN_IF_ERROR(s.Run());
  std::unique_lock<std::shared_mutex> c(impl_->cache_mu);
  impl_->tokens.find(id)->second.info.revoked = now;
  return Status::Ok();
}

Result<Principal> AuthStore::Authenticate(std::string_view token, Timestamp now) const {
  if (!LooksLikeToken(token)) {
    return Unauthenticated(
        "Request had invalid authentication credentials: the bearer token is malformed (expected "
        "a Trainyard API token, ty1.<id>.<secret>).");
  }
  const std::string hash = Sha256Hex(token);
  std::string_view id = token.substr(sizeof(kTokenPrefix) - 1, kIdHex);
  std::shared_lock<std::shared_mutex> r(impl_->cache_mu);
  auto it = impl_->tokens.find(id);
  // The hash is compared in constant time even when the id is unknown.
  const std::string& expected = it == impl_->tokens.end() ? hash : it->second.sha256;
  bool match = ConstantTimeEqual(hash, expected) && it != impl_->tokens.end();
  if (!match) {
    return Unauthenticated(
        "Request had invalid authentication credentials: the token is not known.");
  }
  const TokenInfo& info = it->second.info;
  if (info.revoked != 0) {
    return Unauthenticated("Request had invalid authentication credentials: token " + info.id +
                           " was revoked.");
  }
  if (info.expires != 0 && info.expires <= now) {
    return Unauthenticated("Request had invalid authentication credentials: token " + info.id +
                           " expired at " + FormatRfc3339(info.expires) + ".");
  }
  auto p = impl_->principals.find(info.principal);
  if (p == impl_->principals.end() || p->second.disabled) {
    return Unauthenticated("Request had invalid authentication credentials: principal " +
                           info.principal + " is disabled.");
  }
  return p->second;
}

Policy AuthStore::GetPolicy(std::string_view resource) const {
  std::shared_lock<std::shared_mutex> r(impl_->cache_mu);
  auto it = impl_->policies.find(resource);
  return it == impl_->policies.end() ? Policy{} : it->second;
}

Result<Policy> AuthStore::SetPolicy(std::string_view resource, const SetPolicyRequest& request) {
  std::lock_guard<std::mutex> w(impl_->write_mu);
  Policy current = GetPolicy(resource);
  if (request.check_etag) {
    const std::string stored = current.etag.empty() ? "ACAB" : current.etag;
    if (request.policy.etag != stored) {
      return Aborted(
          "There were concurrent policy changes. Please retry the whole read-modify-write with "
          "exponential backoff. (etag '" +
          request.policy.etag.substr(0, 64) + "' is not the current one)");
    }
  }
  Policy next = current;
  if (request.update_bindings) next.bindings = request.policy.bindings;
  next.version = 1;
  next.etag = NewEtag();
  TRAINYARD_RETURN_IF_ERROR(impl_->WritePolicy(std::string(resource), next));
  std::unique_lock<std::shared_mutex> c(impl_->cache_mu);
  impl_->policies[std::string(resource)] = next;
  return next;
}

Result<Policy> AuthStore::PutPolicy(std::string_view resource, Policy policy) {
  std::lock_guard<std::mutex> w(impl_->write_mu);
  policy.version = 1;
  policy.etag = NewEtag();
  TRAINYARD_RETURN_IF_ERROR(impl_->WritePolicy(std::string(resource), policy));
  std::unique_lock<std::shared_mutex> c(impl_->cache_mu);
  impl_->policies[std::string(resource)] = policy;
  return policy;
}

bool AuthStore::Check(const Principal& principal, std::string_view project_resource,
                      std::string_view resource, std::string_view permission) const {
  if (principal.admin) return true;
  if (!principal.job_project.empty()) {
    bool storage = false;
    for (std::string_view p : kJobPermissions) storage = storage || p == permission;
    if (!storage) return false;
    // The project's service agent: its project's buckets, nothing else.
    if (!principal.job_as_service_account) {
      return project_resource == ProjectResource(principal.job_project);
    }
    // A job run as a service account: what the policies grant that account (below).
  }
  const std::string member = principal.member();
  std::shared_lock<std::shared_mutex> r(impl_->cache_mu);
  for (std::string_view name : {project_resource, resource}) {
    if (name.empty()) continue;
    auto it = impl_->policies.find(name);
    if (it != impl_->policies.end() && PolicyGrants(it->second, member, permission)) return true;
  }
  return false;
}

Status AuthStore::AppendAudit(AuditRecord& record) {
  std::lock_guard<std::mutex> w(impl_->write_mu);
  Stmt s(impl_->db,
         "INSERT INTO audit_log (time, principal, method, resource, project, http_status, code, "
         "message, caller_ip) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.Bind(1, record.time)
      .Bind(2, record.principal)
      .Bind(3, record.method)
      .Bind(4, record.resource)
      .Bind(5, record.project)
      .Bind(6, int64_t{record.http_status})
      .Bind(7, static_cast<int64_t>(record.code))
      .Bind(8, record.message)
      .Bind(9, record.caller_ip);
  TRAINYARD_RETURN_IF_ERROR(s.Run());
  record.id = sqlite3_last_insert_rowid(impl_->db);
  return Status::Ok();
}

Result<std::vector<AuditRecord>> AuthStore::ListAudit(std::string_view project, int64_t after_id,
                                                      int limit) const {
  std::lock_guard<std::mutex> w(impl_->write_mu);
  Stmt s(impl_->db,
         project.empty()
             ? "SELECT id, time, principal, method, resource, project, http_status, code, "
               "message, caller_ip FROM audit_log WHERE id > ?1 ORDER BY id LIMIT ?3"
             : "SELECT id, time, principal, method, resource, project, http_status, code, "
               "message, caller_ip FROM audit_log WHERE project = ?2 AND id > ?1 ORDER BY id "
               "LIMIT ?3");
  s.Bind(1, after_id);
  if (!project.empty()) s.Bind(2, project);
  s.Bind(3, int64_t{limit});
  std::vector<AuditRecord> out;
  for (;;) {
    TRAINYARD_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    AuditRecord a;
    a.id = s.Int(0);
    a.time = s.Int(1);
    a.principal = s.Text(2);
    a.method = s.Text(3);
    a.resource = s.Text(4);
    a.project = s.Text(5);
    a.http_status = static_cast<int>(s.Int(6));
    a.code = static_cast<StatusCode>(s.Int(7));
    a.message = s.Text(8);
    a.caller_ip = s.Text(9);
    out.push_back(std::move(a));
  }
  return out;
}

Result<bool> BootstrapAdmin(AuthStore& store, std::string_view email, const std::string& token_path,
                            Timestamp now) {
  if (store.principal_count() > 0) return false;
  TRAINYARD_ASSIGN_OR_RETURN(Principal p,
                             store.CreatePrincipal(email, PrincipalKind::kUser, /*admin=*/true,
                                                   "created on the daemon's first start", now));
  TRAINYARD_ASSIGN_OR_RETURN(NewToken t, store.CreateToken(p.email, 0, "bootstrap", now));
  std::error_code ec;
  auto parent = std::filesystem::path(token_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  int fd = ::open(token_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Internal("cannot write the administrator token to " + token_path + ": " +
                    std::strerror(errno));
  }
  ::fchmod(fd, 0600);
  const std::string text = t.secret + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return Internal("cannot write the administrator token to " + token_path);
  return true;
}

}  // namespace trainyard::auth
