#include <gtest/gtest.h>

#include "trainyard/core/etag.h"
#include "trainyard/core/hash.h"
#include "trainyard/core/status.h"
#include "trainyard/core/time.h"
#include "trainyard/core/units.h"
#include "trainyard/core/util.h"

namespace trainyard {
namespace {

TEST(TimeTest, FormatsRfc3339WithoutFraction) {
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(1513629321LL * kMicrosPerSecond + 999999), "2017-12-18T20:35:21Z");
  EXPECT_EQ(FormatRfc3339Micros(1513629321LL * kMicrosPerSecond + 42),
            "2017-12-18T20:35:21.000042Z");
}

TEST(TimeTest, ParsesRfc3339Forms) {
  EXPECT_EQ(*ParseRfc3339("2017-12-18T20:35:21Z"), 1513629321LL * kMicrosPerSecond);
  EXPECT_EQ(*ParseRfc3339("2017-12-18T20:35:21.5Z"), 1513629321LL * kMicrosPerSecond + 500000);
  EXPECT_EQ(*ParseRfc3339("2017-12-18T21:35:21+01:00"), 1513629321LL * kMicrosPerSecond);
  EXPECT_EQ(*ParseRfc3339("2017-12-18T20:35:21.123456789Z"),
            1513629321LL * kMicrosPerSecond + 123456);
  for (const char* bad : {"", "2017-12-18", "2017-13-18T20:35:21Z", "2017-12-18T20:35:21",
                          "2017-12-18T20:35:21Zjunk", "2017-12-18T20:35:21."}) {
    EXPECT_FALSE(ParseRfc3339(bad).ok()) << bad;
  }
}

TEST(TimeTest, DurationsRoundTrip) {
  EXPECT_EQ(*ParseDuration("7200s"), 7200 * kMicrosPerSecond);
  EXPECT_EQ(*ParseDuration("1.5s"), 1500000);
  EXPECT_EQ(*ParseDuration("0.000000001s"), 0);
  EXPECT_EQ(FormatDuration(7200 * kMicrosPerSecond), "7200s");
  EXPECT_EQ(FormatDuration(1500000), "1.5s");
  EXPECT_EQ(FormatDuration(50000), "0.05s");
  for (const char* bad : {"", "s", "7200", "12m", "1.s", "abcs", "1.0000000001s",
                          "99999999999999999999s", "400000000000s"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(StatusTest, MapsCodesToHttpAndNames) {
  EXPECT_EQ(HttpStatusForCode(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusForCode(StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusForCode(StatusCode::kAlreadyExists), 409);
  EXPECT_EQ(HttpStatusForCode(StatusCode::kUnimplemented), 501);
  EXPECT_STREQ(StatusCodeName(StatusCode::kFailedPrecondition), "FAILED_PRECONDITION");
  Status st = InvalidArgument("bad");
  st.AddViolation("jobId", "must start with a letter");
  EXPECT_EQ(st.ToString(), "INVALID_ARGUMENT: bad [jobId: must start with a letter]");
}

TEST(ResultTest, CarriesValueOrStatus) {
  Result<int> ok = 3;
  Result<int> bad = NotFound("x");
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
}

TEST(UnitsTest, FormatsBytesInBinaryUnits) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(24LL << 20), "24.0 MiB");
  EXPECT_EQ(FormatBytes((3LL << 30) + (1LL << 29)), "3.5 GiB");
}

TEST(UtilTest, Base64AndSha256) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(*Base64Decode("Zm9vYg=="), "foob");
  EXPECT_FALSE(Base64Decode("Zm9").ok());
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Base64Decode(RandomEtag())->size(), 8u);
}

TEST(UtilTest, PercentEncodingRoundTrips) {
  EXPECT_EQ(PercentEncode("a b/c:d~e"), "a%20b%2Fc%3Ad~e");
  EXPECT_EQ(*PercentDecode("a%20b%2Fc%3ad~e+f"), "a b/c:d~e+f");
  const std::string binary("\xff\x00x", 3);
  EXPECT_EQ(*PercentDecode(PercentEncode(binary)), binary);
  EXPECT_FALSE(PercentDecode("bad%2").ok());
  EXPECT_FALSE(PercentDecode("bad%zz").ok());
}

TEST(UtilTest, SplitKeepsEmptyFields) {
  std::vector<std::string> want = {"a", "", "b"};
  EXPECT_EQ(Split("a,,b", ','), want);
  EXPECT_TRUE(StartsWith("gs://b", "gs://"));
  EXPECT_TRUE(EndsWith("x.tar.gz", ".tar.gz"));
}

TEST(HashTest, Fnv1aMatchesPublishedVectors) {
  // FNV's own test vectors for 64-bit FNV-1a.
  EXPECT_EQ(Fnv1a(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a("foobar"), 0x85944171f73967e8ull);
  // Chaining continues a hash: "foo" then "bar" is "foobar".
  EXPECT_EQ(Fnv1a("bar", Fnv1a("foo")), Fnv1a("foobar"));
  // The legacy basis gives other values, stable across builds (project numbers depend on it).
  static_assert(Fnv1a("", kFnv1aLegacyBasis) == kFnv1aLegacyBasis);
  EXPECT_NE(Fnv1a("a", kFnv1aLegacyBasis), Fnv1a("a"));
}

TEST(EtagTest, IfNoneMatchUsesWeakComparison) {
  EXPECT_TRUE(IfNoneMatchHits("\"v1\"", "\"v1\""));
  EXPECT_TRUE(IfNoneMatchHits("W/\"v1\"", "\"v1\""));
  EXPECT_TRUE(IfNoneMatchHits("\"v1\"", "W/\"v1\""));
  EXPECT_TRUE(IfNoneMatchHits(" \"x\" ,\t\"v1\" ", "\"v1\""));
  EXPECT_TRUE(IfNoneMatchHits("*", "\"v1\""));
  EXPECT_FALSE(IfNoneMatchHits("", "\"v1\""));
  EXPECT_FALSE(IfNoneMatchHits("\"v2\"", "\"v1\""));
  EXPECT_FALSE(IfNoneMatchHits("v1", "\"v1\""));
  EXPECT_FALSE(IfNoneMatchHits(", ,", "\"v1\""));
}

}  // namespace
}  // namespace trainyard
