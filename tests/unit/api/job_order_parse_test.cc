// projects.jobs.list's orderBy (api_util.h, ParseJobOrder): Google's "field [asc|desc]".
#include <gtest/gtest.h>

#include <string>

#include "api_util.h"

namespace trainyard::api {
namespace {

using store::JobOrder;
using store::JobOrderKey;

JobOrder Parsed(const std::string& text) {
  auto order = ParseJobOrder(text);
  EXPECT_TRUE(order.ok()) << text << ": " << order.status().ToString();
  return order.ok() ? *order : JobOrder{};
}

TEST(ParseJobOrderTest, FieldsAndDirections) {
  EXPECT_EQ(Parsed("createTime"), (JobOrder{JobOrderKey::kCreateTime, false}));
  EXPECT_EQ(Parsed("createTime desc"), (JobOrder{JobOrderKey::kCreateTime, true}));
  EXPECT_EQ(Parsed("  start_time   DESC "), (JobOrder{JobOrderKey::kStartTime, true}));
  EXPECT_EQ(Parsed("endTime asc"), (JobOrder{JobOrderKey::kEndTime, false}));
  EXPECT_EQ(Parsed("job_id"), (JobOrder{JobOrderKey::kJobId, false}));
  EXPECT_EQ(Parsed("jobId Desc"), (JobOrder{JobOrderKey::kJobId, true}));
  EXPECT_EQ(Parsed("state desc"), (JobOrder{JobOrderKey::kState, true}));
}

TEST(ParseJobOrderTest, BlankIsTheDefaultOrder) {
  EXPECT_EQ(Parsed(""), JobOrder{});
  EXPECT_EQ(Parsed(" \t"), JobOrder{});
}

TEST(ParseJobOrderTest, AnythingElseIsInvalidArgumentNamingOrderBy) {
  for (const char* text : {"duration", "createtime", "labels.owner", "createTime up",
                           "createTime desc jobId", "state, jobId", "jobId,", "desc"}) {
    auto order = ParseJobOrder(text);
    ASSERT_FALSE(order.ok()) << text;
    EXPECT_EQ(order.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(order.status().message().find(std::string("\"") + text + "\""), std::string::npos)
        << order.status().message();
    ASSERT_EQ(order.status().violations().size(), 1u) << text;
    EXPECT_EQ(order.status().violations()[0].field, "orderBy");
  }
  EXPECT_NE(ParseJobOrder("duration").status().message().find("unknown field \"duration\""),
            std::string::npos);
}

}  // namespace
}  // namespace trainyard::api
