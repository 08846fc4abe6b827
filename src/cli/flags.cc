#include "flags.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "trainyard/model/job_json.h"

namespace trainyard::cli {

namespace {

constexpr const char* kScaleTiers[] = {"BASIC",     "STANDARD_1", "PREMIUM_1",
                                       "BASIC_GPU", "BASIC_TPU",  "CUSTOM"};

std::string Join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

}  // namespace

std::string EnumToChoice(std::string_view enum_name) {
  std::string out;
  for (char c : enum_name) {
    out.push_back(c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::string ChoiceToEnum(std::string_view choice) {
  std::string out;
  for (char c : choice) {
    out.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

std::vector<std::string> SplitCommaList(std::string_view value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    if (comma > start) out.emplace_back(value.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

Result<std::map<std::string, std::string>> ParseKeyValueList(std::string_view value) {
  std::map<std::string, std::string> out;
  for (const std::string& item : SplitCommaList(value)) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return InvalidArgument("Bad syntax for dict arg: [" + item +
                             "]. Please see `trainyard help` for information on providing list "
                             "or dictionary flag values with special characters.");
    }
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

Result<std::map<std::string, std::string>> ParseLabelsFlag(std::string_view value) {
  TRAINYARD_ASSIGN_OR_RETURN(auto labels, ParseKeyValueList(value));
  TRAINYARD_RETURN_IF_ERROR(model::ValidateLabels(labels));
  return labels;
}

const std::vector<std::string>& AcceleratorChoices() {
  static const std::vector<std::string> choices = [] {
    std::vector<std::string> c;
    for (std::string_view t : model::AcceleratorTypeNames()) c.push_back(EnumToChoice(t));
    std::sort(c.begin(), c.end());
    return c;
  }();
  return choices;
}

Result<AcceleratorFlag> ParseAcceleratorFlag(std::string_view value) {
  AcceleratorFlag out;
  bool have_count = false;
  bool have_type = false;
  for (const std::string& item : SplitCommaList(value)) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return InvalidArgument("Bad syntax for dict arg: [" + item + "]");
    }
    std::string key = item.substr(0, eq);
    std::string val = item.substr(eq + 1);
    if (key == "count") {
      int64_t n = 0;
      auto r = std::from_chars(val.data(), val.data() + val.size(), n);
      if (r.ec != std::errc() || r.ptr != val.data() + val.size()) {
        return InvalidArgument("Invalid value for [count]: " + val);
      }
      out.count = n;
      have_count = true;
    } else if (key == "type") {
      out.type = val;
      have_type = true;
    } else {
      return InvalidArgument("valid keys are [count, type]; received: " + key);
    }
  }
  if (!have_type) return InvalidArgument("Key [type] required in dict arg but not provided");
  if (!have_count) return InvalidArgument("Key [count] required in dict arg but not provided");
  std::string enum_name = ChoiceToEnum(out.type);
  auto names = model::AcceleratorTypeNames();
  bool known = std::find(names.begin(), names.end(), enum_name) != names.end();
  if (!known) {
    std::vector<std::string> quoted;
    for (const auto& c : AcceleratorChoices()) quoted.push_back("'" + c + "'");
    return InvalidArgument("The type of the accelerator can only be one of the following: " +
                           Join(quoted, ", ") + ".");
  }
  if (out.count <= 0) {
    return InvalidArgument("The count of the accelerator must be greater than 0.");
  }
  out.type = enum_name;
  return out;
}

Result<std::string> NormalizeScaleTier(std::string_view value) {
  std::string enum_name = ChoiceToEnum(value);
  for (const char* t : kScaleTiers) {
    if (enum_name == t) return std::string(t);
  }
  std::vector<std::string> choices;
  for (const char* t : kScaleTiers) choices.push_back(EnumToChoice(t));
  std::sort(choices.begin(), choices.end());
  return InvalidArgument("Invalid choice: '" + std::string(value) + "'. Valid choices are [" +
                         Join(choices, ", ") + "].");
}

Result<bool> ParseBoolValue(std::string_view value) {
  std::string v;
  for (char c : value) v.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (v == "true" || v == "yes" || v == "1" || v == "on") return true;
  if (v == "false" || v == "no" || v == "0" || v == "off") return false;
  return InvalidArgument("Invalid flag value [" + std::string(value) +
                         "], expected one of [true, yes, false, no]");
}

}  // namespace trainyard::cli
