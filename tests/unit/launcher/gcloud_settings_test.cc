#include "trainyard/gcloud/gcloud_settings.h"

#include <gtest/gtest.h>

namespace trainyard::gcloud {
namespace {

TEST(GcloudSettingsTest, PropertiesBecomeCloudsdkVariables) {
  Ini props = {{"core", {{"project", "p"}}},
               {"api_endpoint_overrides", {{"storage", "http://h:1/storage/v1/"}}}};
  auto env = PropertiesAsEnvironment(props);
  EXPECT_EQ(env.size(), 2u);
  EXPECT_EQ(env["CLOUDSDK_CORE_PROJECT"], "p");
  EXPECT_EQ(env["CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE"], "http://h:1/storage/v1/");
}

TEST(GcloudSettingsTest, TrainersAndUsersShareTheEndpointOverrides) {
  GcloudSetup user;
  user.endpoint = "http://127.0.0.1:8470";
  Ini user_props = GcloudProperties(user);
  Ini trainer_props = TrainerGcloudProperties("http://127.0.0.1:8470", "p");
  auto section = [](const Ini& ini) {
    for (const IniSection& s : ini) {
      if (s.name == "api_endpoint_overrides") return s.entries;
    }
    return decltype(IniSection::entries){};
  };
  EXPECT_EQ(section(user_props), section(trainer_props));
  EXPECT_FALSE(section(trainer_props).empty());
}

}  // namespace
}  // namespace trainyard::gcloud
