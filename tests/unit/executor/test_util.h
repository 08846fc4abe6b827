// Helpers shared by the executor and launcher tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "temp_dir.h"

namespace trainyard::executor::test_util {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at the end.
using TempDir = test_support::TempDir;

// Writes `text` to `path`, creating its parent directories.
inline void WriteText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

}  // namespace trainyard::executor::test_util
