#include "trainyard/auth/iam.h"

#include <gtest/gtest.h>

#include <set>

namespace trainyard::auth {
namespace {

std::string FieldOf(const Status& st) {
  return st.violations().empty() ? "" : st.violations()[0].field;
}

TEST(Roles, MlRolesHaveTheDocumentedJobPermissions) {
  // compat §13.3
  EXPECT_TRUE(RoleGrants("roles/ml.editor", "ml.jobs.cancel"));
  EXPECT_FALSE(RoleGrants("roles/ml.editor", "ml.jobs.setIamPolicy"));
  EXPECT_TRUE(RoleGrants("roles/ml.developer", "ml.jobs.create"));
  EXPECT_FALSE(RoleGrants("roles/ml.developer", "ml.jobs.cancel"));
  EXPECT_FALSE(RoleGrants("roles/ml.developer", "ml.jobs.update"));
  EXPECT_TRUE(RoleGrants("roles/ml.viewer", "ml.jobs.getIamPolicy"));
  EXPECT_FALSE(RoleGrants("roles/ml.viewer", "ml.jobs.create"));
  EXPECT_TRUE(RoleGrants("roles/ml.jobOwner", "ml.jobs.setIamPolicy"));
  EXPECT_FALSE(RoleGrants("roles/ml.jobOwner", "storage.objects.get"));
  for (auto p : AllPermissions()) {
    EXPECT_EQ(RoleGrants("roles/ml.admin", p), p.substr(0, 3) == "ml.") << p;
  }
}

TEST(Roles, NoPredefinedRoleAdministersTheDaemonAndEveryPermissionIsGrantable) {
  std::set<std::string_view> granted;
  for (const RoleInfo& r : PredefinedRoles()) {
    EXPECT_FALSE(RoleGrants(r.name, kAdminPermission)) << r.name;
    for (auto p : r.permissions) {
      EXPECT_TRUE(IsKnownPermission(p)) << r.name << " " << p;
      granted.insert(p);
    }
  }
  for (auto p : AllPermissions()) {
    if (p != kAdminPermission) {
      EXPECT_TRUE(granted.count(p)) << p << " is in no role";
    }
  }
  EXPECT_EQ(FindRole("roles/ml.nothing"), nullptr);
  EXPECT_FALSE(RoleGrants("roles/ml.nothing", "ml.jobs.get"));
}

TEST(Roles, StorageRolesAreTheSimplifiedSet) {
  EXPECT_TRUE(RoleGrants("roles/storage.objectViewer", "storage.objects.get"));
  EXPECT_FALSE(RoleGrants("roles/storage.objectViewer", "storage.objects.create"));
  EXPECT_TRUE(RoleGrants("roles/storage.objectAdmin", "storage.objects.delete"));
  EXPECT_FALSE(RoleGrants("roles/storage.objectAdmin", "storage.buckets.delete"));
  EXPECT_TRUE(RoleGrants("roles/storage.admin", "storage.buckets.setIamPolicy"));
  EXPECT_FALSE(RoleGrants("roles/editor", "ml.jobs.setIamPolicy"));
  EXPECT_TRUE(RoleGrants("roles/owner", "resourcemanager.projects.setIamPolicy"));
  EXPECT_FALSE(RoleGrants("roles/viewer", "ml.jobs.create"));
}

TEST(Members, EmailShapedPrincipalsOnly) {
  EXPECT_TRUE(ValidateMember("user:alice@example.com", "m").ok());
  EXPECT_TRUE(ValidateMember("serviceAccount:sa@p.iam.gserviceaccount.com", "m").ok());
  EXPECT_TRUE(ValidateMember("allAuthenticatedUsers", "m").ok());
  for (const char* bad : {"alice@example.com", "user:", "user:alice", "user:@example.com",
                          "user:a@b", "user:a b@example.com", "group:g@example.com", "allUsers",
                          "user:a@example..com", "user:a@example.com."}) {
    Status st = ValidateMember(bad, "policy.bindings[0].members[0]");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(FieldOf(st), "policy.bindings[0].members[0]") << bad;
  }
  EXPECT_FALSE(ValidateEmail(std::string(250, 'a') + "@example.com", "email").ok());
}

TEST(Policy, ParseMergesDeduplicatesAndSorts) {
  auto p = ParsePolicy(R"({"version":1,"etag":"BwX=","bindings":[
      {"role":"roles/ml.viewer","members":["user:b@x.io","user:a@x.io","user:a@x.io"]},
      {"role":"roles/ml.admin","members":[]},
      {"role":"roles/ml.viewer","members":["serviceAccount:s@x.io"]}]})",
                       ResourceKind::kProject);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->bindings.size(), 1u);
  EXPECT_EQ(p->bindings[0].role, "roles/ml.viewer");
  EXPECT_EQ(p->bindings[0].members,
            (std::vector<std::string>{"serviceAccount:s@x.io", "user:a@x.io", "user:b@x.io"}));
  EXPECT_EQ(p->etag, "BwX=");
  EXPECT_EQ(PolicyToJson(*p),
            R"({"bindings":[{"members":["serviceAccount:s@x.io","user:a@x.io","user:b@x.io"],)"
            R"("role":"roles/ml.viewer"}],"etag":"BwX=","version":1})");
}

