#include "upload_range.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace trainyard::storage::internal {
namespace {

TEST(ContentRange, Forms) {
  auto r = ParseContentRange("bytes 0-9/100");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r->first, 0);
  EXPECT_EQ(*r->last, 9);
  EXPECT_EQ(*r->total, 100);
  EXPECT_EQ(r->Length(), 10);

  r = ParseContentRange("bytes 10-19/*");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Length(), 10);
  EXPECT_FALSE(r->total.has_value());

  r = ParseContentRange("bytes */100");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->first.has_value());
  EXPECT_EQ(*r->total, 100);

  r = ParseContentRange("bytes */*");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->first.has_value());
  EXPECT_FALSE(r->total.has_value());
}

TEST(ContentRange, Refused) {
  for (const char* bad :
       {"", "bytes", "bytes 0-9", "items 0-9/10", "bytes 9-0/10", "bytes -1-9/10", "bytes 0-10/10",
        "bytes 0-9/-1", "bytes 0/10", "bytes 0-9/1x", "bytes 0-9 /10", "bytes a-b/*"}) {
    auto r = ParseContentRange(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(r.status().message(), "Invalid Content-Range");
    }
  }
}

// Seen while writing fuzz_upload_range (which calls Length() on every accepted range under
// UBSan): LAST = INT64_MAX made the chunk length (LAST - FIRST + 1) a signed
// overflow in the PUT handler. Such a range is refused, so Length() is always defined.
TEST(ContentRange, LastAtInt64MaxRefused) {
  const std::string max = std::to_string(std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(ParseContentRange("bytes 0-" + max + "/*").ok());
  EXPECT_FALSE(ParseContentRange("bytes 5-" + max + "/*").ok());
  auto r = ParseContentRange("bytes 0-" + std::to_string(std::numeric_limits<int64_t>::max() - 1) +
                             "/" + max);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Length(), std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace trainyard::storage::internal
