#include "discovery.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

namespace trainyard::api {
namespace {

using nlohmann::json;

json Doc() { return json::parse(BuildDiscoveryDocument(Routes(), "http://127.0.0.1:9/")); }

TEST(DiscoveryTest, DescribesTheServiceWithoutAuth) {
  json d = Doc();
  EXPECT_EQ(d["kind"], "discovery#restDescription");
  EXPECT_EQ(d["id"], "ml:v1");
  EXPECT_EQ(d["name"], "ml");
  EXPECT_EQ(d["version"], "v1");
  EXPECT_EQ(d["protocol"], "rest");
  EXPECT_EQ(d["rootUrl"], "http://127.0.0.1:9/");
  EXPECT_EQ(d["servicePath"], "");
  EXPECT_EQ(d["batchPath"], "batch");
  EXPECT_FALSE(d.contains("auth"));
  for (const char* p : {"alt", "key", "access_token", "fields", "prettyPrint", "quotaUser",
                        "$.xgafv", "upload_protocol", "uploadType", "callback", "oauth_token"}) {
    EXPECT_TRUE(d["parameters"].contains(p)) << p;
  }
}

TEST(DiscoveryTest, PublishesEveryJobsMethodFromTheRouteTable) {
  json methods = Doc()["resources"]["projects"]["resources"]["jobs"]["methods"];
  std::set<std::string> names;
  for (const auto& [name, m] : methods.items()) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"cancel", "create", "get", "list", "patch",
                                          "getIamPolicy", "setIamPolicy", "testIamPermissions"}));
  json projects = Doc()["resources"]["projects"];
  EXPECT_EQ(projects["methods"]["getConfig"]["id"], "ml.projects.getConfig");
  EXPECT_EQ(projects["resources"]["locations"]["methods"]["list"]["path"],
            "v1/{+parent}/locations");
  EXPECT_EQ(projects["resources"]["operations"]["methods"]["get"]["id"],
            "ml.projects.operations.get");
  EXPECT_EQ(methods["create"]["id"], "ml.projects.jobs.create");
  EXPECT_EQ(methods["create"]["path"], "v1/{+parent}/jobs");
  EXPECT_EQ(methods["create"]["httpMethod"], "POST");
  EXPECT_EQ(methods["create"]["request"]["$ref"], "GoogleCloudMlV1__Job");
  EXPECT_EQ(methods["create"]["parameters"]["parent"]["pattern"], "^projects/[^/]+$");
  EXPECT_EQ(methods["create"]["parameterOrder"], json::array({"parent"}));
  EXPECT_EQ(methods["list"]["parameters"]["pageSize"]["format"], "int32");
  EXPECT_EQ(methods["list"]["response"]["$ref"], "GoogleCloudMlV1__ListJobsResponse");
  EXPECT_EQ(methods["cancel"]["path"], "v1/{+name}:cancel");
  EXPECT_EQ(methods["cancel"]["response"]["$ref"], "GoogleProtobuf__Empty");
  EXPECT_EQ(methods["patch"]["httpMethod"], "PATCH");
  EXPECT_TRUE(methods["patch"]["parameters"].contains("updateMask"));
  EXPECT_EQ(methods["get"]["parameters"]["name"]["location"], "path");
  EXPECT_TRUE(methods["get"]["parameters"]["name"]["required"].get<bool>());
}

TEST(DiscoveryTest, SchemasComeFromTheModelTableAndEveryRefResolves) {
  json d = Doc();
  json s = d["schemas"];
  for (const char* name :
       {"GoogleCloudMlV1__Job", "GoogleCloudMlV1__TrainingInput", "GoogleCloudMlV1__ReplicaConfig",
        "GoogleCloudMlV1__AcceleratorConfig", "GoogleCloudMlV1__Scheduling",
        "GoogleCloudMlV1__HyperparameterSpec", "GoogleCloudMlV1__ParameterSpec",
        "GoogleCloudMlV1__TrainingOutput", "GoogleCloudMlV1__HyperparameterOutput",
        "GoogleCloudMlV1__ListJobsResponse", "GoogleProtobuf__Empty",
        "GoogleCloudMlV1__CancelJobRequest"}) {
    ASSERT_TRUE(s.contains(name)) << name;
    EXPECT_EQ(s[name]["id"], name);
  }
  json ti = s["GoogleCloudMlV1__TrainingInput"]["properties"];
  EXPECT_EQ(ti["workerCount"]["type"], "string");
  EXPECT_EQ(ti["workerCount"]["format"], "int64");
  EXPECT_EQ(ti["packageUris"]["type"], "array");
  EXPECT_EQ(ti["scaleTier"]["enum"][0], "BASIC");
  EXPECT_EQ(ti["scheduling"]["$ref"], "GoogleCloudMlV1__Scheduling");
  EXPECT_FALSE(ti.contains("maxRunningTime"));  // legacy input-only field
  json job = s["GoogleCloudMlV1__Job"]["properties"];
  EXPECT_EQ(job["labels"]["additionalProperties"]["type"], "string");
  EXPECT_EQ(job["createTime"]["format"], "google-datetime");
  EXPECT_EQ(job["state"]["enum"][1], "QUEUED");
  EXPECT_EQ(job["etag"]["format"], "byte");
  EXPECT_EQ(job["trainingOutput"]["$ref"], "GoogleCloudMlV1__TrainingOutput");

  // Every $ref anywhere in the document names a schema.
  std::function<void(const json&)> check = [&](const json& j) {
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        if (k == "$ref") {
          EXPECT_TRUE(s.contains(v.get<std::string>())) << v;
        }
        check(v);
      }
    } else if (j.is_array()) {
      for (const auto& v : j) check(v);
    }
  };
  check(d);
}

}  // namespace
}  // namespace trainyard::api
