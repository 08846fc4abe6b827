#include "flags.h"

#include <gtest/gtest.h>

namespace trainyard::cli {
namespace {

TEST(FlagsTest, SplitsCommaListsDroppingEmptyItems) {
  EXPECT_EQ(SplitCommaList("a,b,,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(SplitCommaList("").empty());
}

TEST(FlagsTest, ParsesLabels) {
  auto labels = ParseLabelsFlag("team=ml,env=,team=core");
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  EXPECT_EQ(labels->at("team"), "core");
  EXPECT_EQ(labels->at("env"), "");
}

TEST(FlagsTest, RejectsLabelWithoutEquals) {
  auto labels = ParseLabelsFlag("team");
  ASSERT_FALSE(labels.ok());
  EXPECT_NE(labels.status().message().find("Bad syntax for dict arg: [team]"), std::string::npos);
}

TEST(FlagsTest, RejectsInvalidLabelKey) {
  EXPECT_FALSE(ParseLabelsFlag("Team=ml").ok());
  EXPECT_FALSE(ParseLabelsFlag("1team=ml").ok());
}

TEST(FlagsTest, ParsesAcceleratorInAnySpelling) {
  auto a = ParseAcceleratorFlag("count=2,type=nvidia-tesla-t4");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->count, 2);
  EXPECT_EQ(a->type, "NVIDIA_TESLA_T4");
  auto b = ParseAcceleratorFlag("type=Nvidia_Tesla_V100,count=1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->type, "NVIDIA_TESLA_V100");
}

TEST(FlagsTest, AcceleratorNeedsBothKeys) {
  auto a = ParseAcceleratorFlag("type=nvidia-tesla-t4");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "Key [count] required in dict arg but not provided");
  EXPECT_FALSE(ParseAcceleratorFlag("count=1").ok());
  EXPECT_FALSE(ParseAcceleratorFlag("count=1,type=nvidia-tesla-t4,size=3").ok());
}

TEST(FlagsTest, AcceleratorCountMustBePositive) {
  auto a = ParseAcceleratorFlag("count=0,type=nvidia-tesla-t4");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "The count of the accelerator must be greater than 0.");
  EXPECT_FALSE(ParseAcceleratorFlag("count=x,type=nvidia-tesla-t4").ok());
}

TEST(FlagsTest, UnknownAcceleratorTypeListsChoices) {
  auto a = ParseAcceleratorFlag("count=1,type=gtx-1080");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(
      a.status().message().rfind("The type of the accelerator can only be one of the following: "
                                 "'nvidia-tesla-a100', 'nvidia-tesla-k80'",
                                 0),
      0u)
      << a.status().message();
}

TEST(FlagsTest, NormalizesScaleTiers) {
  EXPECT_EQ(*NormalizeScaleTier("basic"), "BASIC");
  EXPECT_EQ(*NormalizeScaleTier("standard-1"), "STANDARD_1");
  EXPECT_EQ(*NormalizeScaleTier("PREMIUM_1"), "PREMIUM_1");
  EXPECT_EQ(*NormalizeScaleTier("Basic-Gpu"), "BASIC_GPU");
  EXPECT_EQ(*NormalizeScaleTier("custom"), "CUSTOM");
  auto bad = NormalizeScaleTier("huge");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "Invalid choice: 'huge'. Valid choices are [basic, basic-gpu, basic-tpu, custom, "
            "premium-1, standard-1].");
}

TEST(FlagsTest, ParsesGcloudBooleans) {
  EXPECT_TRUE(*ParseBoolValue("yes"));
  EXPECT_TRUE(*ParseBoolValue("True"));
  EXPECT_FALSE(*ParseBoolValue("no"));
  EXPECT_FALSE(*ParseBoolValue("false"));
  EXPECT_FALSE(ParseBoolValue("maybe").ok());
}

}  // namespace
}  // namespace trainyard::cli
