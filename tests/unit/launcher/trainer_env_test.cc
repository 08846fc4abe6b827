#include "trainer_env.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace trainyard::launcher {
namespace {

namespace fs = std::filesystem;

TEST(TrainerEnvTest, OnlyAllowlistedHostVariablesReachTheTrainer) {
  EnvMap host = {{"PATH", "/usr/bin"},
                 {"HOME", "/root"},
                 {"LC_ALL", "C.UTF-8"},
                 {"AWS_SECRET_ACCESS_KEY", "secret"},
                 {"GOOGLE_APPLICATION_CREDENTIALS", "/etc/key.json"},
                 {"TRAINYARD_TOKEN", "t"},
                 {"PYTHONUNBUFFERED", ""},
                 {"PIP_INDEX_URL", "http://mirror"}};
  EnvMap env = TrainerEnvironment(host, {{"PYTHONUNBUFFERED", "1"}}, {{"TF_CONFIG", "{}"}});
  EXPECT_EQ(env, (EnvMap{{"PATH", "/usr/bin"},
                         {"HOME", "/root"},
                         {"LC_ALL", "C.UTF-8"},
                         {"PYTHONUNBUFFERED", "1"},
                         {"TF_CONFIG", "{}"}}));
}

TEST(TrainerEnvTest, TheAllowlistExtendsByNameAndPrefix) {
  EnvMap host = {{"PATH", "/bin"},       {"HTTPS_PROXY", "http://proxy:3128"},
                 {"NCCL_DEBUG", "INFO"}, {"NCCLX", "no"},
                 {"SECRET", "s"},        {kAllowEnvVar, "HTTPS_PROXY, NCCL_*"}};
  EnvMap env = HostEnvironment(host);
  EXPECT_EQ(env.count("HTTPS_PROXY"), 1u);
  EXPECT_EQ(env.count("NCCL_DEBUG"), 1u);
  EXPECT_EQ(env.count("NCCLX"), 0u);
  EXPECT_EQ(env.count("SECRET"), 0u);
  EXPECT_EQ(HostEnvironment({{"PIP_FIND_LINKS", "/w"}}, {"PIP_*"}).count("PIP_FIND_LINKS"), 1u);
  EXPECT_EQ(HostEnvironment({{"PIP_FIND_LINKS", "/w"}}).count("PIP_FIND_LINKS"), 0u);
}

TEST(TrainerEnvTest, TheSpecWinsOverDefaultsAndHost) {
  EnvMap env = TrainerEnvironment({{"PATH", "/bin"}}, {{"PYTHONUNBUFFERED", "1"}},
                                  {{"PYTHONUNBUFFERED", "0"}, {"PATH", "/opt/bin"}});
  EXPECT_EQ(env["PYTHONUNBUFFERED"], "0");
  EXPECT_EQ(env["PATH"], "/opt/bin");
}

TEST(TrainerEnvTest, StorageClientsPointAtTheStorageEmulatorHost) {
  StorageClientFiles files;
  EnvMap env = StorageClientEnvironment(
      {{"STORAGE_EMULATOR_HOST", "http://127.0.0.1:8470"}, {"CLOUD_ML_PROJECT_ID", "proj"}},
      "/w/master-replica-0", &files);
  EXPECT_EQ(env["CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE"], "http://127.0.0.1:8470/storage/v1/");
  EXPECT_EQ(env["CLOUDSDK_API_ENDPOINT_OVERRIDES_ML"], "http://127.0.0.1:8470/");
  EXPECT_EQ(env["CLOUDSDK_CORE_PROJECT"], "proj");
  EXPECT_EQ(env["CLOUDSDK_AUTH_DISABLE_CREDENTIALS"], "True");
  EXPECT_EQ(env["CLOUDSDK_CORE_CHECK_GCE_METADATA"], "False");
  EXPECT_EQ(env["CLOUDSDK_CONFIG"], "/w/master-replica-0/cloudsdk/config");
  EXPECT_EQ(env["BOTO_CONFIG"], "/w/master-replica-0/cloudsdk/boto");
  EXPECT_EQ(env["GOOGLE_CLOUD_PROJECT"], "proj");
  EXPECT_EQ(files.dir, "/w/master-replica-0/cloudsdk");
  EXPECT_NE(files.boto_text.find("use_gcloud_storage = True"), std::string::npos);
  EXPECT_NE(files.boto_text.find("default_project_id = proj"), std::string::npos);
  // The shim would turn gs_json_host into a broken https override of its own.
  EXPECT_EQ(files.boto_text.find("gs_json_host"), std::string::npos);
  // Without a storage endpoint nothing is configured.
  EXPECT_TRUE(StorageClientEnvironment({}, "/w", &files).empty());
  EXPECT_TRUE(files.token_file.empty());
}

TEST(TrainerEnvTest, TheJobsCredentialGoesToGcloudAndThroughItToGsutil) {
  StorageClientFiles files;
  EnvMap env = StorageClientEnvironment({{"STORAGE_EMULATOR_HOST", "http://127.0.0.1:8470"},
                                         {"CLOUD_ML_PROJECT_ID", "proj"},
                                         {"TRAINYARD_JOB_TOKEN", "ty1j.proj/j.mac"}},
                                        "/w/master-replica-0", &files);
  EXPECT_EQ(env.count("CLOUDSDK_AUTH_DISABLE_CREDENTIALS"), 0u);
  EXPECT_EQ(env["CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"], "/w/master-replica-0/cloudsdk/access_token");
  EXPECT_EQ(files.token_file, "/w/master-replica-0/cloudsdk/access_token");
  EXPECT_EQ(files.token_text, "ty1j.proj/j.mac\n");
  // The gcloud storage shim runs only with credentials passed and an active account.
  EXPECT_EQ(env["CLOUDSDK_CORE_PASS_CREDENTIALS_TO_GSUTIL"], "True");
  EXPECT_FALSE(env["CLOUDSDK_CORE_ACCOUNT"].empty());
  EXPECT_NE(files.boto_text.find("use_gcloud_storage = True"), std::string::npos);
}

TEST(TrainerEnvTest, RelativeGsFilesAreFoundAndNamed) {
  fs::path dir = fs::temp_directory_path() / ("ty_gs_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "gs:" / "bkt" / "sub");
  size_t total = 99;
  EXPECT_TRUE(RelativeGsFiles(dir.string(), 5, &total).empty());
  EXPECT_EQ(total, 0u);
  for (const char* name : {"gs:/bkt/b.pt", "gs:/bkt/a.pt", "gs:/bkt/sub/c.pt"}) {
    std::ofstream(dir / name) << "x";
  }
  auto files = RelativeGsFiles(dir.string(), 2, &total);
  EXPECT_EQ(total, 3u);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], "gs:/bkt/a.pt");
  EXPECT_EQ(files[1], "gs:/bkt/b.pt");
  std::string warning = RelativeGsWarning(dir.string(), files, total);
  EXPECT_NE(warning.find("3 files"), std::string::npos);
  EXPECT_NE(warning.find("gs:/bkt/a.pt, gs:/bkt/b.pt and 1 more"), std::string::npos);
  EXPECT_NE(warning.find("/gcs/BUCKET/PATH"), std::string::npos);
  EXPECT_EQ(RelativeGsWarning(dir.string(), {}, 0), "");
  fs::remove_all(dir);
}

TEST(TrainerEnvTest, LocalJobDirComesFromCloudMlJob) {
  EXPECT_EQ(LocalJobDirFromCloudMlJob(R"({"job_dir":"/srv/out/"})"), "/srv/out");
  EXPECT_EQ(LocalJobDirFromCloudMlJob(R"({"job_dir":"file:///srv/a%20b"})"), "/srv/a b");
  EXPECT_EQ(LocalJobDirFromCloudMlJob(R"({"job_dir":"gs://b/out"})"), "");
  EXPECT_EQ(LocalJobDirFromCloudMlJob(R"({"scale_tier":"BASIC"})"), "");
  EXPECT_EQ(LocalJobDirFromCloudMlJob("not json"), "");
}

}  // namespace
}  // namespace trainyard::launcher
