#include "config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace trainyard::daemon {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = "/tmp/ty_config_test_" + std::to_string(::getpid()) + ".yaml"; }
  void TearDown() override {
    ::unlink(path_.c_str());
    ::unsetenv("TRAINYARD_LISTEN");
    ::unsetenv("TRAINYARD_MAX_RUNNING_JOBS");
  }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::string path_;
};

TEST_F(ConfigTest, FileThenEnvironmentThenFlags) {
  Write(
      "listen: 0.0.0.0:9000\nmax_running_jobs: 3\ncancel_grace: 30s\n"
      "pip_find_links: [/a, /b]\n");
  DaemonConfig c;
  ASSERT_TRUE(ApplyConfigFile(path_, c).ok());
  EXPECT_EQ(c.listen, "0.0.0.0:9000");
  EXPECT_EQ(c.max_running_jobs, 3);
  EXPECT_EQ(c.cancel_grace, "30s");
  std::vector<std::string> links = {"/a", "/b"};
  EXPECT_EQ(c.pip_find_links, links);
  ::setenv("TRAINYARD_LISTEN", "127.0.0.1:9100", 1);
  ASSERT_TRUE(ApplyEnvironment(c).ok());
  EXPECT_EQ(c.listen, "127.0.0.1:9100");
  EXPECT_EQ(c.max_running_jobs, 3);
  ASSERT_TRUE(SetConfigValue(c, "listen", "127.0.0.1:0").ok());
  EXPECT_EQ(c.listen, "127.0.0.1:0");
}

TEST_F(ConfigTest, RejectsUnknownKeysAndBadValuesNamingThem) {
  Write("lisen: 1.2.3.4:5\n");
  DaemonConfig c;
  Status st = ApplyConfigFile(path_, c);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("lisen"), std::string::npos) << st.message();
  Write("cancel_grace: ten seconds\n");
  st = ApplyConfigFile(path_, c);
  EXPECT_NE(st.message().find("cancel_grace"), std::string::npos) << st.message();
  ::setenv("TRAINYARD_MAX_RUNNING_JOBS", "many", 1);
  st = ApplyEnvironment(c);
  EXPECT_NE(st.message().find("TRAINYARD_MAX_RUNNING_JOBS"), std::string::npos) << st.message();
  EXPECT_FALSE(SetConfigValue(c, "listen", "no-port").ok());
  Write("- not\n- a map\n");
  EXPECT_FALSE(ApplyConfigFile(path_, c).ok());
}

TEST_F(ConfigTest, NodeResourceSettingsAreCheckedNotTrusted) {
  DaemonConfig c;
  EXPECT_TRUE(SetConfigValue(c, "node_memory", "24GiB").ok());
  EXPECT_EQ(*ParseByteSize("24GiB"), 24LL << 30);
  EXPECT_EQ(*ParseByteSize("1.5G"), 3LL << 29);
  EXPECT_EQ(*ParseByteSize("2GB"), 2000000000);
  EXPECT_EQ(*ParseByteSize("512"), 512);
  for (const char* bad : {"lots", "1e30GiB", "inf", "nan", "-1G", "12 parsecs"}) {
    EXPECT_FALSE(ParseByteSize(bad).ok()) << bad;
    Status st = SetConfigValue(c, "node_memory", bad);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("node_memory"), std::string::npos) << st.message();
  }
  for (const char* bad : {"0", "-2", "inf", "nan", "1e300", "x"}) {
    EXPECT_FALSE(SetConfigValue(c, "cpu_overcommit", bad).ok()) << bad;
    EXPECT_FALSE(SetConfigValue(c, "memory_overcommit", bad).ok()) << bad;
  }
  EXPECT_TRUE(SetConfigValue(c, "cpu_overcommit", "1.5").ok());
  EXPECT_DOUBLE_EQ(c.cpu_overcommit, 1.5);
  EXPECT_TRUE(SetConfigValue(c, "gpus", "2xNVIDIA_TESLA_T4,NVIDIA_TESLA_V100").ok());
  EXPECT_TRUE(SetConfigValue(c, "gpus", "none").ok());
  EXPECT_TRUE(SetConfigValue(c, "gpus", "auto").ok());
  for (const char* bad :
       {"99999999999xNVIDIA_TESLA_T4", "t4", "NVIDIA TESLA T4", "0xNVIDIA_TESLA_T4"}) {
    Status st = SetConfigValue(c, "gpus", bad);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("gpus"), std::string::npos) << st.message();
  }
  EXPECT_FALSE(SetConfigValue(c, "gpu_type_match", "fuzzy").ok());
  EXPECT_FALSE(SetConfigValue(c, "replica_restarts", "-1").ok());
  EXPECT_FALSE(SetConfigValue(c, "resource_limits", "perhaps").ok());
}