TEST(Policy, BadPoliciesNameTheField) {
  struct Case {
    const char* json;
    ResourceKind kind;
    const char* field;
  } cases[] = {
      {R"({"bindings":[{"role":"roles/ml.superuser","members":["user:a@x.io"]}]})",
       ResourceKind::kProject, "policy.bindings[0].role"},
      {R"({"bindings":[{"role":"roles/ml.viewer","members":["user:a@x.io","bob"]}]})",
       ResourceKind::kProject, "policy.bindings[0].members[1]"},
      {R"({"bindings":[{"role":"roles/ml.viewer","members":"user:a@x.io"}]})",
       ResourceKind::kProject, "policy.bindings[0].members"},
      {R"({"bindings":[{"role":"roles/ml.viewer","members":["user:a@x.io"],
           "condition":{"expression":"true"}}]})",
       ResourceKind::kProject, "policy.bindings[0].condition"},
      {R"({"bindings":[{"members":["user:a@x.io"]}]})", ResourceKind::kProject,
       "policy.bindings[0].role"},
      {R"({"bindings":[{"role":"roles/ml.viewer","member":["user:a@x.io"]}]})",
       ResourceKind::kProject, "policy.bindings[0].member"},
      {R"({"bindingz":[]})", ResourceKind::kProject, "policy.bindingz"},
      {R"({"version":2})", ResourceKind::kProject, "policy.version"},
      {R"({"bindings":[{"role":"roles/storage.admin","members":["user:a@x.io"]}]})",
       ResourceKind::kJob, "policy.bindings[0].role"},
      {R"({"bindings":[{"role":"roles/ml.jobOwner","members":["user:a@x.io"]}]})",
       ResourceKind::kBucket, "policy.bindings[0].role"},
      {R"({"bindings":{}})", ResourceKind::kProject, "policy.bindings"},
  };
  for (const auto& c : cases) {
    auto p = ParsePolicy(c.json, c.kind);
    ASSERT_FALSE(p.ok()) << c.json;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << c.json;
    EXPECT_EQ(FieldOf(p.status()), c.field) << c.json;
  }
  EXPECT_FALSE(ParsePolicy("[1]", ResourceKind::kProject).ok());
  EXPECT_FALSE(ParsePolicy("{", ResourceKind::kProject).ok());
  EXPECT_FALSE(ParsePolicy(std::string(kMaxPolicyBytes + 1, ' '), ResourceKind::kProject).ok());
}

TEST(Policy, TooManyMembersIsRefused) {
  std::string json = R"({"bindings":[{"role":"roles/ml.viewer","members":[)";
  for (size_t i = 0; i <= kMaxPolicyMembers; ++i) {
    json += (i ? "," : "") + std::string("\"user:u") + std::to_string(i) + "@x.io\"";
  }
  json += "]}]}";
  auto p = ParsePolicy(json, ResourceKind::kProject);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(FieldOf(p.status()), "policy.bindings[0].members");
}

TEST(SetPolicyRequest, MaskDefaultsToBindingsAndEtag) {
  auto r = ParseSetPolicyRequest(R"({"policy":{"etag":"abc="}})", ResourceKind::kJob);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->update_bindings);
  EXPECT_TRUE(r->check_etag);
  r = ParseSetPolicyRequest(R"({"policy":{}})", ResourceKind::kJob);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->check_etag);  // no etag: last writer wins, as Google does
  r = ParseSetPolicyRequest(R"({"policy":{"etag":"abc="},"updateMask":"bindings"})",
                            ResourceKind::kJob);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->check_etag);
  auto bad = ParseSetPolicyRequest(R"({"policy":{},"updateMask":"auditConfigs,owner"})",
                                   ResourceKind::kJob);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(FieldOf(bad.status()), "updateMask");
  EXPECT_EQ(
      FieldOf(ParseSetPolicyRequest(R"({"updateMask":"bindings"})", ResourceKind::kJob).status()),
      "policy");
}

TEST(TestPermissions, NoWildcards) {
  auto ok = ParseTestPermissionsRequest(R"({"permissions":["ml.jobs.get","x.y.z"]})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 2u);
  auto bad = ParseTestPermissionsRequest(R"({"permissions":["ml.jobs.get","ml.jobs.*"]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(FieldOf(bad.status()), "permissions[1]");
  EXPECT_FALSE(ParseTestPermissionsRequest(R"({"permissions":[1]})").ok());
  EXPECT_FALSE(ParseTestPermissionsRequest(R"({"perms":[]})").ok());
}

TEST(Evaluation, MembersAndAllAuthenticatedUsers) {
  Policy p = CreatorPolicy("user:c@x.io");
  EXPECT_TRUE(PolicyGrants(p, "user:c@x.io", "ml.jobs.cancel"));
  EXPECT_FALSE(PolicyGrants(p, "user:d@x.io", "ml.jobs.get"));
  EXPECT_FALSE(PolicyGrants(p, "serviceAccount:c@x.io", "ml.jobs.get"));
  p.bindings.push_back({"roles/ml.viewer", {"allAuthenticatedUsers"}});
  EXPECT_TRUE(PolicyGrants(p, "user:d@x.io", "ml.jobs.get"));
  EXPECT_FALSE(PolicyGrants(p, "user:d@x.io", "ml.jobs.cancel"));
}

}  // namespace
}  // namespace trainyard::auth
