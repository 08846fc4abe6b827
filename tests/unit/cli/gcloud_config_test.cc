// `trainyard gcloud-config`: the INI helpers, endpoint parsing and the files it writes.
#include "gcloud_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "commands.h"
#include "trainyard/core/util.h"

namespace trainyard::cli {
namespace {

namespace fs = std::filesystem;

std::string Get(const Ini& ini, const std::string& section, const std::string& key) {
  for (const auto& s : ini) {
    if (s.name != section) continue;
    for (const auto& [k, v] : s.entries) {
      if (k == key) return v;
    }
  }
  return "<missing>";
}

TEST(GcloudConfigTest, ParsesAndRendersIni) {
  Ini ini = ParseIni(
      "# comment\nstray = 1\n[core]\nproject = p\n; other\naccount: "
      "a@b\n\n[api_endpoint_overrides]\n"
      "ml = http://h:1/\nnonsense line\n");
  ASSERT_EQ(ini.size(), 2u);
  EXPECT_EQ(Get(ini, "core", "project"), "p");
  EXPECT_EQ(Get(ini, "core", "account"), "a@b");
  EXPECT_EQ(Get(ini, "core", "stray"), "<missing>");
  EXPECT_EQ(Get(ini, "api_endpoint_overrides", "ml"), "http://h:1/");
  EXPECT_EQ(RenderIni(ini),
            "[core]\nproject = p\naccount = a@b\n\n[api_endpoint_overrides]\nml = http://h:1/\n");
}

TEST(GcloudConfigTest, MergeKeepsOtherKeysAndOrder) {
  Ini base = ParseIni("[core]\naccount = me\nproject = old\n[extra]\nk = v\n");
  Ini merged = MergeIni(base, ParseIni("[core]\nproject = new\nx = 1\n[auth]\nf = /t\n"));
  EXPECT_EQ(RenderIni(merged),
            "[core]\naccount = me\nproject = new\nx = 1\n\n[extra]\nk = v\n\n[auth]\nf = /t\n");
}

TEST(GcloudConfigTest, ValidatesConfigNamesLikeGcloud) {
  EXPECT_TRUE(IsValidGcloudConfigName("trainyard"));
  EXPECT_TRUE(IsValidGcloudConfigName("ty-2"));
  EXPECT_FALSE(IsValidGcloudConfigName(""));
  EXPECT_FALSE(IsValidGcloudConfigName("2ty"));
  EXPECT_FALSE(IsValidGcloudConfigName("Trainyard"));
  EXPECT_FALSE(IsValidGcloudConfigName("ty_1"));
  EXPECT_FALSE(IsValidGcloudConfigName("../x"));
}

TEST(GcloudConfigTest, NormalizesEndpoints) {
  EXPECT_EQ(*NormalizeEndpoint("127.0.0.1:8470"), "http://127.0.0.1:8470");
  EXPECT_EQ(*NormalizeEndpoint("http://h:1/base/"), "http://h:1/base");
  EXPECT_EQ(*NormalizeEndpoint("https://h"), "https://h");
  EXPECT_FALSE(NormalizeEndpoint("ftp://h").ok());
  EXPECT_FALSE(NormalizeEndpoint("http:///x").ok());
}

TEST(GcloudConfigTest, ParsesTlsEndpointsAndSaysWhatIsWrong) {
  auto ok = ParseTlsEndpoint("https://127.0.0.1:8471/");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, "127.0.0.1");
  EXPECT_EQ(ok->second, "8471");
  auto v6 = ParseTlsEndpoint("https://[::1]:9");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->first, "::1");
  auto http = ParseTlsEndpoint("http://h:1");
  ASSERT_FALSE(http.ok());
  EXPECT_NE(http.status().message().find("https only"), std::string::npos);
  auto path = ParseTlsEndpoint("https://h:1/base");
  ASSERT_FALSE(path.ok());
  EXPECT_NE(path.status().message().find("path"), std::string::npos);
  EXPECT_FALSE(ParseTlsEndpoint("https://h").ok());
  EXPECT_FALSE(ParseTlsEndpoint("https://h:99999").ok());
  EXPECT_FALSE(ParseTlsEndpoint("https://:1").ok());
}

TEST(GcloudConfigTest, PropertiesPointEveryApiAtTheDaemon) {
  GcloudSetup s;
  s.endpoint = "http://127.0.0.1:8470";
  s.project = "p";
  s.region = "europe-west1";
  s.config_dir = "/cfg";
  Ini props = GcloudProperties(s);
  EXPECT_EQ(Get(props, "api_endpoint_overrides", "ml"), "http://127.0.0.1:8470/");
  EXPECT_EQ(Get(props, "api_endpoint_overrides", "storage"), "http://127.0.0.1:8470/storage/v1/");
  EXPECT_EQ(Get(props, "api_endpoint_overrides", "logging"), "http://127.0.0.1:8470/");
  EXPECT_EQ(Get(props, "core", "project"), "p");
  EXPECT_EQ(Get(props, "compute", "region"), "europe-west1");
  EXPECT_EQ(Get(props, "ai_platform", "region"), "global");
  EXPECT_EQ(Get(props, "auth", "access_token_file"), "/cfg/trainyard.access_token");
  EXPECT_EQ(Get(props, "core", "disable_usage_reporting"), "True");
  EXPECT_EQ(Get(props, "component_manager", "disable_update_check"), "True");
  EXPECT_EQ(GcloudConfigFilePath(s), "/cfg/configurations/config_trainyard");
  EXPECT_EQ(BotoFilePath(s), "/cfg/trainyard.boto");
}

