// --format handling shared by the commands, on gcloud's projection language
// (trainyard/resource/format.h): json, yaml, table(...), value(...), get(...), csv(...) and none,
// with transforms (.date(), .basename(), ...) and key attributes (:label=, :align=, :sort=).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/resource/format.h"

namespace trainyard::cli {

struct OutputFormat {
  bool is_default = true;  // no --format: the command's own default
  resource::Format spec;   // name "yaml" for the default

  bool Is(const char* name) const { return spec.name == name; }
};

// "" -> the default (YAML for describe). INVALID_ARGUMENT for formats Trainyard does not print.
// `command_default`: the command's default format, whose column attributes an explicit format
// inherits as in gcloud (resource::ParseFormat).
Result<OutputFormat> ParseOutputFormat(std::string_view text,
                                       std::string_view command_default = "");

// gcloud's default format of `jobs list`.
constexpr std::string_view kJobsListFormat =
    "table(jobId.basename(), state:label=STATUS, createTime.date(tz=LOCAL):label=CREATED)";

// Renders one resource for describe/submit: yaml (default), json, or one record of the
// projection printers. yaml_sorted=false keeps the resource's key order.
Result<std::string> RenderResource(std::string_view resource_json, const OutputFormat& format,
                                   bool yaml_sorted = true);

// Renders a list of resources (jobs list): json as one array, yaml as one document per
// resource, the other printers as one table or one record per resource.
Result<std::string> RenderList(const std::vector<std::string>& resources_json,
                               const OutputFormat& format);

}  // namespace trainyard::cli
