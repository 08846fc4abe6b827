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
// The archives are made reproducible (NormalizeArchives): the same files give the same bytes,
// hence the same sha256, and the daemon reuses the environment it prepared for them.
Result<std::vector<std::string>> BuildPackages(const std::string& package_path,
                                               const std::string& python,
                                               const std::string& output_dir,
                                               const std::string& work_dir);

// Rewrites .tar.gz/.tgz and .zip archives in place so that their bytes depend only on the
// names, contents and executable bits of their files: entries sorted by name, every mtime
// SOURCE_DATE_EPOCH (else 1980-01-01, the earliest a zip can hold), owner 0/0 without names,
// modes 0644/0755, no gzip timestamp or file name. Other files are left alone.
Status NormalizeArchives(const std::vector<std::string>& files, const std::string& python);

// Checks, before anything is built or uploaded, that --module-name names a module of
// --package-path: for "pkg.sub.mod" with a package directory named "pkg", pkg/sub/mod.py or
// pkg/sub/mod/__init__.py (a package run with -m needs __main__.py) must exist, with an
// __init__.py in every package on the way. A module outside the package directory's own
// package is accepted only when `other_packages` is true (--packages may bring it).
Status CheckModuleInPackage(const std::string& package_path, std::string_view module_name,
                            bool other_packages);

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
