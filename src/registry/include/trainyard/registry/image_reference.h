// Container image references and where an image is pulled from (docs/containers.md,
// "Registries"). Pure: no I/O, no engine; the scheduler plans a replica's pull with it, the API
// validates imageUri with it, the daemon checks its registry settings with it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::registry {

// One image reference in the grammar Docker's distribution/reference package and podman accept:
//   [REGISTRY/]PATH[:TAG][@DIGEST]
// REGISTRY is the first component when it has a '.' or a ':' or is "localhost" (or has an
// upper-case letter); otherwise the reference names none and is Docker Hub's: "trainer" is
// docker.io/library/trainer, "me/trainer" docker.io/me/trainer.
struct ImageReference {
  std::string registry;  // "gcr.io", "localhost:5000", "docker.io" (host[:port], as written)
  std::string host;      // registry without the port
  int port = 0;          // 0: none written
  std::string path;      // "my-project/trainer", "library/trainer" (lower case, '/'-separated)
  std::string tag;       // "" when none is written (engines then use "latest")
  std::string digest;    // "sha256:<64 hex>", "" when none
  bool registry_written = false;  // false: docker.io by default

  // registry/path: what a registry calls the repository.
  std::string Repository() const;
  // Fully qualified: registry/path[:tag][@digest]. Parses back to the same reference.
  std::string ToString() const;
  bool operator==(const ImageReference&) const = default;
};

// INVALID_ARGUMENT naming what is wrong (the tag, a path component, the digest, ...).
Result<ImageReference> ParseImageReference(std::string_view text);

// When images are pulled (config image_pull_policy), as Kubernetes' imagePullPolicy.
enum class PullPolicy {
  kNever,    // only images already in the engine's local storage
  kMissing,  // pull when the image is not in local storage (default)
  kAlways,   // pull once per job (replicas of the job on one machine share the pull)
};
Result<PullPolicy> ParsePullPolicy(std::string_view text);
const char* PullPolicyName(PullPolicy policy);

// A registry_mirrors entry: references under `prefix` are pulled from `target` instead.
//   prefix: a registry, optionally with leading repository path components
//           ("gcr.io", "gcr.io/my-project", "us-docker.pkg.dev/p/repo"); the registry may start
//           with '*' to match any non-empty text there ("*.gcr.io", "*-docker.pkg.dev").
//   target: REGISTRY[/PATH] ("localhost:5000", "127.0.0.1:5000/mirror").
// gcr.io/my-project/trainer:1 under {gcr.io: localhost:5000} is localhost:5000/my-project/
// trainer:1; under {gcr.io/my-project: localhost:5000/mirror}, localhost:5000/mirror/trainer:1.
struct MirrorRule {
  std::string prefix;
  std::string target;
};
// INVALID_ARGUMENT naming the malformed side.
Result<MirrorRule> ParseMirrorRule(std::string_view prefix, std::string_view target);

struct RegistrySettings {
  PullPolicy policy = PullPolicy::kMissing;
  std::vector<MirrorRule> mirrors;
  // Registries (host[:port]) reached without TLS verification, plain http allowed (podman
  // --tls-verify=false for these only).
  std::vector<std::string> insecure;
  // auth.json in podman's and docker's format ({"auths": {"REGISTRY": {"auth": base64}}}), ""
  // for none. Its contents never leave the file: the engine reads it.
  std::string auth_file;
};

// How one image gets into the engine's local storage.
struct PullPlan {
  ImageReference source;  // the imageUri, parsed
  // What a pull asks for: the source, or its mirror, fully qualified. "" when the image is a
  // local name (localhost/..., no port) that no mirror maps: it can never be pulled.
  std::string reference;
  std::string registry;  // the registry `reference` is pulled from
  std::string mirror;    // "PREFIX=TARGET" of the rule that mapped it, "" when none did
  bool tls_verify = true;
};
// INVALID_ARGUMENT when `image` is no reference, or its mirror makes none (e.g. a rule for the
// whole repository whose target names no repository path).
Result<PullPlan> PlanPull(const RegistrySettings& settings, std::string_view image);

// OK when `registry` is a registry name, host[:port] (as registry_insecure lists them).
Status ValidateRegistryName(std::string_view registry);

// Whether `registry` (host[:port]) is a loopback address: localhost, 127.0.0.0/8, [::1].
bool IsLoopbackRegistry(std::string_view registry);

}  // namespace trainyard::registry
