// Every route declares who may call it, in terms the IAM model knows (docs/security.md).
#include "routes.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "trainyard/auth/iam.h"
#include "trainyard/storage/storage_http.h"

namespace trainyard::api {
namespace {

bool IsMarker(const char* p) {
  return p == std::string(kPublic) || p == std::string(kAnyPrincipal) || p == std::string(kAdmin);
}

TEST(RoutesTest, EveryRouteNamesAKnownPermission) {
  for (const Route& r : Routes()) {
    ASSERT_NE(r.permission, nullptr) << r.method << " " << r.pattern << " declares no permission";
    EXPECT_TRUE(IsMarker(r.permission) || auth::IsKnownPermission(r.permission))
        << r.method << " " << r.pattern << ": " << r.permission;
    // A permission checked on a resource needs the resource.
    if (!IsMarker(r.permission)) {
      EXPECT_NE(r.scope, Scope::kDaemon) << r.pattern;
    }
    // Mutations are audited under a method name.
    if (r.mutating) {
      EXPECT_TRUE(r.discovery.id != nullptr || r.name != nullptr) << r.pattern;
    }
  }
}

TEST(RoutesTest, OnlyOperationalRoutesArePublic) {
  std::set<std::string> public_routes;
  for (const Route& r : Routes()) {
    if (r.permission != nullptr && r.permission == std::string(kPublic)) {
      public_routes.insert(std::string(r.method) + " " + r.pattern);
      // The console's sign-in checks the token in its body itself.
      EXPECT_TRUE(!r.mutating || r.pattern == std::string("/console/session")) << r.pattern;
    }
  }
  EXPECT_EQ(public_routes,
            (std::set<std::string>{"GET /discovery/v1/apis/ml/v1/rest", R"(GET /\$discovery/rest)",
                                   "GET /v1/help", "GET /healthz", "GET /readyz",
                                   "POST /console/session"}));
}

TEST(RoutesTest, EveryStorageOperationNamesAKnownPermission) {
  for (const auto& op : storage::StorageOperations()) {
    EXPECT_TRUE(auth::IsKnownPermission(op.permission)) << op.name;
    if (op.source_permission != nullptr) {
      EXPECT_TRUE(auth::IsKnownPermission(op.source_permission)) << op.name;
    }
  }
}

}  // namespace
}  // namespace trainyard::api
