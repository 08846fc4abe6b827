#include "trainyard/auth/auth_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace trainyard::auth {
namespace {

constexpr Timestamp kNow = 1'700'000'000'000'000;

std::unique_ptr<AuthStore> Memory() {
  auto s = AuthStore::Open(":memory:");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ty_auth_test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Tokens, AuthenticateReturnsThePrincipal) {
  auto store = Memory();
  ASSERT_TRUE(store->CreatePrincipal("a@x.io", PrincipalKind::kUser, false, "", kNow).ok());
  auto t = store->CreateToken("a@x.io", 0, "laptop", kNow);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(LooksLikeToken(t->secret));
  EXPECT_EQ(t->secret.find(t->info.id), 4u);
  auto p = store->Authenticate(t->secret, kNow);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->email, "a@x.io");
  EXPECT_EQ(p->member(), "user:a@x.io");
  // Two tokens never share a secret.
  auto t2 = store->CreateToken("a@x.io", 0, "", kNow);
  ASSERT_TRUE(t2.ok());
  EXPECT_NE(t->secret, t2->secret);
}

TEST(Tokens, BadTokensAreUnauthenticatedAndNeverEchoed) {
  auto store = Memory();
  ASSERT_TRUE(store->CreatePrincipal("a@x.io", PrincipalKind::kUser, false, "", kNow).ok());
  auto t = store->CreateToken("a@x.io", kNow + 1000, "", kNow);
  ASSERT_TRUE(t.ok());
  std::string tampered = t->secret;
  tampered.back() = tampered.back() == 'A' ? 'B' : 'A';
  std::string unknown_id = t->secret;
  unknown_id[4] = unknown_id[4] == '0' ? '1' : '0';
  for (const std::string& bad : {std::string(), std::string("trainyard"), tampered, unknown_id,
                                 t->secret + "x", std::string(100000, 'a')}) {
    auto p = store->Authenticate(bad, kNow);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kUnauthenticated);
    if (bad.size() > 20) {
      EXPECT_EQ(p.status().message().find(bad.substr(bad.size() - 8)), std::string::npos);
    }
  }
  // Expired.
  auto expired = store->Authenticate(t->secret, kNow + 1000);
  ASSERT_FALSE(expired.ok());
  EXPECT_NE(expired.status().message().find("expired"), std::string::npos);
  EXPECT_TRUE(store->Authenticate(t->secret, kNow + 999).ok());
  // Revoked.
  ASSERT_TRUE(store->RevokeToken(t->info.id, kNow + 1).ok());
  auto revoked = store->Authenticate(t->secret, kNow + 2);
  ASSERT_FALSE(revoked.ok());
  EXPECT_NE(revoked.status().message().find("revoked"), std::string::npos);
  EXPECT_EQ(store->RevokeToken("0123456789abcdef", kNow).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->CreateToken("a@x.io", kNow - 1, "", kNow).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->CreateToken("nobody@x.io", 0, "", kNow).status().code(), StatusCode::kNotFound);
}

TEST(Tokens, DisabledPrincipalCannotAuthenticate) {
  auto store = Memory();
  ASSERT_TRUE(store->CreatePrincipal("a@x.io", PrincipalKind::kUser, false, "", kNow).ok());
  auto t = store->CreateToken("a@x.io", 0, "", kNow);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(store->SetDisabled("a@x.io", true).ok());
  EXPECT_EQ(store->Authenticate(t->secret, kNow).status().code(), StatusCode::kUnauthenticated);
  ASSERT_TRUE(store->SetDisabled("a@x.io", false).ok());
  EXPECT_TRUE(store->Authenticate(t->secret, kNow).ok());
}

TEST(Principals, EmailShapedAndUnique) {
  auto store = Memory();
  EXPECT_EQ(
      store->CreatePrincipal("not-an-email", PrincipalKind::kUser, false, "", kNow).status().code(),
      StatusCode::kInvalidArgument);
  ASSERT_TRUE(
      store->CreatePrincipal("sa@p.iam.x.io", PrincipalKind::kServiceAccount, false, "", kNow)
          .ok());
  EXPECT_EQ(store->CreatePrincipal("sa@p.iam.x.io", PrincipalKind::kUser, false, "", kNow)
                .status()
                .code(),
            StatusCode::kAlreadyExists);
  auto p = store->GetPrincipal("sa@p.iam.x.io");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->member(), "serviceAccount:sa@p.iam.x.io");
}

TEST(Policies, EtagRaceIsAbortedAndChangesNothing) {
  auto store = Memory();
  Policy empty = store->GetPolicy("projects/p");
  EXPECT_TRUE(empty.bindings.empty());
  auto req = ParseSetPolicyRequest(
      R"({"policy":{"etag":"ACAB","bindings":[{"role":"roles/ml.viewer","members":["user:a@x.io"]}]}})",
      ResourceKind::kProject);
  ASSERT_TRUE(req.ok());
  auto first = store->SetPolicy("projects/p", *req);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_NE(first->etag, "ACAB");
  // A second writer read the empty policy too: its etag is stale.
  auto second = store->SetPolicy("projects/p", *req);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAborted);
  EXPECT_EQ(store->GetPolicy("projects/p").etag, first->etag);
  Principal a{.email = "a@x.io"};
  EXPECT_TRUE(store->Check(a, "projects/p", "", "ml.jobs.get"));
  EXPECT_FALSE(store->Check(a, "projects/p", "", "ml.jobs.create"));
  EXPECT_FALSE(store->Check(a, "projects/q", "", "ml.jobs.get"));
}

