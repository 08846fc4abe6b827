#include <gtest/gtest.h>

#include "trainyard/model/job_json.h"

namespace trainyard::model {
namespace {

TEST(ParseJobPatchTest, ReplacesLabelsAndReturnsEtag) {
  auto r = ParseJobPatch(R"({"labels":{"owner":"bob","team":"ml"},"etag":"fhCHZ7hsq10="})",
                         "labels,etag");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->labels, (std::map<std::string, std::string>{{"owner", "bob"}, {"team", "ml"}}));
  EXPECT_EQ(r->etag, "fhCHZ7hsq10=");
  EXPECT_TRUE(r->etag_in_mask);
}

TEST(ParseJobPatchTest, EtagIsOptional) {
  auto r = ParseJobPatch(R"({"labels":{"a":"b"}})", "labels");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->etag, "");
  EXPECT_FALSE(r->etag_in_mask);
}

TEST(ParseJobPatchTest, MissingLabelsClearThem) {
  auto r = ParseJobPatch(R"({"etag":"fhCHZ7hsq10="})", "labels");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->labels.empty());
  EXPECT_EQ(r->etag, "fhCHZ7hsq10=");
}

TEST(ParseJobPatchTest, AcceptsAWholeJobAsBody) {
  auto r = ParseJobPatch(R"({"jobId":"j","state":"RUNNING","createTime":"2017-12-13T01:21:04Z",)"
                         R"("trainingInput":{"region":"us-central1"},"labels":{"x":"y"}})",
                         " labels ");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->labels.at("x"), "y");
}

TEST(ParseJobPatchTest, RejectsOtherMaskPaths) {
  auto r = ParseJobPatch(R"({"labels":{}})", "labels,trainingInput.region");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("trainingInput.region"), std::string::npos);
  ASSERT_FALSE(r.status().violations().empty());
  EXPECT_EQ(r.status().violations()[0].field, "updateMask");
}

TEST(ParseJobPatchTest, RejectsEmptyMask) {
  for (const char* mask : {"", " ", ","}) {
    auto r = ParseJobPatch(R"({"labels":{}})", mask);
    ASSERT_FALSE(r.ok()) << mask;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("updateMask"), std::string::npos);
  }
}

TEST(ParseJobPatchTest, RejectsMaskWithoutLabels) {
  auto r = ParseJobPatch(R"({"etag":"fhCHZ7hsq10="})", "etag");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ParseJobPatchTest, ValidatesLabels) {
  auto r = ParseJobPatch(R"({"labels":{"Owner":"x"}})", "labels");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("Owner"), std::string::npos);
}

TEST(ParseJobPatchTest, RejectsMalformedBodies) {
  for (const char* body :
       {"", "{", R"({"labels":"x"})", R"({"labels":{"a":1}})", R"({"labels":{},"bogus":1})",
        R"({"etag":5})", R"({"etag":"not base64!"})"}) {
    auto r = ParseJobPatch(body, "labels,etag");
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << body;
  }
}

}  // namespace
}  // namespace trainyard::model