TEST_F(ConfigTest, ReadsRuntimes) {
  Write(
      "runtimes:\n  - name: py\n    python: /usr/bin/python3\n"
      "    runtime_versions: ['2.*']\n    python_versions: '*'\n");
  DaemonConfig c;
  ASSERT_TRUE(ApplyConfigFile(path_, c).ok());
  ASSERT_EQ(c.runtimes.size(), 1u);
  EXPECT_EQ(c.runtimes[0].name, "py");
  EXPECT_EQ(c.runtimes[0].runtime_versions, std::vector<std::string>{"2.*"});
  EXPECT_NE(DumpConfig(c).find("runtime_versions: [\"2.*\"]"), std::string::npos);
  EXPECT_NE(ConfigReference().find("`TRAINYARD_CANCEL_GRACE`"), std::string::npos);
}

// `trainyardd --print-config` output is a config file: print -> load -> print gives the same
// text, and the loaded config is the printed one (the defaults' "*" once broke the load).
// The daemon finds the launcher in the build tree (beside it) and in an installed layout
// (<prefix>/<libexecdir>/trainyard/), wherever the tree was installed or copied.
TEST(LauncherCandidatesTest, BesideTheDaemonThenTheInstalledLibexecDir) {
  const std::string bindir = TRAINYARD_INSTALL_BINDIR;
  const std::string libexec = TRAINYARD_INSTALL_LIBEXECDIR;
  ASSERT_NE(bindir[0], '/');
  ASSERT_NE(libexec[0], '/');
  auto c = LauncherCandidates("/opt/moved/" + bindir + "/trainyardd");
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0], "/opt/moved/" + bindir + "/trainyard-launcher");
  EXPECT_EQ(c[1], "/opt/moved/" + libexec + "/trainyard/trainyard-launcher");
  EXPECT_EQ(c.back(),
            std::string(TRAINYARD_INSTALL_FULL_LIBEXECDIR) + "/trainyard/trainyard-launcher");
  // A daemon outside any <bindir> (a build tree): beside it, then the configured prefix.
  c = LauncherCandidates("/work/build/out/trainyardd");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], "/work/build/out/trainyard-launcher");
}

