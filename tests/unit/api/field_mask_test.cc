#include "field_mask.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http_cache.h"
#include "trainyard/core/etag.h"

namespace trainyard::api {
namespace {

using nlohmann::ordered_json;

std::string Mask(const std::string& mask, const std::string& body) {
  auto m = ParseFieldMask(mask);
  EXPECT_TRUE(m.ok()) << mask << ": " << m.status().message();
  if (!m.ok()) return "";
  auto out = ApplyFieldMaskToText(body, *m);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : "";
}

constexpr const char* kList = R"({"jobs":[
  {"jobId":"a","state":"RUNNING","labels":{"team":"x"},
   "trainingInput":{"args":["1"],"region":"r","masterConfig":{"imageUri":"i"}},
   "trainingOutput":{"trials":[{"trialId":"1","finalMetric":{"objectiveValue":0.5}}]}},
  {"jobId":"b","state":"QUEUED","jobPosition":"3"}],
  "nextPageToken":"t"})";

TEST(FieldMaskTest, SelectsListFieldsOfEveryElement) {
  EXPECT_EQ(Mask("jobs(jobId,state),nextPageToken", kList),
            R"({"jobs":[{"jobId":"a","state":"RUNNING"},{"jobId":"b","state":"QUEUED"}],)"
            R"("nextPageToken":"t"})");
  EXPECT_EQ(Mask("nextPageToken", kList), R"({"nextPageToken":"t"})");
}

TEST(FieldMaskTest, PathsSubSelectionsAndWildcards) {
  EXPECT_EQ(Mask("jobs/trainingInput/region", kList),
            R"({"jobs":[{"trainingInput":{"region":"r"}},{}]})");
  EXPECT_EQ(Mask("jobs(trainingInput(masterConfig/imageUri,args))", kList),
            R"({"jobs":[{"trainingInput":{"args":["1"],"masterConfig":{"imageUri":"i"}}},{}]})");
  EXPECT_EQ(Mask("jobs/trainingOutput/trials/finalMetric/objectiveValue", kList),
            R"({"jobs":[{"trainingOutput":{"trials":[{"finalMetric":{"objectiveValue":0.5}}]}},)"
            R"({}]})");
  // "*" selects every field of its level; a sub-selection applies to each.
  EXPECT_EQ(Mask("jobs/labels/*", kList), R"({"jobs":[{"labels":{"team":"x"}},{}]})");
  EXPECT_EQ(Mask("*", R"({"a":1,"b":{"c":2}})"), R"({"a":1,"b":{"c":2}})");
  EXPECT_EQ(Mask("*(c)", R"({"a":{"c":1,"d":2},"b":{"c":2}})"), R"({"a":{"c":1},"b":{"c":2}})");
  // A field named and the wildcard both apply to it.
  EXPECT_EQ(Mask("*/c,a/d", R"({"a":{"c":1,"d":2,"e":3}})"), R"({"a":{"c":1,"d":2}})");
  // Selecting a field whole wins over a narrower selection of it, in either order.
  EXPECT_EQ(Mask("a/c,a", R"({"a":{"c":1,"d":2}})"), R"({"a":{"c":1,"d":2}})");
  EXPECT_EQ(Mask("a,a/c", R"({"a":{"c":1,"d":2}})"), R"({"a":{"c":1,"d":2}})");
  // Spaces around names and separators are ignored.
  EXPECT_EQ(Mask(" jobs ( jobId , state ) , nextPageToken ", kList),
            Mask("jobs(jobId,state),nextPageToken", kList));
}

TEST(FieldMaskTest, AbsentFieldsSelectNothingAndKeepOrder) {
  EXPECT_EQ(Mask("nope", kList), "{}");
  EXPECT_EQ(Mask("jobs(nope)", kList), R"({"jobs":[{},{}]})");
  // The answer keeps the body's key order, not the mask's.
  EXPECT_EQ(Mask("state,jobId", R"({"jobId":"a","state":"S"})"), R"({"jobId":"a","state":"S"})");
  // An object the answer had empty stays; one that the mask emptied goes.
  EXPECT_EQ(Mask("a,b/x", R"({"a":{},"b":{"y":1}})"), R"({"a":{}})");
  // A selection below a scalar keeps the scalar.
  EXPECT_EQ(Mask("jobId/x", R"({"jobId":"a"})"), R"({"jobId":"a"})");
}

