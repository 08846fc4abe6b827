// The console session cookie's parsing and its CSRF rule (docs/security.md "The console").
#include <gtest/gtest.h>
#include <httplib.h>

#include "iam_api.h"

namespace trainyard::api {
namespace {

httplib::Request Req(const std::string& method, httplib::Headers headers) {
  httplib::Request r;
  r.method = method;
  r.headers = std::move(headers);
  return r;
}

TEST(SessionCookieTest, FindsTheCookieAmongOthers) {
  EXPECT_EQ(SessionCookieToken(Req("GET", {{"Cookie", "a=1; ty_console_session=ty1.ab.cd; b=2"}})),
            "ty1.ab.cd");
  EXPECT_EQ(SessionCookieToken(Req("GET", {{"Cookie", "ty_console_session=x"}})), "x");
  // Several Cookie headers; a name that merely ends with ours does not count.
  EXPECT_EQ(SessionCookieToken(Req("GET", {{"Cookie", "my_ty_console_session=no"},
                                           {"Cookie", "ty_console_session=yes"}})),
            "yes");
  EXPECT_EQ(SessionCookieToken(Req("GET", {{"Cookie", "ty_console_session="}})), "");
  EXPECT_EQ(SessionCookieToken(Req("GET", {})), "");
  // Oversized values are cut (and then fail authentication) rather than hashed whole.
  std::string huge(100000, 'a');
  EXPECT_EQ(SessionCookieToken(Req("GET", {{"Cookie", "ty_console_session=" + huge}})).size(),
            kMaxCredentialBytes);
}

TEST(SessionCookieTest, OnlySafeMethodsUseTheCookieAlone) {
  EXPECT_TRUE(SessionCookieUsable(Req("GET", {})));
  EXPECT_TRUE(SessionCookieUsable(Req("HEAD", {})));
  EXPECT_FALSE(SessionCookieUsable(Req("POST", {})));
  EXPECT_FALSE(SessionCookieUsable(Req("DELETE", {{"X-Trainyard-Console", "0"}})));
  EXPECT_TRUE(SessionCookieUsable(Req("POST", {{"X-Trainyard-Console", "1"}})));
  EXPECT_TRUE(SessionCookieUsable(Req(
      "PATCH", {{"X-Trainyard-Console", "1"}, {"Host", "h:8470"}, {"Origin", "http://h:8470"}})));
  EXPECT_TRUE(SessionCookieUsable(Req(
      "POST", {{"X-Trainyard-Console", "1"}, {"Host", "h:8471"}, {"Origin", "https://h:8471"}})));
  EXPECT_FALSE(SessionCookieUsable(
      Req("POST", {{"X-Trainyard-Console", "1"}, {"Host", "h:8470"}, {"Origin", "http://evil"}})));
  EXPECT_FALSE(
      SessionCookieUsable(Req("POST", {{"X-Trainyard-Console", "1"}, {"Origin", "null"}})));
}

TEST(SessionCookieTest, CookieAttributes) {
  EXPECT_EQ(SessionCookie("ty1.a.b", 60, false),
            "ty_console_session=ty1.a.b; Path=/; Max-Age=60; HttpOnly; SameSite=Strict");
  EXPECT_EQ(SessionCookie("", 0, true),
            "ty_console_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure");
}

}  // namespace
}  // namespace trainyard::api