TEST_F(ConfigTest, PrintedConfigLoadsBackUnchanged) {
  DaemonConfig defaults;
  defaults.data_dir = "/var/lib/trainyard";
  DaemonConfig odd = defaults;
  ASSERT_TRUE(
      SetConfigValue(odd, "pip_index_url", "http://mirror:3141/simple # not a comment").ok());
  ASSERT_TRUE(SetConfigValue(odd, "pip_find_links", "/wheels/a b,/wheels/*").ok());
  ASSERT_TRUE(SetConfigValue(odd, "default_project", "\"quoted\" \\ back\tslash: [x] &y *z").ok());
  ASSERT_TRUE(SetConfigValue(odd, "node_memory", "1.5GiB").ok());
  ASSERT_TRUE(SetConfigValue(odd, "cpu_overcommit", "2.5").ok());
  ASSERT_TRUE(SetConfigValue(odd, "admission_paused", "true").ok());
  ASSERT_TRUE(SetConfigValue(odd, "tls_listen", "[::1]:0").ok());
  ASSERT_TRUE(SetConfigValue(odd, "registry_mirrors", "gcr.io=localhost:5000,*.gcr.io=l:1/m").ok());
  ASSERT_TRUE(SetConfigValue(odd, "registry_insecure", "localhost:5000,127.0.0.1:1").ok());
  ASSERT_TRUE(SetConfigValue(odd, "image_pull_policy", "always").ok());
  odd.data_dir = "/srv/tr\xc3\xa4inyard/data #1";
  odd.runtimes = {scheduler::RuntimeOptions{}, scheduler::RuntimeOptions{}};
  odd.runtimes[1].name = "py-3.10";
  odd.runtimes[1].python = "/opt/py 3/bin/python3";
  odd.runtimes[1].runtime_versions = {"2.11", "2.*", "null"};
  odd.runtimes[1].python_versions = {};
  for (const DaemonConfig* c : {&defaults, &odd}) {
    const std::string printed = DumpConfig(*c);
    Write(printed);
    DaemonConfig loaded;
    Status st = ApplyConfigFile(path_, loaded);
    ASSERT_TRUE(st.ok()) << st.message() << "\n" << printed;
    EXPECT_EQ(DumpConfig(loaded), printed);
    EXPECT_EQ(loaded.data_dir, c->data_dir);
    EXPECT_EQ(loaded.default_project, c->default_project);
    EXPECT_EQ(loaded.pip_find_links, c->pip_find_links);
    ASSERT_EQ(loaded.runtimes.size(), c->runtimes.size());
    for (size_t i = 0; i < c->runtimes.size(); ++i) {
      EXPECT_EQ(loaded.runtimes[i].name, c->runtimes[i].name);
      EXPECT_EQ(loaded.runtimes[i].python, c->runtimes[i].python);
      EXPECT_EQ(loaded.runtimes[i].runtime_versions, c->runtimes[i].runtime_versions);
      EXPECT_EQ(loaded.runtimes[i].python_versions, c->runtimes[i].python_versions);
    }
  }
}

TEST_F(ConfigTest, RegistryKeysFromTheFileAndTheEnvironment) {
  DaemonConfig c;
  EXPECT_EQ(c.image_pull_policy, "missing");
  // A mapping in the file, in its order; "*" must be quoted in YAML.
  Write(
      "image_pull_policy: always\n"
      "registry_mirrors: {\"gcr.io\": \"localhost:5000\", \"*-docker.pkg.dev\": "
      "\"localhost:5000/ar\"}\n"
      "registry_insecure: [localhost:5000]\n"
      "registry_auth_file: /etc/trainyard/auth.json\n");
  Status st = ApplyConfigFile(path_, c);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(c.image_pull_policy, "always");
  EXPECT_EQ(c.registry_mirrors, "gcr.io=localhost:5000,*-docker.pkg.dev=localhost:5000/ar");
  EXPECT_EQ(c.registry_insecure, std::vector<std::string>{"localhost:5000"});
  EXPECT_EQ(c.registry_auth_file, "/etc/trainyard/auth.json");
  ::setenv("TRAINYARD_REGISTRY_MIRRORS", "us.gcr.io=127.0.0.1:5001", 1);
  st = ApplyEnvironment(c);
  ::unsetenv("TRAINYARD_REGISTRY_MIRRORS");
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(c.registry_mirrors, "us.gcr.io=127.0.0.1:5001");
  EXPECT_NE(ConfigReference().find("`TRAINYARD_IMAGE_PULL_POLICY` | `missing`"), std::string::npos);
}

