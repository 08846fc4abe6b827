// Building a trainer package from --package-path the way gcloud's jobs_prep does: an sdist built
// with the runtime Python from the package's parent directory, using the parent's setup.py when
// there is one and a generated one otherwise.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard::cli {

// The setup.py written for a package directory without one:
//   from setuptools import find_packages, setup
//   setup(name='<pkg>', version='0.0', packages=find_packages(include=['<pkg>', '<pkg>.*']))
std::string GenerateSetupPy(std::string_view package_name);

// The Python used for building and for `local train`: $TRAINYARD_PYTHON, else /usr/bin/python3.
std::string RuntimePython();

// Builds the sdist(s) of package_path into output_dir, using work_dir (an empty scratch
// directory) for copies and build artifacts; returns the built files, sorted. The user's
// directory gets no generated files. Errors carry gcloud's texts (missing __init__.py,
// "Packaging of user Python code failed with message: ..." with the tool's output).
Result<std::vector<std::string>> BuildPackages(const std::string& package_path,
                                               const std::string& python,
                                               const std::string& output_dir,
                                               const std::string& work_dir);

// A temporary directory removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace trainyard::cli
