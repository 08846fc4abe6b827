#include "discovery.h"

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "job_schema.h"  // the model's schema table (src/model, private include path)
#include "trainyard/core/util.h"
#include "trainyard/model/job.h"

namespace trainyard::api {

using nlohmann::json;
namespace schema = model::schema;

namespace {

constexpr std::string_view kMlPrefix = "type.googleapis.com/google.cloud.ml.v1.";

// "type.googleapis.com/google.cloud.ml.v1.TrainingInput" -> "GoogleCloudMlV1__TrainingInput".
std::string SchemaName(const schema::MessageDef& def) {
  std::string_view url = def.type_url;
  if (url.starts_with(kMlPrefix)) url.remove_prefix(kMlPrefix.size());
  return "GoogleCloudMlV1__" + std::string(url);
}

json Ref(const std::string& name) { return {{"$ref", name}}; }

json OutputOnly(json j, const char* description) {
  j["readOnly"] = true;
  j["description"] = std::string("Output only. ") + description;
  return j;
}

// Schemas of the Job fields the table keeps unchecked (output only, or refused by name).
json IgnoredFieldSchema(std::string_view name) {
  if (name == "createTime") {
    return OutputOnly({{"type", "string"}, {"format", "google-datetime"}},
                      "When the job was created.");
  }
  if (name == "startTime") {
    return OutputOnly({{"type", "string"}, {"format", "google-datetime"}},
                      "When the job processing was started.");
  }
  if (name == "endTime") {
    return OutputOnly({{"type", "string"}, {"format", "google-datetime"}},
                      "When the job processing was completed.");
  }
  if (name == "state") {
    json values = json::array();
    for (int i = 0; i <= 7; ++i)
      values.push_back(model::JobStateName(static_cast<model::JobState>(i)));
    return OutputOnly({{"type", "string"}, {"enum", values}}, "The detailed state of a job.");
  }
  if (name == "errorMessage") {
    return OutputOnly({{"type", "string"}}, "The details of a failure or a cancellation.");
  }
  if (name == "trainingOutput") {
    return OutputOnly(Ref("GoogleCloudMlV1__TrainingOutput"), "The current training job result.");
  }
  if (name == "etag") {
    return {{"type", "string"},
            {"format", "byte"},
            {"description", "Optimistic concurrency control: pass it back to patch."}};
  }
  if (name == "jobPosition") {
    return OutputOnly({{"type", "string"}, {"format", "int64"}},
                      "The position of a QUEUED job in the queue (1 is next).");
  }
  // predictionInput / predictionOutput: batch prediction is not served; a job with
  // predictionInput is refused.
  return {{"type", "object"},
          {"additionalProperties", {{"type", "any"}}},
          {"description", "Batch prediction is not supported by Trainyard."}};
}

json FieldSchema(const schema::FieldDef& f, std::map<std::string, json>* schemas);

void AddMessage(const schema::MessageDef& def, std::map<std::string, json>* schemas) {
  std::string name = SchemaName(def);
  if (schemas->count(name)) return;
  (*schemas)[name] = json::object();  // placeholder: recursion guard
  json props = json::object();
  for (const auto& f : def.fields) {
    if (f.legacy) continue;  // accepted on input, never written
    props[std::string(f.json_name)] = FieldSchema(f, schemas);
  }
  (*schemas)[name] = {{"id", name}, {"type", "object"}, {"properties", props}};
}

json FieldSchema(const schema::FieldDef& f, std::map<std::string, json>* schemas) {
  json item;
  switch (f.kind) {
    case schema::Kind::kString:
      item = {{"type", "string"}};
      break;
    case schema::Kind::kBool:
      item = {{"type", "boolean"}};
      break;
    case schema::Kind::kInt32:
      item = {{"type", "integer"}, {"format", "int32"}};
      break;
    case schema::Kind::kInt64:
      item = {{"type", "string"}, {"format", "int64"}};
      break;
    case schema::Kind::kDouble:
      item = {{"type", "number"}, {"format", "double"}};
      break;
    case schema::Kind::kDuration:
      item = {{"type", "string"}, {"format", "google-duration"}};
      break;
    case schema::Kind::kEnum: {
      json values = json::array();
      for (auto v : f.enum_def->values) values.push_back(std::string(v));
      item = {{"type", "string"}, {"enum", values}};
      break;
    }
    case schema::Kind::kMessage:
      AddMessage(*f.message, schemas);
      item = Ref(SchemaName(*f.message));
      break;
    case schema::Kind::kIgnored:
      return IgnoredFieldSchema(f.json_name);
  }
  if (f.label == schema::Label::kRepeated) return {{"type", "array"}, {"items", item}};
  if (f.label == schema::Label::kMap) return {{"type", "object"}, {"additionalProperties", item}};
  return item;
}

json Object(const std::string& id, json props) {
  return {{"id", id}, {"type", "object"}, {"properties", std::move(props)}};
}

// Output-only messages (not in the model's input table) and the wrappers.
void AddFixedSchemas(std::map<std::string, json>* s) {
  const std::string metric = "GoogleCloudMlV1_HyperparameterOutput_HyperparameterMetric";
  (*s)[metric] = Object(metric, {{"objectiveValue", {{"type", "number"}, {"format", "double"}}},
                                 {"trainingStep", {{"type", "string"}, {"format", "int64"}}}});
  (*s)["GoogleCloudMlV1__HyperparameterOutput"] = Object(
      "GoogleCloudMlV1__HyperparameterOutput",
      {{"trialId", {{"type", "string"}}},
       {"hyperparameters", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
       {"finalMetric", Ref(metric)},
       {"allMetrics", {{"type", "array"}, {"items", Ref(metric)}}},
       {"isTrialStoppedEarly", {{"type", "boolean"}}},
       {"startTime", {{"type", "string"}, {"format", "google-datetime"}}},
       {"endTime", {{"type", "string"}, {"format", "google-datetime"}}},
       {"state", {{"type", "string"}}}});
  (*s)["GoogleCloudMlV1__TrainingOutput"] = Object(
      "GoogleCloudMlV1__TrainingOutput",
      {{"completedTrialCount", {{"type", "string"}, {"format", "int64"}}},
       {"trials", {{"type", "array"}, {"items", Ref("GoogleCloudMlV1__HyperparameterOutput")}}},
       {"consumedMLUnits", {{"type", "number"}, {"format", "double"}}},
       {"isHyperparameterTuningJob", {{"type", "boolean"}}},
       {"isBuiltInAlgorithmJob", {{"type", "boolean"}}},
       {"hyperparameterMetricTag", {{"type", "string"}}}});
  (*s)["GoogleCloudMlV1__ListJobsResponse"] =
      Object("GoogleCloudMlV1__ListJobsResponse",
             {{"jobs", {{"type", "array"}, {"items", Ref("GoogleCloudMlV1__Job")}}},
              {"nextPageToken", {{"type", "string"}}}});
  (*s)["GoogleCloudMlV1__CancelJobRequest"] =
      Object("GoogleCloudMlV1__CancelJobRequest", json::object());
  (*s)["GoogleProtobuf__Empty"] = Object("GoogleProtobuf__Empty", json::object());

  // projects.getConfig, projects.locations, projects.operations (compat §5.2).
  const json str = {{"type", "string"}};
  (*s)["GoogleCloudMlV1__Config"] = Object("GoogleCloudMlV1__Config", {{"tpuServiceAccount", str}});
  (*s)["GoogleCloudMlV1__GetConfigResponse"] =
      Object("GoogleCloudMlV1__GetConfigResponse",
             {{"serviceAccount", str},
              {"serviceAccountProject", {{"type", "string"}, {"format", "int64"}}},
              {"config", Ref("GoogleCloudMlV1__Config")}});
  (*s)["GoogleCloudMlV1__Capability"] =
      Object("GoogleCloudMlV1__Capability",
             {{"type", str}, {"availableAccelerators", {{"type", "array"}, {"items", str}}}});
  (*s)["GoogleCloudMlV1__Location"] = Object(
      "GoogleCloudMlV1__Location",
      {{"name", str},
       {"capabilities", {{"type", "array"}, {"items", Ref("GoogleCloudMlV1__Capability")}}}});
  (*s)["GoogleCloudMlV1__ListLocationsResponse"] =
      Object("GoogleCloudMlV1__ListLocationsResponse",
             {{"locations", {{"type", "array"}, {"items", Ref("GoogleCloudMlV1__Location")}}},
              {"nextPageToken", str}});
  (*s)["GoogleRpc__Status"] =
      Object("GoogleRpc__Status",
             {{"code", {{"type", "integer"}, {"format", "int32"}}},
              {"message", str},
              {"details",
               {{"type", "array"},
                {"items", {{"type", "object"}, {"additionalProperties", {{"type", "any"}}}}}}}});
  (*s)["GoogleLongrunning__Operation"] =
      Object("GoogleLongrunning__Operation",
             {{"name", str},
              {"done", {{"type", "boolean"}}},
              {"error", Ref("GoogleRpc__Status")},
              {"metadata", {{"type", "object"}, {"additionalProperties", {{"type", "any"}}}}},
              {"response", {{"type", "object"}, {"additionalProperties", {{"type", "any"}}}}}});
  (*s)["GoogleLongrunning__ListOperationsResponse"] =
      Object("GoogleLongrunning__ListOperationsResponse",
             {{"operations", {{"type", "array"}, {"items", Ref("GoogleLongrunning__Operation")}}},
              {"nextPageToken", str}});
  // IAM (compat §5.1).
  (*s)["GoogleType__Expr"] =
      Object("GoogleType__Expr",
             {{"expression", str}, {"title", str}, {"description", str}, {"location", str}});
  (*s)["GoogleIamV1__Binding"] =
      Object("GoogleIamV1__Binding", {{"role", str},
                                      {"members", {{"type", "array"}, {"items", str}}},
                                      {"condition", Ref("GoogleType__Expr")}});
  (*s)["GoogleIamV1__Policy"] =
      Object("GoogleIamV1__Policy",
             {{"version", {{"type", "integer"}, {"format", "int32"}}},
              {"bindings", {{"type", "array"}, {"items", Ref("GoogleIamV1__Binding")}}},
              {"etag", {{"type", "string"}, {"format", "byte"}}}});
  (*s)["GoogleIamV1__SetIamPolicyRequest"] =
      Object("GoogleIamV1__SetIamPolicyRequest",
             {{"policy", Ref("GoogleIamV1__Policy")},
              {"updateMask", {{"type", "string"}, {"format", "google-fieldmask"}}}});
  (*s)["GoogleIamV1__TestIamPermissionsRequest"] =
      Object("GoogleIamV1__TestIamPermissionsRequest",
             {{"permissions", {{"type", "array"}, {"items", str}}}});
  (*s)["GoogleIamV1__TestIamPermissionsResponse"] =
      Object("GoogleIamV1__TestIamPermissionsResponse",
             {{"permissions", {{"type", "array"}, {"items", str}}}});
}

json QueryParam(const char* type, const char* description) {
  return {{"type", type}, {"location", "query"}, {"description", description}};
}

// Standard parameters of every Google API method (compat §0).
json StandardParameters() {
  json p;
  p["$.xgafv"] = {{"type", "string"},
                  {"location", "query"},
                  {"enum", {"1", "2"}},
                  {"description", "V1 error format."}};
  p["access_token"] = QueryParam("string", "OAuth access token (a Trainyard API token).");
  p["alt"] = {{"type", "string"},
              {"location", "query"},
              {"default", "json"},
              {"enum", {"json", "media", "proto"}},
              {"description", "Data format for response."}};
  p["callback"] = QueryParam("string", "JSONP");
  p["fields"] = QueryParam("string",
                           "Selector specifying which fields to include in a partial "
                           "response (ignored: responses are whole).");
  p["key"] = QueryParam("string", "API key (accepted and ignored).");
  p["oauth_token"] = QueryParam("string", "OAuth 2.0 token (a Trainyard API token).");
  p["prettyPrint"] = {{"type", "boolean"},
                      {"location", "query"},
                      {"default", "true"},
                      {"description", "Returns response with indentations and line breaks."}};
  p["quotaUser"] = QueryParam("string", "Available to use for quota purposes (ignored).");
  p["uploadType"] = QueryParam("string", "Legacy upload protocol for media (e.g. \"media\").");
  p["upload_protocol"] = QueryParam("string", "Upload protocol for media (e.g. \"raw\").");
  return p;
}

json MethodJson(const Route& r) {
  const DiscoverySpec& d = r.discovery;
  json m = {{"id", d.id}, {"path", d.path}, {"httpMethod", r.method}};
  if (d.flat_path != nullptr) m["flatPath"] = d.flat_path;
  if (d.description != nullptr) m["description"] = d.description;
  json params = json::object();
  json order = json::array();
  for (const auto& p : d.params) {
    json pj = {{"type", p.type}, {"location", p.location}};
    if (p.format != nullptr) pj["format"] = p.format;
    if (p.pattern != nullptr) pj["pattern"] = p.pattern;
    if (p.required) {
      pj["required"] = true;
      order.push_back(p.name);
    }
    if (p.description != nullptr) pj["description"] = p.description;
    params[p.name] = pj;
  }
  m["parameters"] = params;
  m["parameterOrder"] = order;
  if (d.request != nullptr) m["request"] = Ref(d.request);
  if (d.response != nullptr) m["response"] = Ref(d.response);
  return m;
}

}  // namespace

std::string BuildDiscoveryDocument(std::span<const Route> routes, const std::string& root_url) {
  json doc = {
      {"kind", "discovery#restDescription"},
      {"discoveryVersion", "v1"},
      {"id", "ml:v1"},
      {"name", "ml"},
      {"version", "v1"},
      {"revision", "trainyard"},
      {"title", "AI Platform Training & Prediction API"},
      {"canonicalName", "Cloud Machine Learning Engine"},
      {"description",
       "AI Platform Training's ml v1 API as served by Trainyard. The document has no auth "
       "section: clients send a Trainyard API token as an OAuth bearer token "
       "(docs/security.md)."},
      {"documentationLink", "https://cloud.google.com/ai-platform/training/docs"},
      {"ownerDomain", "google.com"},
      {"ownerName", "Google"},
      {"protocol", "rest"},
      {"rootUrl", root_url},
      {"baseUrl", root_url},
      {"basePath", ""},
      {"servicePath", ""},
      {"batchPath", "batch"},
      {"parameters", StandardParameters()},
  };
  json resources = json::object();
  for (const auto& r : routes) {
    if (r.discovery.id == nullptr) continue;
    // "ml.projects.jobs.create": resources projects > jobs, method create.
    std::vector<std::string> parts = Split(r.discovery.id, '.');
    if (parts.size() < 3) continue;
    json* node = &resources;
    for (size_t i = 1; i + 1 < parts.size(); ++i) {
      node = &(*node)[parts[i]];
      if (i + 2 < parts.size()) node = &(*node)["resources"];
    }
    (*node)["methods"][parts.back()] = MethodJson(r);
  }
  doc["resources"] = resources;

  std::map<std::string, json> schemas;
  AddMessage(schema::Job(), &schemas);
  AddFixedSchemas(&schemas);
  json sj = json::object();
  for (auto& [name, s] : schemas) sj[name] = std::move(s);
  doc["schemas"] = sj;
  return doc.dump(1, ' ', false, json::error_handler_t::replace);
}

}  // namespace trainyard::api