TEST_F(ConfigTest, RegistryKeysRefuseWhatCannotWorkNamingTheKey) {
  DaemonConfig c;
  auto refused = [&](const std::string& key, const std::string& value) {
    Status st = SetConfigValue(c, key, value);
    EXPECT_FALSE(st.ok()) << key << "=" << value;
    EXPECT_NE(st.message().find("config " + key), std::string::npos) << st.message();
    return st.message();
  };
  EXPECT_NE(refused("image_pull_policy", "IfNotPresent").find("never, missing, always"),
            std::string::npos);
  EXPECT_NE(refused("registry_mirrors", "gcr.io").find("PREFIX=TARGET"), std::string::npos);
  EXPECT_NE(refused("registry_mirrors", "gcr=localhost:5000").find("must start with a registry"),
            std::string::npos);
  EXPECT_NE(refused("registry_mirrors", "gcr.io=a.b:1,gcr.io=c.d:2").find("mapped twice"),
            std::string::npos);
  EXPECT_NE(refused("registry_insecure", "*").find("no wildcard"), std::string::npos);
  refused("registry_insecure", "localhost:5000/path");
  EXPECT_NE(refused("registry_auth_file", "auth.json").find("absolute"), std::string::npos);
  Write("registry_mirrors: {\"gcr.io\": \"not a registry\"}\n");
  Status st = ApplyConfigFile(path_, c);
  EXPECT_NE(st.message().find(path_), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("registry_mirrors"), std::string::npos) << st.message();
}

TEST_F(ConfigTest, RegistrySettingsCheckTheAuthFileWithoutShowingIt) {
  DaemonConfig c;
  ASSERT_TRUE(SetConfigValue(c, "registry_mirrors", "gcr.io=localhost:5000").ok());
  ASSERT_TRUE(SetConfigValue(c, "registry_insecure", "localhost:5000").ok());
  auto plain = RegistrySettingsFromConfig(c);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->policy, registry::PullPolicy::kMissing);
  ASSERT_EQ(plain->mirrors.size(), 1u);
  EXPECT_EQ(plain->mirrors[0].target, "localhost:5000");
  EXPECT_EQ(plain->insecure, std::vector<std::string>{"localhost:5000"});

  const std::string auth = path_ + ".auth.json";
  c.registry_auth_file = auth;
  auto missing = RegistrySettingsFromConfig(c);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot be read"), std::string::npos);
  const std::string secret = "c2VjcmV0LXBhc3N3b3Jk";
  std::ofstream(auth) << "{\"auths\": {\"localhost:5000\": {\"auth\": \"" << secret << "\"}";
  auto broken = RegistrySettingsFromConfig(c);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("is not JSON"), std::string::npos);
  EXPECT_EQ(broken.status().message().find(secret), std::string::npos);
  std::ofstream(auth) << "{\"localhost:5000\": {\"auth\": \"" << secret << "\"}}";
  auto no_auths = RegistrySettingsFromConfig(c);
  ASSERT_FALSE(no_auths.ok());
  EXPECT_NE(no_auths.status().message().find("no \"auths\" object"), std::string::npos);
  EXPECT_EQ(no_auths.status().message().find(secret), std::string::npos);
  std::ofstream(auth) << "{\"auths\": {\"localhost:5000\": {\"auth\": \"" << secret << "\"}}}";
  auto good = RegistrySettingsFromConfig(c);
  ::unlink(auth.c_str());
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->auth_file, auth);
}

// A directory of fake executables, used as PATH.
class ContainerEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/ty_engine_test_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/bin");
    std::filesystem::create_directories(dir_ + "/data");
    saved_conf_ = std::getenv("CONTAINERS_CONF") ? std::getenv("CONTAINERS_CONF") : "";
    had_conf_ = std::getenv("CONTAINERS_CONF") != nullptr;
    ::unsetenv("CONTAINERS_CONF");
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    if (had_conf_) ::setenv("CONTAINERS_CONF", saved_conf_.c_str(), 1);
  }
  std::string Tool(const std::string& name, bool executable = true) {
    std::string path = dir_ + "/bin/" + name;
    std::ofstream(path) << "#!/bin/sh\n";
    std::filesystem::permissions(
        path, executable ? std::filesystem::perms::owner_all : std::filesystem::perms::owner_read);
    return path;
  }
  std::string PathEnv() const { return "/nonexistent:" + dir_ + "/bin"; }
  std::string dir_;
  std::string saved_conf_;
  bool had_conf_ = false;
};

