#include "packaging.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "process.h"
#include "trainyard/core/util.h"

namespace trainyard::cli {

namespace fs = std::filesystem;

namespace {

std::string PyQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out.push_back('\\');
    out.push_back(c);
  }
  return out + "'";
}

Status SetuptoolsFailed(const std::string& output, bool generated) {
  std::string msg = "Packaging of user Python code failed with message:\n\n" + output + "\n\n";
  if (generated) {
    msg += "Try manually writing a setup.py file at your package root and rerunning the command.";
  } else {
    msg +=
        "Try manually building your Python code by running:\n  $ python setup.py sdist\nand "
        "providing the output via the `--packages` flag (for example, `--packages "
        "dist/package.tar.gz,dist/package2.whl)`";
  }
  return FailedPrecondition(msg);
}

}  // namespace

std::string GenerateSetupPy(std::string_view package_name) {
  std::string name = PyQuote(package_name);
  std::string sub = PyQuote(std::string(package_name) + ".*");
  return "from setuptools import find_packages, setup\n\nsetup(name=" + name +
         ", version='0.0', packages=find_packages(include=[" + name + ", " + sub + "]))\n";
}

std::string RuntimePython() {
  const char* v = std::getenv("TRAINYARD_PYTHON");
  return (v != nullptr && *v != '\0') ? v : "/usr/bin/python3";
}

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/trainyard-cli-XXXXXX";
  if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

Result<std::vector<std::string>> BuildPackages(const std::string& package_path,
                                               const std::string& python,
                                               const std::string& output_dir,
                                               const std::string& work_dir) {
  std::error_code ec;
  fs::path pkg = fs::absolute(package_path, ec).lexically_normal();
  if (pkg.has_filename() == false) pkg = pkg.parent_path();
  if (!fs::is_directory(pkg, ec) || !fs::exists(pkg / "__init__.py", ec)) {
    return InvalidArgument("[" + pkg.string() +
                           "] is not a valid Python package because it does not contain an "
                           "`__init__.py` file. Please create one and try again. Also, please "
                           "ensure that --package-path refers to a local directory.");
  }
  fs::path root = pkg.parent_path();
  std::string name = pkg.filename().string();
  fs::create_directories(output_dir, ec);
  fs::path build_dir = fs::path(work_dir) / "build";
  fs::create_directories(build_dir, ec);

  if (fs::exists(root / "setup.py", ec)) {
    std::vector<std::string> sdist = {"sdist", "--dist-dir", output_dir};
    std::vector<std::string> build = {"build", "--build-base", build_dir.string(), "--build-temp",
                                      build_dir.string()};
    std::vector<std::string> egg = {"egg_info", "--egg-base", build_dir.string()};
    std::vector<std::vector<std::string>> attempts;
    std::vector<std::string> a1 = egg;
    a1.insert(a1.end(), build.begin(), build.end());
    a1.insert(a1.end(), sdist.begin(), sdist.end());
    std::vector<std::string> a2 = build;
    a2.insert(a2.end(), sdist.begin(), sdist.end());
    attempts = {a1, a2, sdist};
    std::string last_output;
    bool built = false;
    for (const auto& args : attempts) {
      std::vector<std::string> argv = {python, (root / "setup.py").string()};
      argv.insert(argv.end(), args.begin(), args.end());
      TRAINYARD_ASSIGN_OR_RETURN(ProcessResult r, RunCaptured(argv, root.string()));
      if (r.exit_code == 0) {
        built = true;
        break;
      }
      last_output = r.output;
      // A partial attempt may have left files behind.
      for (const auto& e : fs::directory_iterator(output_dir, ec)) fs::remove_all(e.path(), ec);
    }
    if (!built) return SetuptoolsFailed(last_output, /*generated=*/false);
  } else {
    fs::path src = fs::path(work_dir) / "src";
    fs::create_directories(src, ec);
    fs::copy(pkg, src / name, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    if (ec) {
      return FailedPrecondition("Cannot copy [" + pkg.string() +
                                "] to a working location: " + ec.message());
    }
    TRAINYARD_RETURN_IF_ERROR(WriteFileAtomic((src / "setup.py").string(), GenerateSetupPy(name)));
    std::vector<std::string> argv = {python, "setup.py", "sdist", "--dist-dir", output_dir};
    TRAINYARD_ASSIGN_OR_RETURN(ProcessResult r, RunCaptured(argv, src.string()));
    if (r.exit_code != 0) return SetuptoolsFailed(r.output, /*generated=*/true);
  }

  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(output_dir, ec)) {
    if (e.is_regular_file()) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return FailedPrecondition("Packaging [" + pkg.string() + "] produced no files");
  }
  return files;
}

}  // namespace trainyard::cli
