// Create-time validation of a normalised Job (see job_schema.h) against compat §10, and the
// Capabilities refusals. Private to ty_model.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/model/job_json.h"

namespace trainyard::model::internal {

struct Violations {
  std::vector<FieldViolation> invalid;        // -> INVALID_ARGUMENT
  std::vector<FieldViolation> unimplemented;  // -> UNIMPLEMENTED (only when `invalid` is empty)
};

// All rules for a normalised Job object (json names as keys). Field paths are camelCase from
// the Job, e.g. "trainingInput.scheduling.maxWaitTime".
void ValidateJob(const nlohmann::json& job, const Capabilities& caps, Violations* out);

void CheckJobId(std::string_view job_id, const std::string& field,
                std::vector<FieldViolation>* out);
void CheckLabels(const std::map<std::string, std::string>& labels, const std::string& field,
                 std::vector<FieldViolation>* out);

// A Status of `code` carrying `violations`, whose message names every field:
// "Field: <field> Error: <description>" per violation, one per line.
Status ViolationStatus(StatusCode code, std::vector<FieldViolation> violations);

}  // namespace trainyard::model::internal
