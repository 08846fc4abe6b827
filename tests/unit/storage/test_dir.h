// A temporary directory removed at the end of each test.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace trainyard::storage::testing {

class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "ty-storage-XXXXXX").string();
    path_ = ::mkdtemp(templ.data()) != nullptr ? templ : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace trainyard::storage::testing
