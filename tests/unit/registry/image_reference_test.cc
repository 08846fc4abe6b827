#include "trainyard/registry/image_reference.h"

#include <gtest/gtest.h>

namespace trainyard::registry {
namespace {

ImageReference Parse(const std::string& text) {
  auto ref = ParseImageReference(text);
  EXPECT_TRUE(ref.ok()) << text << ": " << ref.status().ToString();
  return ref.ok() ? *ref : ImageReference{};
}

std::string Refusal(const std::string& text) {
  auto ref = ParseImageReference(text);
  EXPECT_FALSE(ref.ok()) << text << " was accepted as " << (ref.ok() ? ref->ToString() : "");
  return ref.ok() ? "" : ref.status().message();
}

TEST(ImageReferenceTest, SplitsRegistryPortPathTagAndDigest) {
  const std::string digest = "sha256:" + std::string(64, 'a');
  ImageReference r = Parse("localhost:5000/team/trainer:v1.2-rc_3@" + digest);
  EXPECT_EQ(r.registry, "localhost:5000");
  EXPECT_EQ(r.host, "localhost");
  EXPECT_EQ(r.port, 5000);
  EXPECT_EQ(r.path, "team/trainer");
  EXPECT_EQ(r.tag, "v1.2-rc_3");
  EXPECT_EQ(r.digest, digest);
  EXPECT_TRUE(r.registry_written);
  EXPECT_EQ(r.Repository(), "localhost:5000/team/trainer");
  EXPECT_EQ(r.ToString(), "localhost:5000/team/trainer:v1.2-rc_3@" + digest);

  r = Parse("gcr.io/my-project/trainer");
  EXPECT_EQ(r.registry, "gcr.io");
  EXPECT_EQ(r.port, 0);
  EXPECT_EQ(r.path, "my-project/trainer");
  EXPECT_EQ(r.tag, "");
  EXPECT_EQ(r.digest, "");

  r = Parse("us-central1-docker.pkg.dev/proj/repo/img@" + digest);
  EXPECT_EQ(r.registry, "us-central1-docker.pkg.dev");
  EXPECT_EQ(r.path, "proj/repo/img");
  EXPECT_EQ(r.tag, "");

  r = Parse("127.0.0.1:35000/a__b/c.d/e---f:1");
  EXPECT_EQ(r.registry, "127.0.0.1:35000");
  EXPECT_EQ(r.path, "a__b/c.d/e---f");
}

TEST(ImageReferenceTest, NamesWithoutARegistryAreDockerHubs) {
  ImageReference r = Parse("trainer:1");
  EXPECT_EQ(r.registry, "docker.io");
  EXPECT_FALSE(r.registry_written);
  EXPECT_EQ(r.path, "library/trainer");
  EXPECT_EQ(r.ToString(), "docker.io/library/trainer:1");
  EXPECT_EQ(Parse("me/trainer").ToString(), "docker.io/me/trainer");
  EXPECT_EQ(Parse("index.docker.io/busybox").ToString(), "docker.io/library/busybox");
  // "localhost" alone is a registry; a first component without '.', ':' is a path.
  EXPECT_EQ(Parse("localhost/trainer:1").registry, "localhost");
  EXPECT_EQ(Parse("team/sub/trainer").registry, "docker.io");
  // Docker reads "localhost:5000" alone as the image "localhost" with tag 5000.
  EXPECT_EQ(Parse("localhost:5000").ToString(), "docker.io/library/localhost:5000");
}

TEST(ImageReferenceTest, ToStringParsesBackToTheSameReference) {
  for (const char* text :
       {"trainer", "a/b/c:d", "gcr.io/p/i:1", "localhost/x", "LOCALHOST:5000/x:Tag_1",
        "eu.gcr.io/p/i@sha512:" /* completed below */}) {
    std::string t = text;
    if (t.ends_with(":")) t += std::string(128, '0');
    ImageReference r = Parse(t);
    r.registry_written = true;  // ToString always writes it
    EXPECT_EQ(Parse(r.ToString()), r) << t;
  }
}

TEST(ImageReferenceTest, RefusesWhatEnginesRefuseAndSaysWhy) {
  EXPECT_NE(Refusal("").find("empty"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/Proj/x").find("must be lower case"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p//x").find("empty path component"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p/-x").find("start and end"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p/x..y").find("separators"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p/x___y").find("separators"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p/x y").find("character"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p/x:").find("tag"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p/x:.1").find("tag"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p/x:" + std::string(129, 'a')).find("tag"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p/x@sha256:abc").find("digest"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p/x@md5:" + std::string(32, 'a')).find("digest"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p/x@sha256:" + std::string(64, 'A')).find("digest"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/p/x@").find("digest"), std::string::npos);
  EXPECT_NE(Refusal("localhost:0/x").find("port"), std::string::npos);
  EXPECT_NE(Refusal("localhost:65536/x").find("port"), std::string::npos);
  EXPECT_NE(Refusal("localhost:05000/x").find("port"), std::string::npos);
  EXPECT_NE(Refusal("localhost:/x").find("port"), std::string::npos);
  EXPECT_NE(Refusal("-bad.io/x").find("host name"), std::string::npos);
  EXPECT_NE(Refusal("bad_.io/x").find("host name"), std::string::npos);
  EXPECT_NE(Refusal(":1").find("no repository"), std::string::npos);
  EXPECT_NE(Refusal("--rm").find("start and end"), std::string::npos);
  EXPECT_NE(Refusal("gcr.io/" + std::string(250, 'a')).find("255"), std::string::npos);
  EXPECT_NE(Refusal(std::string(2000, 'a')).find("too long"), std::string::npos);
  // 250 characters, but docker.io/library/ makes the name longer than 255 (found by
  // fuzz_image_reference: the printed name did not parse again).
  EXPECT_NE(Refusal(std::string(250, 'a')).find("255"), std::string::npos);
  EXPECT_EQ(Parse(std::string(237, 'a')).ToString(), "docker.io/library/" + std::string(237, 'a'));
}

TEST(PullPolicyTest, ParsesItsThreeNames) {
  for (PullPolicy p : {PullPolicy::kNever, PullPolicy::kMissing, PullPolicy::kAlways}) {
    auto parsed = ParsePullPolicy(PullPolicyName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  auto bad = ParsePullPolicy("IfNotPresent");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("never, missing, always"), std::string::npos);
}

RegistrySettings WithMirrors(std::vector<MirrorRule> rules) {
  RegistrySettings s;
  for (const MirrorRule& r : rules) {
    EXPECT_TRUE(ParseMirrorRule(r.prefix, r.target).ok()) << r.prefix << "=" << r.target;
  }
  s.mirrors = std::move(rules);
  return s;
}

PullPlan Plan(const RegistrySettings& s, const std::string& image) {
  auto plan = PlanPull(s, image);
  EXPECT_TRUE(plan.ok()) << image << ": " << plan.status().ToString();
  return plan.ok() ? *plan : PullPlan{};
}

TEST(PullPlanTest, WithoutMirrorsTheImageIsPulledFromItsOwnRegistry) {
  RegistrySettings s;
  PullPlan p = Plan(s, "gcr.io/proj/trainer:1");
  EXPECT_EQ(p.reference, "gcr.io/proj/trainer:1");
  EXPECT_EQ(p.registry, "gcr.io");
  EXPECT_EQ(p.mirror, "");
  EXPECT_TRUE(p.tls_verify);
  EXPECT_EQ(Plan(s, "trainer").reference, "docker.io/library/trainer");
  // podman's local names have no registry to pull from.
  p = Plan(s, "localhost/trainer:1");
  EXPECT_EQ(p.reference, "");
  EXPECT_EQ(p.registry, "");
  EXPECT_EQ(Plan(s, "localhost:5000/trainer:1").reference, "localhost:5000/trainer:1");
}

TEST(PullPlanTest, MirrorsMapRegistriesWildcardsAndPathPrefixes) {
  const std::string digest = "sha256:" + std::string(64, 'b');
  RegistrySettings s = WithMirrors({{"gcr.io", "localhost:5000"},
                                    {"*.gcr.io", "localhost:5001"},
                                    {"*-docker.pkg.dev", "127.0.0.1:5002/artifacts"},
                                    {"gcr.io/special", "localhost:5003/mirror"},
                                    {"docker.io", "localhost:5004"}});
  s.insecure = {"LOCALHOST:5000", "127.0.0.1:5002"};
  PullPlan p = Plan(s, "gcr.io/my-project/trainer:1");
  EXPECT_EQ(p.reference, "localhost:5000/my-project/trainer:1");
  EXPECT_EQ(p.registry, "localhost:5000");
  EXPECT_EQ(p.mirror, "gcr.io=localhost:5000");
  EXPECT_FALSE(p.tls_verify);
  EXPECT_EQ(p.source.ToString(), "gcr.io/my-project/trainer:1");

  p = Plan(s, "eu.gcr.io/p/t@" + digest);
  EXPECT_EQ(p.reference, "localhost:5001/p/t@" + digest);
  EXPECT_TRUE(p.tls_verify);
  // "*.gcr.io" needs something before ".gcr.io".
  EXPECT_EQ(Plan(s, "GCR.io/p/t").mirror, "gcr.io=localhost:5000");

  p = Plan(s, "us-central1-docker.pkg.dev/proj/repo/img:2");
  EXPECT_EQ(p.reference, "127.0.0.1:5002/artifacts/proj/repo/img:2");
  EXPECT_FALSE(p.tls_verify);

  // The longer path prefix wins over the registry's rule.
  p = Plan(s, "gcr.io/special/img:3");
  EXPECT_EQ(p.reference, "localhost:5003/mirror/img:3");
  EXPECT_EQ(p.mirror, "gcr.io/special=localhost:5003/mirror");
  // A prefix matches whole path components only.
  EXPECT_EQ(Plan(s, "gcr.io/specialist/img").mirror, "gcr.io=localhost:5000");

  // Docker Hub's implicit names map through docker.io.
  EXPECT_EQ(Plan(s, "busybox:1").reference, "localhost:5004/library/busybox:1");
  // Unmapped registries stay as they are.
  EXPECT_EQ(Plan(s, "quay.io/a/b").reference, "quay.io/a/b");
}

TEST(PullPlanTest, AnExactRegistryBeatsAWildcardAndTheFirstRuleWinsATie) {
  RegistrySettings s = WithMirrors({{"*.example.com", "localhost:1"},
                                    {"registry.example.com", "localhost:2"},
                                    {"*.example.com", "localhost:3"},
                                    {"*le.com", "localhost:4"}});
  EXPECT_EQ(Plan(s, "registry.example.com/a").registry, "localhost:2");
  EXPECT_EQ(Plan(s, "other.example.com/a").registry, "localhost:1");
  EXPECT_EQ(Plan(s, "example.com/a").registry, "localhost:4");
}

TEST(PullPlanTest, AMirrorForAWholeRepositoryNeedsATargetPath) {
  RegistrySettings s = WithMirrors({{"gcr.io/p/img", "localhost:5000/other"}});
  EXPECT_EQ(Plan(s, "gcr.io/p/img:1").reference, "localhost:5000/other:1");
  s = WithMirrors({{"gcr.io/p/img", "localhost:5000"}});
  auto bad = PlanPull(s, "gcr.io/p/img:1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("without a repository path"), std::string::npos);
}

TEST(MirrorRuleTest, RefusesPrefixesAndTargetsThatAreNoRegistry) {
  auto msg = [](const std::string& prefix, const std::string& target) {
    auto r = ParseMirrorRule(prefix, target);
    EXPECT_FALSE(r.ok()) << prefix << "=" << target;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(msg("gcr", "localhost:5000").find("must start with a registry"), std::string::npos);
  EXPECT_NE(msg("*", "localhost:5000").find("after '*'"), std::string::npos);
  EXPECT_NE(msg("*/x", "localhost:5000").find("after '*'"), std::string::npos);
  EXPECT_NE(msg("gcr.io/Up", "localhost:5000").find("lower case"), std::string::npos);
  EXPECT_NE(msg("gcr.io", "*.local:5000").find("host name"), std::string::npos);
  EXPECT_NE(msg("gcr.io", "mirror").find("must start with a registry"), std::string::npos);
  EXPECT_NE(msg("gcr.io", "localhost:99999").find("port"), std::string::npos);
  EXPECT_NE(msg("gcr.io", "").find("empty"), std::string::npos);
  EXPECT_NE(msg("gcr.io", "localhost:5000/x:1").find("character"), std::string::npos);
}

TEST(RegistryNameTest, AcceptsHostAndPortOnly) {
  for (const char* ok : {"localhost:5000", "gcr.io", "127.0.0.1:35000", "my-registry.local"}) {
    EXPECT_TRUE(ValidateRegistryName(ok).ok()) << ok;
  }
  for (const char* bad : {"", "*", "*.gcr.io", "gcr.io/p", "localhost:0", "http://x:5000"}) {
    EXPECT_FALSE(ValidateRegistryName(bad).ok()) << bad;
  }
}

TEST(LoopbackTest, KnowsLoopbackRegistries) {
  for (const char* r :
       {"localhost", "localhost:5000", "LocalHost", "127.0.0.1:5000", "127.1.2.3", "[::1]:5000"}) {
    EXPECT_TRUE(IsLoopbackRegistry(r)) << r;
  }
  for (const char* r : {"gcr.io", "10.0.0.1:5000", "127.0.0.1.example.com", "127.0.0", "128.0.0.1",
                        "127.0.0.256", "[::2]:5000", ""}) {
    EXPECT_FALSE(IsLoopbackRegistry(r)) << r;
  }
}

}  // namespace
}  // namespace trainyard::registry
