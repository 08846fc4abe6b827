// --format handling shared by the commands: json, yaml, and gcloud's value(FIELD,...) projection
// (tab-separated; dicts as k=v;k=v, lists ;-joined, booleans True/False; the transforms
// .basename() and .date() are understood, :label=... attributes ignored).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::cli {

enum class FormatKind { kDefault, kJson, kYaml, kValue, kTable };

struct OutputFormat {
  FormatKind kind = FormatKind::kDefault;
  std::vector<std::string> fields;  // value(...) fields
};

// "" -> kDefault. INVALID_ARGUMENT for formats Trainyard does not print.
Result<OutputFormat> ParseOutputFormat(std::string_view text);

// One value(...) line (with its newline) for a JSON resource.
std::string ValueLine(std::string_view resource_json, const std::vector<std::string>& fields);

// The value of a dotted field path in a JSON resource rendered as gcloud's value printer would
// ("" when missing).
std::string FieldText(std::string_view resource_json, std::string_view field);

// Renders one resource for describe/submit: kDefault/kYaml as YAML, kJson as JSON, kValue as a
// value line. yaml_sorted=false keeps the resource's key order.
Result<std::string> RenderResource(std::string_view resource_json, const OutputFormat& format,
                                   bool yaml_sorted = true);

}  // namespace trainyard::cli