TEST(Policies, JobPolicyAddsToTheProjects) {
  auto store = Memory();
  ASSERT_TRUE(store->PutPolicy("projects/p/jobs/j", CreatorPolicy("user:c@x.io")).ok());
  Principal c{.email = "c@x.io"};
  Principal d{.email = "d@x.io"};
  Principal admin{.email = "root@x.io", .admin = true};
  EXPECT_TRUE(store->Check(c, "projects/p", "projects/p/jobs/j", "ml.jobs.cancel"));
  EXPECT_FALSE(store->Check(c, "projects/p", "projects/p/jobs/k", "ml.jobs.cancel"));
  EXPECT_FALSE(store->Check(d, "projects/p", "projects/p/jobs/j", "ml.jobs.get"));
  EXPECT_TRUE(store->Check(admin, "projects/q", "", "trainyard.admin"));
}

TEST(Persistence, EverythingSurvivesReopen) {
  TempDir dir;
  const std::string path = dir.path() + "/auth.db";
  std::string secret, etag;
  {
    auto store = AuthStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->CreatePrincipal("a@x.io", PrincipalKind::kUser, false, "d", kNow).ok());
    auto t = (*store)->CreateToken("a@x.io", 0, "", kNow);
    ASSERT_TRUE(t.ok());
    secret = t->secret;
    auto p = (*store)->PutPolicy("projects/p", CreatorPolicy("user:a@x.io"));
    ASSERT_TRUE(p.ok());
    etag = p->etag;
    AuditRecord r{.time = kNow,
                  .principal = "a@x.io",
                  .method = "ml.projects.jobs.create",
                  .resource = "projects/p/jobs/j",
                  .project = "p",
                  .http_status = 200};
    ASSERT_TRUE((*store)->AppendAudit(r).ok());
    EXPECT_EQ(r.id, 1);
  }
  // The database holds the token's hash, not the token.
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ifstream wal(path + "-wal", std::ios::binary);
  bytes.append((std::istreambuf_iterator<char>(wal)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.find(secret.substr(21)), std::string::npos);
  auto store = AuthStore::Open(path);
  ASSERT_TRUE(store.ok());
  auto p = (*store)->Authenticate(secret, kNow);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->description, "d");
  EXPECT_EQ((*store)->GetPolicy("projects/p").etag, etag);
  auto audit = (*store)->ListAudit("p", 0, 10);
  ASSERT_TRUE(audit.ok());
  ASSERT_EQ(audit->size(), 1u);
  EXPECT_EQ((*audit)[0].method, "ml.projects.jobs.create");
  EXPECT_TRUE((*store)->ListAudit("q", 0, 10)->empty());
}

TEST(Bootstrap, FirstStartOnlyAndTheFileIsOwnerOnly) {
  TempDir dir;
  auto store = Memory();
  const std::string file = dir.path() + "/secrets/admin-token";
  auto made = BootstrapAdmin(*store, "admin@trainyard.local", file, kNow);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_TRUE(*made);
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(file);
  std::string token;
  std::getline(in, token);
  auto p = store->Authenticate(token, kNow);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->admin);
  auto again = BootstrapAdmin(*store, "admin@trainyard.local", file + "2", kNow);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  EXPECT_FALSE(std::filesystem::exists(file + "2"));
}

}  // namespace
}  // namespace trainyard::auth

namespace trainyard::auth {
namespace {

TEST(JobTokens, VerifyOnlyTheDaemonsOwnAndScopeToTheProjectsBuckets) {
  auto store = Memory();
  const std::string t = store->JobToken("p", "job_1");
  auto subject = store->VerifyJobToken(t);
  ASSERT_TRUE(subject.ok()) << subject.status().ToString();
  EXPECT_EQ(subject->first, "p");
  EXPECT_EQ(subject->second, "job_1");
  // Another daemon's secret, a changed subject, a changed MAC: refused.
  auto other = Memory();
  EXPECT_EQ(other->VerifyJobToken(t).status().code(), StatusCode::kUnauthenticated);
  std::string moved = t;
  moved.replace(moved.find("job_1"), 5, "job_2");
  EXPECT_FALSE(store->VerifyJobToken(moved).ok());
  std::string bad_mac = t;
  bad_mac.back() = bad_mac.back() == 'A' ? 'B' : 'A';
  EXPECT_FALSE(store->VerifyJobToken(bad_mac).ok());
  for (const char* malformed : {"ty1j.", "ty1j.p.x", "ty1j.p/a/b.x", "ty1j./j.x", "ty1j.p/.x"}) {
    EXPECT_FALSE(store->VerifyJobToken(malformed).ok()) << malformed;
  }
  Principal job{.email = "service-1@cloud-ml.google.com.iam.gserviceaccount.com",
                .kind = PrincipalKind::kServiceAccount,
                .job_project = "p",
                .job_id = "job_1"};
  EXPECT_TRUE(store->Check(job, "projects/p", "projects/_/buckets/b", "storage.objects.create"));
  EXPECT_FALSE(store->Check(job, "projects/q", "projects/_/buckets/c", "storage.objects.get"));
  EXPECT_FALSE(store->Check(job, "projects/p", "projects/p/jobs/job_1", "ml.jobs.get"));
  EXPECT_FALSE(store->Check(job, "projects/p", "projects/_/buckets/b", "storage.buckets.delete"));
}

}  // namespace
}  // namespace trainyard::auth
