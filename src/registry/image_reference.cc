#include "trainyard/registry/image_reference.h"

#include <algorithm>
#include <cctype>
#include <tuple>

namespace trainyard::registry {
namespace {

// Docker's limit on a repository name (registry/path as written).
constexpr size_t kMaxNameLength = 255;
constexpr size_t kMaxTagLength = 128;
// Longer input is refused before any parsing (a reference is a short string).
constexpr size_t kMaxReferenceLength = 1024;

bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsLower(c) || IsUpper(c) || IsDigit(c); }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f'); }

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::vector<std::string_view> SplitSlash(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t slash = s.find('/', start);
    out.push_back(s.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

// Whether the first component of a name is a registry (Docker's rule).
bool LooksLikeRegistry(std::string_view first) {
  return first.find_first_of(".:") != std::string_view::npos || first == "localhost" ||
         std::any_of(first.begin(), first.end(), IsUpper);
}

// host[:port]: dot-separated labels of letters, digits and inner hyphens; a port 1..65535.
Status CheckRegistry(std::string_view registry, std::string* host, int* port) {
  const size_t colon = registry.find(':');
  const std::string_view h = registry.substr(0, colon);
  *port = 0;
  if (colon != std::string_view::npos) {
    const std::string_view p = registry.substr(colon + 1);
    if (p.empty() || p.size() > 5 || !std::all_of(p.begin(), p.end(), IsDigit) || p[0] == '0') {
      return InvalidArgument("the registry " + Quote(registry) + " has no valid port (1-65535)");
    }
    *port = std::stoi(std::string(p));
    if (*port > 65535) {
      return InvalidArgument("the registry " + Quote(registry) + " has no valid port (1-65535)");
    }
  }
  if (h.empty()) return InvalidArgument("the registry " + Quote(registry) + " has no host name");
  size_t start = 0;
  while (start <= h.size()) {
    const size_t dot = h.find('.', start);
    const std::string_view label =
        h.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || !IsAlnum(label.front()) || !IsAlnum(label.back()) ||
        !std::all_of(label.begin(), label.end(), [](char c) { return IsAlnum(c) || c == '-'; })) {
      return InvalidArgument("the registry host " + Quote(h) +
                             " is not a host name (letters, digits, inner '-' and '.')");
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  *host = std::string(h);
  return Status::Ok();
}

// One path component: lower-case letters and digits, joined by '.', '_', "__" or runs of '-'.
Status CheckPathComponent(std::string_view c, std::string_view whole) {
  if (c.empty()) return InvalidArgument(Quote(whole) + " has an empty path component");
  if (std::any_of(c.begin(), c.end(), IsUpper)) {
    return InvalidArgument("the repository path of " + Quote(whole) +
                           " must be lower case (component " + Quote(c) + ")");
  }
  auto lower_digit = [](char ch) { return IsLower(ch) || IsDigit(ch); };
  if (!lower_digit(c.front()) || !lower_digit(c.back())) {
    return InvalidArgument("the path component " + Quote(c) + " of " + Quote(whole) +
                           " must start and end with a letter or digit");
  }
  for (size_t i = 0; i < c.size();) {
    if (lower_digit(c[i])) {
      ++i;
      continue;
    }
    // A separator: ".", "_", "__" or one or more '-'.
    size_t j = i;
    if (c[i] == '-') {
      while (j < c.size() && c[j] == '-') ++j;
    } else if (c[i] == '_') {
      j = (i + 1 < c.size() && c[i + 1] == '_') ? i + 2 : i + 1;
    } else if (c[i] == '.') {
      j = i + 1;
    } else {
      return InvalidArgument("the path component " + Quote(c) + " of " + Quote(whole) +
                             " has the character " + Quote(c.substr(i, 1)) +
                             " (allowed: a-z, 0-9, '.', '_', '__', '-')");
    }
    if (j >= c.size() || !lower_digit(c[j])) {
      return InvalidArgument("the path component " + Quote(c) + " of " + Quote(whole) +
                             " has separators that do not stand between letters or digits");
    }
    i = j;
  }
  return Status::Ok();
}

Status CheckTag(std::string_view tag, std::string_view whole) {
  auto word = [](char c) { return IsAlnum(c) || c == '_'; };
  if (tag.empty() || tag.size() > kMaxTagLength || !word(tag.front()) ||
      !std::all_of(tag.begin(), tag.end(),
                   [&](char c) { return word(c) || c == '.' || c == '-'; })) {
    return InvalidArgument("the tag " + Quote(tag) + " of " + Quote(whole) +
                           " is not a tag (1-128 letters, digits, '_', '.', '-', not starting "
                           "with '.' or '-')");
  }
  return Status::Ok();
}

Status CheckDigest(std::string_view digest, std::string_view whole) {
  const size_t colon = digest.find(':');
  const std::string_view algo = digest.substr(0, colon);
  const std::string_view hex =
      colon == std::string_view::npos ? std::string_view() : digest.substr(colon + 1);
  size_t want = 0;
  if (algo == "sha256") want = 64;
  if (algo == "sha384") want = 96;
  if (algo == "sha512") want = 128;
  if (want == 0 || hex.size() != want || !std::all_of(hex.begin(), hex.end(), IsHex)) {
    return InvalidArgument("the digest " + Quote(digest) + " of " + Quote(whole) +
                           " is not sha256:<64 lower-case hex digits> (or sha384, sha512)");
  }
  return Status::Ok();
}

// A registry and leading path components (a mirror rule's prefix or target): the registry is
// always written. With `wildcard`, the registry may be '*' followed by a non-empty suffix.
struct Location {
  std::string registry;   // lower case
  bool wildcard = false;  // registry is "*" + suffix; `registry` holds the suffix
  std::vector<std::string> path;
};

Result<Location> ParseLocation(std::string_view text, bool wildcard_allowed, const char* what) {
  Location loc;
  if (text.empty()) return InvalidArgument(std::string(what) + " is empty");
  if (text.size() > kMaxNameLength) {
    return InvalidArgument(std::string(what) + " " + Quote(text.substr(0, 64)) +
                           "... is longer than 255 characters");
  }
  std::vector<std::string_view> parts = SplitSlash(text);
  std::string_view first = parts.front();
  if (wildcard_allowed && !first.empty() && first.front() == '*') {
    const std::string_view suffix = first.substr(1);
    if (suffix.empty() || !std::all_of(suffix.begin(), suffix.end(), [](char c) {
          return IsAlnum(c) || c == '.' || c == '-' || c == ':';
        })) {
      return InvalidArgument(std::string(what) + " " + Quote(text) +
                             ": after '*' the registry must go on with letters, digits, '.', "
                             "'-' or ':' (e.g. *.gcr.io, *-docker.pkg.dev)");
    }
    loc.wildcard = true;
    loc.registry = Lower(suffix);
  } else {
    if (!LooksLikeRegistry(first)) {
      return InvalidArgument(std::string(what) + " " + Quote(text) +
                             " must start with a registry (a host name with a '.' or a port, "
                             "or localhost), e.g. gcr.io or localhost:5000");
    }
    std::string host;
    int port = 0;
    Status st = CheckRegistry(first, &host, &port);
    if (!st.ok())
      return InvalidArgument(std::string(what) + " " + Quote(text) + ": " + st.message());
    loc.registry = Lower(first);
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    Status st = CheckPathComponent(parts[i], text);
    if (!st.ok()) return InvalidArgument(std::string(what) + ": " + st.message());
    loc.path.emplace_back(parts[i]);
  }
  return loc;
}

}  // namespace

std::string ImageReference::Repository() const { return registry + "/" + path; }

std::string ImageReference::ToString() const {
  std::string out = Repository();
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

Result<ImageReference> ParseImageReference(std::string_view text) {
  if (text.empty()) return InvalidArgument("the image reference is empty");
  if (text.size() > kMaxReferenceLength) {
    return InvalidArgument("the image reference " + Quote(text.substr(0, 64)) + "... is too long");
  }
  ImageReference ref;
  std::string_view name = text;
  if (const size_t at = text.find('@'); at != std::string_view::npos) {
    ref.digest = std::string(text.substr(at + 1));
    name = text.substr(0, at);
    TRAINYARD_RETURN_IF_ERROR(CheckDigest(ref.digest, text));
  }
  const size_t colon = name.rfind(':');
  const size_t slash = name.rfind('/');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    ref.tag = std::string(name.substr(colon + 1));
    name = name.substr(0, colon);
    TRAINYARD_RETURN_IF_ERROR(CheckTag(ref.tag, text));
  }
  if (name.empty()) return InvalidArgument(Quote(text) + " names no repository");
  if (name.size() > kMaxNameLength) {
    return InvalidArgument("the repository name of " + Quote(text.substr(0, 64)) +
                           "... is longer than 255 characters");
  }
  std::string_view path = name;
  const size_t first_slash = name.find('/');
  if (first_slash != std::string_view::npos && LooksLikeRegistry(name.substr(0, first_slash))) {
    ref.registry = std::string(name.substr(0, first_slash));
    ref.registry_written = true;
    path = name.substr(first_slash + 1);
    TRAINYARD_RETURN_IF_ERROR(CheckRegistry(ref.registry, &ref.host, &ref.port));
  } else {
    ref.registry = ref.host = "docker.io";
  }
  for (std::string_view c : SplitSlash(path))
    TRAINYARD_RETURN_IF_ERROR(CheckPathComponent(c, text));
  ref.path = std::string(path);
  // Docker Hub's other names, and its official images' implicit "library/".
  const std::string lower = Lower(ref.registry);
  if (lower == "index.docker.io" || lower == "registry-1.docker.io") {
    ref.registry = ref.host = "docker.io";
  }
  if (ref.registry == "docker.io" && ref.path.find('/') == std::string::npos) {
    ref.path = "library/" + ref.path;
  }
  // Docker's limit applies to the full name (docker.io/library/... included), so that the
  // printed reference parses again.
  if (ref.Repository().size() > kMaxNameLength) {
    return InvalidArgument("the repository name of " + Quote(text.substr(0, 64)) +
                           "... is longer than 255 characters (as " +
                           ref.Repository().substr(0, 20) + "...)");
  }
  return ref;
}

Result<PullPolicy> ParsePullPolicy(std::string_view text) {
  if (text == "never") return PullPolicy::kNever;
  if (text == "missing") return PullPolicy::kMissing;
  if (text == "always") return PullPolicy::kAlways;
  return InvalidArgument("\"" + std::string(text) +
                         "\" is not a pull policy (never, missing, always)");
}

const char* PullPolicyName(PullPolicy policy) {
  switch (policy) {
    case PullPolicy::kNever:
      return "never";
    case PullPolicy::kMissing:
      return "missing";
    case PullPolicy::kAlways:
      return "always";
  }
  return "missing";
}

Result<MirrorRule> ParseMirrorRule(std::string_view prefix, std::string_view target) {
  if (auto p = ParseLocation(prefix, true, "the mirror prefix"); !p.ok()) return p.status();
  if (auto t = ParseLocation(target, false, "the mirror target"); !t.ok()) return t.status();
  return MirrorRule{std::string(prefix), std::string(target)};
}

Result<PullPlan> PlanPull(const RegistrySettings& settings, std::string_view image) {
  PullPlan plan;
  TRAINYARD_ASSIGN_OR_RETURN(plan.source, ParseImageReference(image));
  const ImageReference& src = plan.source;
  const std::string src_registry = Lower(src.registry);
  const std::vector<std::string_view> src_path = SplitSlash(src.path);

  // The most specific rule: most path components, then an exact registry over a wildcard,
  // then the longer wildcard suffix; the first configured on a tie.
  const MirrorRule* best = nullptr;
  size_t best_depth = 0;
  std::tuple<size_t, int, size_t> best_score{0, 0, 0};
  for (const MirrorRule& rule : settings.mirrors) {
    auto loc = ParseLocation(rule.prefix, true, "the mirror prefix");
    if (!loc.ok()) continue;  // refused when the settings were read
    const bool host_match = loc->wildcard ? src_registry.size() > loc->registry.size() &&
                                                src_registry.ends_with(loc->registry)
                                          : src_registry == loc->registry;
    if (!host_match || loc->path.size() > src_path.size()) continue;
    if (!std::equal(loc->path.begin(), loc->path.end(), src_path.begin())) continue;
    const std::tuple<size_t, int, size_t> score{loc->path.size() + 1, loc->wildcard ? 0 : 1,
                                                loc->registry.size()};
    if (best == nullptr || score > best_score) {
      best = &rule;
      best_score = score;
      best_depth = loc->path.size();
    }
  }

  ImageReference pulled = src;
  if (best != nullptr) {
    std::string mapped = best->target;
    for (size_t i = best_depth; i < src_path.size(); ++i) mapped += "/" + std::string(src_path[i]);
    if (best_depth == src_path.size() && best->target.find('/') == std::string::npos) {
      return InvalidArgument("registry_mirrors " + best->prefix + "=" + best->target + " maps " +
                             Quote(image) + " to a registry without a repository path");
    }
    if (!src.tag.empty()) mapped += ":" + src.tag;
    if (!src.digest.empty()) mapped += "@" + src.digest;
    auto parsed = ParseImageReference(mapped);
    if (!parsed.ok()) {
      return InvalidArgument("registry_mirrors " + best->prefix + "=" + best->target + " maps " +
                             Quote(image) + " to " + Quote(mapped) +
                             ", which is not an image reference: " + parsed.status().message());
    }
    pulled = std::move(parsed).value();
    plan.mirror = best->prefix + "=" + best->target;
  } else if (src.registry_written && src_registry == "localhost") {
    // podman's name for images built here (localhost/trainer:1): no registry to pull from.
    return plan;
  }
  plan.reference = pulled.ToString();
  plan.registry = pulled.registry;
  const std::string reg = Lower(pulled.registry);
  plan.tls_verify = std::none_of(settings.insecure.begin(), settings.insecure.end(),
                                 [&](const std::string& r) { return Lower(r) == reg; });
  return plan;
}

Status ValidateRegistryName(std::string_view registry) {
  std::string host;
  int port = 0;
  if (registry.empty()) return InvalidArgument("the registry name is empty");
  return CheckRegistry(registry, &host, &port);
}

bool IsLoopbackRegistry(std::string_view registry) {
  std::string_view host = registry;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    return close != std::string_view::npos && host.substr(1, close - 1) == "::1";
  }
  host = host.substr(0, host.find(':'));
  if (Lower(host) == "localhost") return true;
  // 127.0.0.0/8 written as four decimal octets.
  int octets = 0;
  size_t start = 0;
  while (start <= host.size()) {
    const size_t dot = host.find('.', start);
    const std::string_view o =
        host.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (o.empty() || o.size() > 3 || !std::all_of(o.begin(), o.end(), IsDigit) ||
        std::stoi(std::string(o)) > 255) {
      return false;
    }
    if (octets == 0 && o != "127") return false;
    ++octets;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return octets == 4;
}

}  // namespace trainyard::registry
