// Column encodings of the jobs table for values that are not scalars. Private to src/store.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "trainyard/core/status.h"
#include "trainyard/model/job.h"

namespace trainyard::store::sqlite {

// labels_json: a JSON object of strings.
std::string EncodeLabels(const std::map<std::string, std::string>& labels);
Status DecodeLabels(std::string_view text, std::map<std::string, std::string>* labels);

// spec_json: the store's own JSON for model::TrainingSpec (snake_case keys named after the
// struct fields; unknown keys ignored, absent keys keep the struct default). Every field of
// TrainingSpec must appear here; the round-trip test in tests/unit/store checks it.
std::string EncodeSpec(const model::TrainingSpec& spec);
Status DecodeSpec(std::string_view text, model::TrainingSpec* spec);

}  // namespace trainyard::store::sqlite