TEST(GcloudConfigTest, BotoPointsGsutilAtTheTlsListener) {
  GcloudSetup s;
  s.tls_host = "127.0.0.1";
  s.tls_port = "8471";
  s.project = "p";
  Ini boto = BotoSettings(s);
  EXPECT_EQ(Get(boto, "Credentials", "gs_json_host"), "127.0.0.1");
  EXPECT_EQ(Get(boto, "Credentials", "gs_json_port"), "8471");
  EXPECT_EQ(Get(boto, "Boto", "https_validate_certificates"), "False");
  EXPECT_EQ(Get(boto, "GSUtil", "default_project_id"), "p");
  EXPECT_EQ(Get(boto, "GSUtil", "prefer_api"), "json");
}

class GcloudConfigCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ty_gcloud_config_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    setenv("CLOUDSDK_CONFIG", dir_.c_str(), 1);
    unsetenv("TRAINYARD_TLS_ENDPOINT");
    unsetenv("TRAINYARD_REGION");
    unsetenv("TRAINYARD_TOKEN");
  }
  void TearDown() override {
    unsetenv("CLOUDSDK_CONFIG");
    fs::remove_all(dir_);
  }

  int Run(std::vector<std::string> args) {
    std::vector<std::string> argv = {"trainyard", "--endpoint", "http://127.0.0.1:9999",
                                     "--project", "proj"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::ostringstream out, err;
    int rc = RunCli(argv, out, err, false);
    out_ = out.str();
    err_ = err.str();
    return rc;
  }

  std::string Read(const fs::path& p) {
    auto r = ReadFile(p.string());
    return r.ok() ? *r : "<unreadable>";
  }

  fs::path dir_;
  std::string out_, err_;
};

TEST_F(GcloudConfigCommandTest, PrintsWithoutWritingAnything) {
  ASSERT_EQ(Run({"gcloud-config"}), 0) << err_;
  EXPECT_NE(out_.find("ml = http://127.0.0.1:9999/\n"), std::string::npos) << out_;
  EXPECT_NE(out_.find("gs_json_port = 8471\n"), std::string::npos) << out_;
  EXPECT_NE(out_.find((dir_ / "configurations" / "config_trainyard").string()), std::string::npos);
  EXPECT_NE(err_.find("--apply"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(GcloudConfigCommandTest, ApplyWritesConfigurationBotoAndToken) {
  ASSERT_EQ(Run({"gcloud-config", "--apply", "--tls-endpoint", "https://localhost:1234", "--region",
                 "asia-east1"}),
            0)
      << err_;
  Ini props = ParseIni(Read(dir_ / "configurations" / "config_trainyard"));
  EXPECT_EQ(Get(props, "api_endpoint_overrides", "storage"), "http://127.0.0.1:9999/storage/v1/");
  EXPECT_EQ(Get(props, "core", "project"), "proj");
  EXPECT_EQ(Get(props, "compute", "region"), "asia-east1");
  Ini boto = ParseIni(Read(dir_ / "trainyard.boto"));
  EXPECT_EQ(Get(boto, "Credentials", "gs_json_host"), "localhost");
  EXPECT_EQ(Get(boto, "Credentials", "gs_json_port"), "1234");
  fs::path token = dir_ / "trainyard.access_token";
  EXPECT_FALSE(Read(token).empty());
  EXPECT_EQ(fs::status(token).permissions() & fs::perms::others_read, fs::perms::none);
  // Not activated unless asked; an empty default configuration exists to switch back to.
  EXPECT_FALSE(fs::exists(dir_ / "active_config"));
  EXPECT_TRUE(fs::exists(dir_ / "configurations" / "config_default"));
  EXPECT_NE(err_.find("gcloud config configurations activate trainyard"), std::string::npos);
  EXPECT_NE(err_.find("export BOTO_CONFIG=" + (dir_ / "trainyard.boto").string()),
            std::string::npos);
}

TEST_F(GcloudConfigCommandTest, ApplyKeepsOtherPropertiesAndCanActivate) {
  fs::create_directories(dir_ / "configurations");
  ASSERT_TRUE(WriteFileAtomic((dir_ / "configurations" / "config_ty").string(),
                              "[core]\naccount = me@example.com\nproject = old\n")
                  .ok());
  setenv("TRAINYARD_TOKEN", "secret-token", 1);
  ASSERT_EQ(Run({"gcloud-config", "--apply", "--activate", "--name", "ty"}), 0) << err_;
  unsetenv("TRAINYARD_TOKEN");
  Ini props = ParseIni(Read(dir_ / "configurations" / "config_ty"));
  EXPECT_EQ(Get(props, "core", "account"), "me@example.com");
  EXPECT_EQ(Get(props, "core", "project"), "proj");
  EXPECT_EQ(Get(props, "auth", "access_token_file"), (dir_ / "ty.access_token").string());
  EXPECT_EQ(Read(dir_ / "ty.access_token"), "secret-token\n");
  EXPECT_EQ(Read(dir_ / "active_config"), "ty");
  EXPECT_NE(err_.find("Activated [ty]."), std::string::npos);
}

TEST_F(GcloudConfigCommandTest, RefusesBadNamesAndTlsEndpoints) {
  EXPECT_EQ(Run({"gcloud-config", "--apply", "--name", "Bad_Name"}), 1);
  EXPECT_NE(err_.find("ERROR: (trainyard.gcloud-config) argument --name"), std::string::npos)
      << err_;
  setenv("TRAINYARD_TLS_ENDPOINT", "http://127.0.0.1:8471", 1);
  EXPECT_EQ(Run({"gcloud-config"}), 1);
  unsetenv("TRAINYARD_TLS_ENDPOINT");
  EXPECT_NE(err_.find("https only"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_));
}

}  // namespace
}  // namespace trainyard::cli
