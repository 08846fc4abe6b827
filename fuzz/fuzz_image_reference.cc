// Image references and registry mirrors (src/registry/image_reference.h): the first line is a
// job's imageUri, each further line a registry_mirrors entry PREFIX=TARGET. An accepted
// reference prints to a text that parses to the same reference and never reads as an engine
// option; a pull plan's reference is itself a reference with the source's tag and digest.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "trainyard/registry/image_reference.h"

namespace reg = trainyard::registry;

namespace {

[[noreturn]] void Fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "%s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void CheckPrinted(const reg::ImageReference& ref) {
  const std::string text = ref.ToString();
  if (text.empty() || text.front() == '-' || text.find_first_of(" \t\n\r") != std::string::npos) {
    Fail("printed reference is unsafe", text);
  }
  auto again = reg::ParseImageReference(text);
  if (!again.ok()) Fail("printed reference does not parse", text);
  if (again->ToString() != text || again->registry != ref.registry || again->path != ref.path ||
      again->tag != ref.tag || again->digest != ref.digest || again->port != ref.port) {
    Fail("printed reference parses to another", text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  const std::string_view image = in.substr(0, nl);
  reg::RegistrySettings settings;
  std::string_view rest = nl == std::string_view::npos ? "" : in.substr(nl + 1);
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? "" : rest.substr(end + 1);
    if (line.starts_with("!")) {
      settings.insecure.emplace_back(line.substr(1));
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    auto rule = reg::ParseMirrorRule(line.substr(0, eq), line.substr(eq + 1));
    if (rule.ok()) settings.mirrors.push_back(*rule);
  }
  auto ref = reg::ParseImageReference(image);
  if (!ref.ok()) {
    if (reg::PlanPull(settings, image).ok()) Fail("planned a pull of a refused reference", image);
    return 0;
  }
  CheckPrinted(*ref);
  auto plan = reg::PlanPull(settings, image);
  if (!plan.ok()) {
    if (settings.mirrors.empty()) Fail("no plan without mirrors", image);
    return 0;
  }
  if (!(plan->source == *ref)) Fail("the plan's source differs from the parsed reference", image);
  if (plan->reference.empty()) {
    std::string host = ref->registry;
    for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!plan->mirror.empty() || host != "localhost") Fail("nothing to pull", image);
    return 0;
  }
  auto pulled = reg::ParseImageReference(plan->reference);
  if (!pulled.ok()) Fail("the planned reference does not parse", plan->reference);
  CheckPrinted(*pulled);
  if (pulled->ToString() != plan->reference || pulled->registry != plan->registry ||
      pulled->tag != ref->tag || pulled->digest != ref->digest) {
    Fail("the planned reference lost the registry, tag or digest", plan->reference);
  }
  if (plan->mirror.empty() && plan->reference != ref->ToString()) {
    Fail("an unmapped reference changed", plan->reference);
  }
  return 0;
}
