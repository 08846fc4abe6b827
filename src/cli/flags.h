// Parsing of the flag values the gcloud command surface accepts (compat §9.1), with gcloud's
// error texts where it has them. Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::cli {

// "a,b,,c" -> {"a", "b", "c"} (empty items dropped, no trimming: gcloud's ArgList).
std::vector<std::string> SplitCommaList(std::string_view value);

// "k=v,k2=v2" -> map (gcloud's ArgDict; a later duplicate key wins; "k=" is an empty value).
// INVALID_ARGUMENT "Bad syntax for dict arg: [item]..." on an item without '='.
Result<std::map<std::string, std::string>> ParseKeyValueList(std::string_view value);

// --labels / --update-labels: ParseKeyValueList plus label validation (model::ValidateLabels).
Result<std::map<std::string, std::string>> ParseLabelsFlag(std::string_view value);

struct AcceleratorFlag {
  int64_t count = 0;
  std::string type;  // enum name, e.g. "NVIDIA_TESLA_T4"
};

// --master-accelerator "count=N,type=T": both keys required, count > 0, type one of the
// AcceleratorType names in any case with '-' or '_' (e.g. "nvidia-tesla-t4").
Result<AcceleratorFlag> ParseAcceleratorFlag(std::string_view value);

// The accepted accelerator choices as gcloud lists them ("nvidia-tesla-k80", ...).
const std::vector<std::string>& AcceleratorChoices();

// --scale-tier: basic, standard-1, premium-1, basic-gpu, basic-tpu, custom; case-insensitive,
// '_' == '-'. Returns the enum name ("STANDARD_1").
Result<std::string> NormalizeScaleTier(std::string_view value);

// gcloud's boolean flag values: true/yes/1/on and false/no/0/off (case-insensitive).
Result<bool> ParseBoolValue(std::string_view value);

// "ENUM_NAME" -> "enum-name" (gcloud's choice spelling).
std::string EnumToChoice(std::string_view enum_name);
// "enum-name" / "Enum_Name" -> "ENUM_NAME".
std::string ChoiceToEnum(std::string_view choice);

}  // namespace trainyard::cli
