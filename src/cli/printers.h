// Output formats that mimic gcloud's resource printers:
//  - yaml: ruamel.yaml's safe block style as gcloud configures it (2-space indent, `- ` items at
//    the parent key's column, keys sorted, strings quoted only when they would read back as
//    another type or are not plain-safe, multi-line strings as literal blocks, 80-column folding
//    of plain and single-quoted scalars), with apitools' typing: int64 fields printed as
//    integers and doubles through gcloud's float transform;
//  - json: 2-space indent, keys sorted;
//  - table: left-aligned columns, two spaces apart, upper-case headings, last column unpadded;
//  - box tables (describe --summarize).
// Pure functions; JSON crosses as text so callers need no JSON library.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::cli {

struct YamlOptions {
  // Sort mapping keys (gcloud does for whole resources); false keeps document order (used for
  // projections such as submit's `jobId, state, startTime, endTime`).
  bool sort_keys = true;
  // Print the API's int64-as-string fields as integers and JSON numbers of double fields as
  // floats, as gcloud does after decoding into typed messages.
  bool api_types = true;
};

// JSON text -> YAML document text (ends with a newline). INVALID_ARGUMENT on bad JSON.
Result<std::string> JsonToYaml(std::string_view json_text, const YamlOptions& options = {});

// JSON text -> gcloud's JSON printer output (indent 2, sorted keys, trailing newline).
Result<std::string> JsonToPrettyJson(std::string_view json_text);

// gcloud's float transform: 6 significant digits, Python's general format, fixed notation with
// one decimal for exponents 5..8 (e.g. 0.04 -> "0.04", 1 -> "1.0", 1234567 -> "1234567.0").
std::string FormatGcloudFloat(double value);

// The plain table printer: `headers` are printed as given (callers pass upper case).
// Returns "" for no rows (gcloud prints nothing, then "Listed 0 items." on stderr).
std::string FormatTable(const std::vector<std::string>& headers,
                        const std::vector<std::vector<std::string>>& rows);

// A box-drawing table with an optional centered title; cells may contain '\n'.
std::string FormatBoxTable(std::string_view title, const std::vector<std::string>& headers,
                           const std::vector<std::vector<std::string>>& rows);

}  // namespace trainyard::cli