TEST_F(ContainerEngineTest, KeysParseAndDefaultToAutoWithLimits) {
  DaemonConfig c;
  EXPECT_EQ(c.container_engine, "auto");
  EXPECT_TRUE(c.container_limits);
  ASSERT_TRUE(SetConfigValue(c, "container_engine", "/usr/bin/docker").ok());
  EXPECT_EQ(c.container_engine, "/usr/bin/docker");
  ASSERT_TRUE(SetConfigValue(c, "container_limits", "false").ok());
  EXPECT_FALSE(c.container_limits);
  Status st = SetConfigValue(c, "container_limits", "sometimes");
  EXPECT_NE(st.message().find("container_limits"), std::string::npos) << st.message();
  EXPECT_FALSE(SetConfigValue(c, "container_engine", "").ok());
  EXPECT_NE(DumpConfig(c).find("container_engine: \"/usr/bin/docker\""), std::string::npos);
  EXPECT_NE(ConfigReference().find("`TRAINYARD_CONTAINER_LIMITS`"), std::string::npos);
}

TEST_F(ContainerEngineTest, AutoPrefersPodmanThenDockerThenNone) {
  EXPECT_EQ(*ResolveContainerEngine("auto", PathEnv()), "");
  const std::string docker = Tool("docker");
  EXPECT_EQ(*ResolveContainerEngine("auto", PathEnv()), docker);
  Tool("podman", /*executable=*/false);  // not runnable: skipped
  EXPECT_EQ(*ResolveContainerEngine("auto", PathEnv()), docker);
  const std::string podman = Tool("podman");
  EXPECT_EQ(*ResolveContainerEngine("auto", PathEnv()), podman);
  EXPECT_EQ(*ResolveContainerEngine("none", PathEnv()), "");
  EXPECT_EQ(*ResolveContainerEngine("docker", PathEnv()), docker);
  EXPECT_EQ(*ResolveContainerEngine(podman, ""), podman);
  auto missing = ResolveContainerEngine("nerdctl", PathEnv());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nerdctl"), std::string::npos);
  EXPECT_FALSE(ResolveContainerEngine(dir_ + "/bin/nope", PathEnv()).ok());
}

TEST_F(ContainerEngineTest, PodmanWithRuncGetsTheContainersConf) {
  const std::string podman = Tool("podman");
  const std::string data = dir_ + "/data";
  // Without runc podman keeps its own defaults.
  auto env = PrepareContainerEngineEnv(podman, data, PathEnv());
  ASSERT_TRUE(env.ok());
  EXPECT_TRUE(env->empty());
  EXPECT_FALSE(std::filesystem::exists(data + "/containers.conf"));
  Tool("runc");
  env = PrepareContainerEngineEnv(podman, data, PathEnv());
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->at("CONTAINERS_CONF"), data + "/containers.conf");
  std::ifstream in(data + "/containers.conf");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text,
            "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n"
            "[engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\n");
  // Docker has no containers.conf.
  EXPECT_TRUE(PrepareContainerEngineEnv(Tool("docker"), data, PathEnv())->empty());
  // The user's own CONTAINERS_CONF wins.
  ::setenv("CONTAINERS_CONF", "/etc/mine.conf", 1);
  EXPECT_TRUE(PrepareContainerEngineEnv(podman, data, PathEnv())->empty());
}

}  // namespace
}  // namespace trainyard::daemon
