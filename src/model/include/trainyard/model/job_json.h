// JSON mapping of Job with AI Platform's rules (compat §0-§4), and create-time validation.
// nlohmann/json stays inside the .cc files; this header speaks strings.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/model/job.h"

namespace trainyard::model {

// What Trainyard can run today. A spec asking for anything else is refused at create with a
// 400 INVALID_ARGUMENT or 501 UNIMPLEMENTED naming the field (never silently ignored).
struct Capabilities {
  bool multi_replica = false;  // workers, parameter servers, evaluators, scale tiers > BASIC
  bool containers = false;     // masterConfig.imageUri & co
  bool tuning = false;         // hyperparameters
  bool gpus = false;           // acceleratorConfig, GPU machine types
};

// Parses the body of projects.jobs.create: accepts camelCase and snake_case keys, int64 as
// number or string, string-encoded bools; rejects unknown fields with
// `Invalid JSON payload received. Unknown name "x" at 'job.training_input': Cannot find field.`;
// validates every rule of compat §10 that applies (jobId, labels, scheduling, counts/types,
// packageUris <= 100, runtime/python versions, ...). On success the Job has project, job_id,
// labels, training_input_json (canonical) and spec filled; state QUEUED; times unset.
// Errors are INVALID_ARGUMENT with field violations, or UNIMPLEMENTED for fields beyond `caps`.
Result<Job> ParseJobForCreate(std::string_view body, std::string_view project,
                              const Capabilities& caps);

// The AcceleratorConfig.type values a job may name (without ACCELERATOR_TYPE_UNSPECIFIED), from
// the model's schema table; the CLI offers them as --*-accelerator choices.
std::vector<std::string_view> AcceleratorTypeNames();

// Validates a jobId (letters, digits, underscore; starts with a letter; <= 128 chars).
Status ValidateJobId(std::string_view job_id);
// Validates a label map (keys/values per compat §10, at most 64 labels).
Status ValidateLabels(const std::map<std::string, std::string>& labels);

// The Job resource as the API returns it (compat §1): jobId, trainingInput, createTime,
// startTime, endTime, state, errorMessage, trainingOutput, labels, etag, jobPosition (QUEUED
// only). Unset fields are omitted.
std::string JobToJson(const Job& job);

// Body of PATCH .../jobs/{id}?updateMask=...: returns the new labels and the etag from the body
// ("" when absent). INVALID_ARGUMENT when the mask names anything but labels/etag, the mask is
// empty, or the body is malformed.
struct JobPatch {
  std::map<std::string, std::string> labels;
  std::string etag;
  bool etag_in_mask = false;
};
Result<JobPatch> ParseJobPatch(std::string_view body, std::string_view update_mask);

// Parses a Job from a gcloud-style --config file (YAML or JSON, top-level `trainingInput`,
// `jobId`, `labels`) into a JSON Job object text, without validation (the server validates).
// Keys keep the user's spelling and order; scalars are typed by the Job schema where the key is
// known (string fields keep their text as written, so `runtimeVersion: 1.10` stays "1.10";
// int/double/bool fields become JSON numbers/bools), and by YAML 1.2 core rules elsewhere.
// INVALID_ARGUMENT with the line on bad YAML, duplicate keys, or a non-mapping top level.
// Used by the CLI.
Result<std::string> ConfigFileToJobJson(std::string_view yaml_or_json);

}  // namespace trainyard::model
