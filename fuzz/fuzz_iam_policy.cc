// IAM policies and the requests that carry them (setIamPolicy bodies, testIamPermissions
// bodies), as the API reads them from callers: a parse never crashes, an accepted policy prints
// to JSON that parses back to the same policy, and an accepted SetIamPolicyRequest's policy
// holds only known roles and valid members.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "trainyard/auth/iam.h"

namespace ta = trainyard::auth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (auto kind :
       {ta::ResourceKind::kProject, ta::ResourceKind::kJob, ta::ResourceKind::kBucket}) {
    auto p = ta::ParsePolicy(in, kind);
    if (p.ok()) {
      auto again = ta::ParsePolicy(ta::PolicyToJson(*p), kind);
      if (!again.ok() || again->bindings.size() != p->bindings.size()) std::abort();
      for (size_t i = 0; i < p->bindings.size(); ++i) {
        if (again->bindings[i].role != p->bindings[i].role ||
            again->bindings[i].members != p->bindings[i].members) {
          std::abort();
        }
      }
    }
    auto req = ta::ParseSetPolicyRequest(in, kind);
    if (req.ok()) {
      for (const auto& b : req->policy.bindings) {
        if (ta::FindRole(b.role) == nullptr || b.members.empty()) std::abort();
        for (const auto& m : b.members) {
          if (!ta::ValidateMember(m, "m").ok()) std::abort();
        }
      }
    }
  }
  (void)ta::ParseTestPermissionsRequest(in);
  return 0;
}
