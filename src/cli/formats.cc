#include "formats.h"

#include <nlohmann/json.hpp>

#include "printers.h"
#include "trainyard/core/util.h"

namespace trainyard::cli {

using json = nlohmann::json;

Result<OutputFormat> ParseOutputFormat(std::string_view text, std::string_view command_default) {
  OutputFormat f;
  std::string t = Trim(text);
  if (t.empty() && !command_default.empty()) {
    TRAINYARD_ASSIGN_OR_RETURN(f.spec, resource::ParseFormat(command_default));
    return f;
  }
  if (t.empty()) {
    f.spec.name = "yaml";
    return f;
  }
  f.is_default = false;
  if (command_default.empty()) {
    TRAINYARD_ASSIGN_OR_RETURN(f.spec, resource::ParseFormat(t));
  } else {
    TRAINYARD_ASSIGN_OR_RETURN(resource::Format defaults, resource::ParseFormat(command_default));
    TRAINYARD_ASSIGN_OR_RETURN(f.spec, resource::ParseFormat(t, &defaults));
  }
  return f;
}

namespace {

Result<json> Parse(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("the daemon answered with invalid JSON");
  return j;
}

}  // namespace

Result<std::string> RenderResource(std::string_view resource_json, const OutputFormat& format,
                                   bool yaml_sorted) {
  TRAINYARD_ASSIGN_OR_RETURN(json r, Parse(resource_json));
  if (format.Is("json")) return JsonToPrettyJson(resource::ProjectObject(format.spec, r).dump());
  if (format.Is("yaml")) {
    YamlOptions o;
    o.sort_keys = yaml_sorted;
    if (!format.spec.has_projection) return JsonToYaml(resource_json, o);
    return JsonToYaml(resource::ProjectObject(format.spec, r).dump(), o);
  }
  return resource::Render(format.spec, {r});
}

Result<std::string> RenderList(const std::vector<std::string>& resources_json,
                               const OutputFormat& format) {
  std::vector<json> rs;
  rs.reserve(resources_json.size());
  for (const auto& text : resources_json) {
    TRAINYARD_ASSIGN_OR_RETURN(json r, Parse(text));
    rs.push_back(std::move(r));
  }
  if (format.Is("json")) {
    json arr = json::array();
    for (const json& r : rs) arr.push_back(resource::ProjectObject(format.spec, r));
    return JsonToPrettyJson(arr.dump());
  }
  if (format.Is("yaml")) {
    std::string out;
    for (const json& r : rs) {
      TRAINYARD_ASSIGN_OR_RETURN(std::string doc,
                                 JsonToYaml(resource::ProjectObject(format.spec, r).dump()));
      out += "---\n" + doc;
    }
    return out;
  }
  return resource::Render(format.spec, rs);
}

}  // namespace trainyard::cli
