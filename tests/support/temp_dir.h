// A fresh temporary directory for one test, removed with everything in it at the end.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace trainyard::test_support {

class TempDir {
 public:
  // Made under $TMPDIR (or /tmp) as "<prefix>-XXXXXX"; path() is "" if that failed.
  explicit TempDir(const std::string& prefix = "ty-test") {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
    char* made = ::mkdtemp(pattern.data());
    path_ = made != nullptr ? made : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace trainyard::test_support
