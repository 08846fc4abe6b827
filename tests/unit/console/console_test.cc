#include "trainyard/console/console.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace trainyard::console {
namespace {

const unsigned char kIndex[] = "<html>index</html>";
const unsigned char kIndexGz[] = "GZ-INDEX";
const unsigned char kJs[] = "console.log(1)";
const unsigned char kJsGz[] = "GZ-JS";
const unsigned char kLic[] = "licences";

const ConsoleAsset kAssets[] = {
    {"index.html", "text/html; charset=utf-8", "\"i1\"", false, kIndex, sizeof kIndex - 1, kIndexGz,
     sizeof kIndexGz - 1},
    {"assets/main-ABC.js", "text/javascript; charset=utf-8", "\"j1\"", true, kJs, sizeof kJs - 1,
     kJsGz, sizeof kJsGz - 1},
    {"LICENSES.txt", "text/plain; charset=utf-8", "\"l1\"", false, kLic, sizeof kLic - 1, nullptr,
     0},
};

std::map<std::string, std::string> Headers(const ConsoleReply& r) {
  return {r.headers.begin(), r.headers.end()};
}

std::string Body(const ConsoleReply& r) {
  return r.body ? std::string(reinterpret_cast<const char*>(r.body), r.size) : r.text;
}

TEST(ConsoleServeTest, HashedAssetIsImmutableAndGzipWhenAccepted) {
  auto r = ServeConsole(kAssets, "assets/main-ABC.js", "gzip, deflate, br", "");
  EXPECT_EQ(r.status, 200);
  auto h = Headers(r);
  EXPECT_EQ(h["Cache-Control"], "public, max-age=31536000, immutable");
  EXPECT_EQ(h["Content-Encoding"], "gzip");
  EXPECT_EQ(h["Vary"], "Accept-Encoding");
  EXPECT_EQ(h["ETag"], "\"j1\"");
  EXPECT_EQ(r.mime, "text/javascript; charset=utf-8");
  EXPECT_EQ(Body(r), "GZ-JS");

  auto plain = ServeConsole(kAssets, "assets/main-ABC.js", "", "");
  EXPECT_EQ(Headers(plain).count("Content-Encoding"), 0u);
  EXPECT_EQ(Body(plain), "console.log(1)");
  auto refused = ServeConsole(kAssets, "assets/main-ABC.js", "gzip;q=0, br", "");
  EXPECT_EQ(Body(refused), "console.log(1)");
}

TEST(ConsoleServeTest, DeepLinksGetTheIndexWithoutCaching) {
  for (const char* path : {"", "projects/p/jobs", "projects/p/jobs/j1/logs", "index.html"}) {
    auto r = ServeConsole(kAssets, path, "", "");
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(Body(r), "<html>index</html>") << path;
    EXPECT_EQ(Headers(r)["Cache-Control"], "no-cache") << path;
    EXPECT_EQ(r.mime, "text/html; charset=utf-8");
  }
}

TEST(ConsoleServeTest, UnknownAssetIsNotFoundNotTheIndex) {
  auto r = ServeConsole(kAssets, "assets/main-OLD.js", "gzip", "");
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(Body(r).find("assets/main-OLD.js"), std::string::npos);
}

TEST(ConsoleServeTest, OtherFilesOfTheTableByName) {
  auto r = ServeConsole(kAssets, "LICENSES.txt", "gzip", "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Body(r), "licences");  // no gzip copy: identity
  EXPECT_EQ(Headers(r).count("Vary"), 0u);
}

TEST(ConsoleServeTest, RevalidationAnswers304) {
  EXPECT_EQ(ServeConsole(kAssets, "projects/p/jobs", "", "\"i1\"").status, 304);
  EXPECT_EQ(ServeConsole(kAssets, "projects/p/jobs", "", "W/\"i1\"").status, 304);
  EXPECT_EQ(ServeConsole(kAssets, "projects/p/jobs", "", "\"x\", \"i1\"").status, 304);
  EXPECT_EQ(ServeConsole(kAssets, "projects/p/jobs", "", "*").status, 304);
  auto stale = ServeConsole(kAssets, "projects/p/jobs", "", "\"old\"");
  EXPECT_EQ(stale.status, 200);
  EXPECT_EQ(Body(stale), "<html>index</html>");
  auto r = ServeConsole(kAssets, "assets/main-ABC.js", "gzip", "\"j1\"");
  EXPECT_EQ(r.status, 304);
  EXPECT_EQ(r.size, 0u);
}

TEST(ConsoleServeTest, EveryAnswerCarriesTheSecurityHeaders) {
  for (const char* path : {"projects/p/jobs", "assets/main-ABC.js", "assets/nope.js"}) {
    auto h = Headers(ServeConsole(kAssets, path, "", ""));
    EXPECT_NE(h["Content-Security-Policy"].find("script-src 'self'"), std::string::npos);
    EXPECT_NE(h["Content-Security-Policy"].find("frame-ancestors 'none'"), std::string::npos);
    EXPECT_EQ(h["Content-Security-Policy"].find("unsafe-inline"), std::string::npos);
    EXPECT_EQ(h["X-Content-Type-Options"], "nosniff");
    EXPECT_EQ(h["Referrer-Policy"], "same-origin");
  }
}

TEST(ConsoleServeTest, AcceptEncodingParsing) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("br, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_TRUE(AcceptsGzip("gzip;q=1.0"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("br, deflate"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0.000, *"));
  EXPECT_FALSE(AcceptsGzip("*;q=0"));
  EXPECT_FALSE(AcceptsGzip("x-gzip"));
}

TEST(ConsoleServeTest, GcloudJobLinks) {
  EXPECT_EQ(JobLinkTarget("census_1", "my-proj", "default"),
            "/console/projects/my-proj/jobs/census_1");
  EXPECT_EQ(JobLinkTarget("census_1", "", "default"), "/console/projects/default/jobs/census_1");
  EXPECT_EQ(JobLinkTarget("a/b", "p", "default"), "");
  EXPECT_EQ(JobLinkTarget("j", "p\r\nSet-Cookie: x", "default"), "");
  EXPECT_EQ(JobLinkTarget("", "p", "default"), "");
}

TEST(ConsoleServeTest, TheBinaryEmbedsAnIndex) {
  auto assets = EmbeddedAssets();
  auto r = ServeConsole(assets, "projects/p/jobs", "", "");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(Body(r).find("<html"), std::string::npos);
  if (!IsPlaceholder()) {
    // The built index names its hashed script and stylesheet, and both are in the table.
    std::string index = Body(r);
    size_t js = index.find("/console/assets/");
    ASSERT_NE(js, std::string::npos);
    int hashed = 0;
    for (const auto& a : assets) {
      if (a.immutable) {
        ++hashed;
        EXPECT_NE(index.find("/console/" + std::string(a.path)), std::string::npos) << a.path;
        EXPECT_NE(a.gz, nullptr);
        EXPECT_LT(a.gz_size, a.size);
      }
    }
    EXPECT_EQ(hashed, 2);
  }
}

}  // namespace
}  // namespace trainyard::console
