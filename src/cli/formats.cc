#include "formats.h"

#include <nlohmann/json.hpp>

#include "printers.h"
#include "time_format.h"
#include "trainyard/core/util.h"

namespace trainyard::cli {

using json = nlohmann::json;

namespace {

// Splits on commas outside parentheses and quotes.
std::vector<std::string> SplitFields(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  char quote = 0;
  std::string cur;
  for (char c : s) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(Trim(cur));
      cur.clear();
      continue;
    }
    cur.push_back(c);
  }
  if (!Trim(cur).empty()) out.push_back(Trim(cur));
  return out;
}

std::string ScalarText(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_float()) return FormatGcloudFloat(v.get<double>());
  if (v.is_number()) return v.dump();
  if (v.is_object()) {
    std::string out;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!out.empty()) out += ";";
      out += it.key() + "=" + ScalarText(*it);
    }
    return out;
  }
  std::string out;
  bool first = true;
  for (const auto& item : v) {
    if (!first) out += ";";
    first = false;
    out += ScalarText(item);
  }
  return out;
}

std::string FieldOf(const json& resource, std::string_view field_spec) {
  std::string spec(field_spec);
  size_t colon = spec.find(':');
  if (colon != std::string::npos) spec = spec.substr(0, colon);
  // Trailing transforms: .basename(), .date(...), anything else is ignored.
  std::vector<std::string> transforms;
  while (!spec.empty() && spec.back() == ')') {
    size_t open = spec.rfind('(');
    size_t dot = open == std::string::npos ? std::string::npos : spec.rfind('.', open);
    if (dot == std::string::npos) break;
    transforms.insert(transforms.begin(), spec.substr(dot + 1, open - dot - 1));
    spec = spec.substr(0, dot);
  }
  const json* cur = &resource;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t dot = spec.find('.', start);
    std::string key =
        spec.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object() || !cur->contains(key)) return "";
    cur = &(*cur)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::string text = ScalarText(*cur);
  for (const auto& t : transforms) {
    if (t == "basename") {
      size_t slash = text.rfind('/');
      if (slash != std::string::npos) text = text.substr(slash + 1);
    } else if (t == "date") {
      text = LocalDateTime(text);
    }
  }
  return text;
}

}  // namespace

Result<OutputFormat> ParseOutputFormat(std::string_view text) {
  OutputFormat f;
  std::string t = Trim(text);
  if (t.empty()) return f;
  std::string name = t.substr(0, t.find_first_of("([ "));
  if (name == "json" && t == "json") {
    f.kind = FormatKind::kJson;
  } else if (name == "yaml" && t == "yaml") {
    f.kind = FormatKind::kYaml;
  } else if (name == "table" && t == "table") {
    f.kind = FormatKind::kTable;
  } else if (name == "value" || name == "get") {
    size_t open = t.find('(', name.size());
    if (open == std::string::npos || t.back() != ')') {
      return InvalidArgument("Format [" + t + "] needs a projection, e.g. value(jobId)");
    }
    f.kind = FormatKind::kValue;
    f.fields = SplitFields(t.substr(open + 1, t.size() - open - 2));
    if (f.fields.empty()) return InvalidArgument("Format [" + t + "] has no fields");
  } else {
    return InvalidArgument("Format [" + t +
                           "] is not supported; use json, yaml, table or value(FIELD,...)");
  }
  return f;
}

std::string FieldText(std::string_view resource_json, std::string_view field) {
  json r = json::parse(resource_json, nullptr, /*allow_exceptions=*/false);
  if (r.is_discarded()) return "";
  return FieldOf(r, field);
}

std::string ValueLine(std::string_view resource_json, const std::vector<std::string>& fields) {
  json r = json::parse(resource_json, nullptr, /*allow_exceptions=*/false);
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += "\t";
    if (!r.is_discarded()) line += FieldOf(r, fields[i]);
  }
  return line + "\n";
}

Result<std::string> RenderResource(std::string_view resource_json, const OutputFormat& format,
                                   bool yaml_sorted) {
  switch (format.kind) {
    case FormatKind::kJson:
      return JsonToPrettyJson(resource_json);
    case FormatKind::kValue:
      return ValueLine(resource_json, format.fields);
    case FormatKind::kTable:
    case FormatKind::kDefault:
    case FormatKind::kYaml:
      break;
  }
  YamlOptions o;
  o.sort_keys = yaml_sorted;
  return JsonToYaml(resource_json, o);
}

}  // namespace trainyard::cli