TEST(FieldMaskTest, RefusesBadSyntaxNamingFields) {
  for (const char* bad :
       {"",   " ",  ",",   "a,",  ",a",    "a(",         "a()",  "a)",    "a(b", "a((b))", "a//b",
        "/a", "a/", "a b", "a.b", "a(b)c", "jobs(jobId", "a,,b", "a(b,)", "a$",  "a/*x"}) {
    auto m = ParseFieldMask(bad);
    ASSERT_FALSE(m.ok()) << "accepted \"" << bad << "\"";
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    ASSERT_EQ(m.status().violations().size(), 1u);
    EXPECT_EQ(m.status().violations()[0].field, "fields");
    EXPECT_NE(m.status().message().find("position"), std::string::npos) << m.status().message();
  }
  EXPECT_FALSE(ParseFieldMask(std::string(kMaxFieldMaskBytes + 1, 'a')).ok());
  std::string deep;
  for (int i = 0; i < kMaxFieldMaskDepth + 2; ++i) deep += "a(";
  deep += "b";
  for (int i = 0; i < kMaxFieldMaskDepth + 2; ++i) deep += ")";
  EXPECT_FALSE(ParseFieldMask(deep).ok());
  std::string long_path = "a";
  for (int i = 0; i < kMaxFieldMaskDepth + 2; ++i) long_path += "/a";
  EXPECT_FALSE(ParseFieldMask(long_path).ok());
}

TEST(FieldMaskTest, CanonicalTextParsesToTheSameMask) {
  for (const char* text : {"jobs(jobId,state),nextPageToken", "a/b/c,a/d", "*(c),a", "a,a/c",
                           "x-y_z", "*/c,a/d", "b(*),a(*(z))"}) {
    auto m = ParseFieldMask(text);
    ASSERT_TRUE(m.ok()) << text;
    auto again = ParseFieldMask(m->ToString());
    ASSERT_TRUE(again.ok()) << m->ToString();
    EXPECT_EQ(*again, *m) << text << " -> " << m->ToString();
  }
  EXPECT_EQ(ParseFieldMask("nextPageToken,jobs(state,jobId)")->ToString(),
            "jobs(jobId,state),nextPageToken");
  EXPECT_EQ(ParseFieldMask("a/c,a")->ToString(), "a");
}

TEST(FieldMaskTest, NonJsonBodyIsAnInternalError) {
  auto m = ParseFieldMask("a");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(ApplyFieldMaskToText("not json", *m).status().code(), StatusCode::kInternal);
}

TEST(HttpCacheTest, BodyEtagFollowsTheBytes) {
  const std::string a = BodyEtag(R"({"jobs":[]})");
  EXPECT_EQ(a, BodyEtag(R"({"jobs":[]})"));
  EXPECT_NE(a, BodyEtag(R"({"jobs":[1]})"));
  EXPECT_NE(BodyEtag("ab"), BodyEtag("ba"));
  EXPECT_EQ(a.front(), '"');
  EXPECT_EQ(a.back(), '"');
}

TEST(HttpCacheTest, IfNoneMatchUsesWeakComparison) {
  const std::string tag = "\"abc-1\"";
  EXPECT_TRUE(IfNoneMatchHits(tag, tag));
  EXPECT_TRUE(IfNoneMatchHits("W/" + tag, tag));
  EXPECT_TRUE(IfNoneMatchHits("\"x\", " + tag, tag));
  EXPECT_TRUE(IfNoneMatchHits("\"x\",W/" + tag + " ", tag));
  EXPECT_TRUE(IfNoneMatchHits("*", tag));
  EXPECT_FALSE(IfNoneMatchHits("", tag));
  EXPECT_FALSE(IfNoneMatchHits("\"abc-2\"", tag));
  EXPECT_FALSE(IfNoneMatchHits("abc-1", tag));  // unquoted: not the same tag
  EXPECT_FALSE(IfNoneMatchHits(",,", tag));
}

}  // namespace
}  // namespace trainyard::api
