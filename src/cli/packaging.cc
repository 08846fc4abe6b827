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

// The normalizer (NormalizeArchives): a Python script, because the runtime Python that built the
// sdist is at hand and brings tarfile, gzip and zipfile.
constexpr char kNormalizeScript[] = R"PY(
import gzip, io, os, sys, tarfile, zipfile
epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or 315532800)
def mode(m):
    return 0o755 if m & 0o111 else 0o644
for path in sys.argv[1:]:
    tmp = path + ".tmp"
    if path.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path, "r:gz") as src:
            entries = []
            for m in src.getmembers():
                data = src.extractfile(m).read() if m.isfile() else None
                entries.append((m, data))
        entries.sort(key=lambda e: e[0].name)
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as dst:
                    for m, data in entries:
                        m.mtime = epoch
                        m.uid = m.gid = 0
                        m.uname = m.gname = ""
                        m.mode = 0o755 if m.isdir() else mode(m.mode)
                        m.pax_headers = {}
                        dst.addfile(m, io.BytesIO(data) if data is not None else None)
    elif path.endswith(".zip"):
        import time
        stamp = time.gmtime(max(epoch, 315532800))[:6]
        with zipfile.ZipFile(path) as src:
            entries = sorted((i.filename, i.external_attr >> 16, src.read(i))
                             for i in src.infolist())
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
            for name, perm, data in entries:
                z = zipfile.ZipInfo(name, date_time=stamp)
                is_dir = name.endswith("/")
                kind = 0o040000 if is_dir else 0o100000
                z.external_attr = (kind | (0o755 if is_dir else mode(perm))) << 16
                z.compress_type = zipfile.ZIP_DEFLATED
                dst.writestr(z, data)
    else:
        continue
    os.replace(tmp, path)
)PY";

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
  TRAINYARD_RETURN_IF_ERROR(NormalizeArchives(files, python));
  return files;
}

Status NormalizeArchives(const std::vector<std::string>& files, const std::string& python) {
  if (files.empty()) return Status::Ok();
  std::vector<std::string> argv = {python, "-c", kNormalizeScript};
  argv.insert(argv.end(), files.begin(), files.end());
  TRAINYARD_ASSIGN_OR_RETURN(ProcessResult r, RunCaptured(argv, ""));
  if (r.exit_code != 0) {
    return FailedPrecondition(
        "Packaging of user Python code failed while making the archive "
        "reproducible:\n\n" +
        r.output);
  }
  return Status::Ok();
}

Status CheckModuleInPackage(const std::string& package_path, std::string_view module_name,
                            bool other_packages) {
  std::error_code ec;
  fs::path pkg = fs::absolute(package_path, ec).lexically_normal();
  if (!pkg.has_filename()) pkg = pkg.parent_path();
  const std::vector<std::string> parts = Split(module_name, '.');
  for (const std::string& part : parts) {
    if (part.empty()) {
      return InvalidArgument("argument --module-name: [" + std::string(module_name) +
                             "] is not a Python module name");
    }
  }
  if (parts.empty() || parts[0] != pkg.filename().string()) {
    if (other_packages) return Status::Ok();
    return InvalidArgument("The module [" + std::string(module_name) +
                           "] is not in --package-path [" + pkg.string() +
                           "]: its modules are named " + pkg.filename().string() +
                           ".NAME (and no --packages were given that could bring it).");
  }
  fs::path dir = pkg;
  for (size_t i = 1; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    fs::path file = dir / (parts[i] + ".py");
    fs::path sub = dir / parts[i];
    if (last && fs::is_regular_file(file, ec)) return Status::Ok();
    if (fs::is_regular_file(sub / "__init__.py", ec)) {
      dir = sub;
      continue;
    }
    return InvalidArgument("The module [" + std::string(module_name) + "] does not exist in " +
                           "--package-path [" + pkg.string() + "]: there is no " + file.string() +
                           (last ? " or " : " and no ") + (sub / "__init__.py").string() + ".");
  }
  // `python -m pkg` (or pkg.sub): a package runs through its __main__.py.
  if (!fs::is_regular_file(dir / "__main__.py", ec)) {
    return InvalidArgument("The module [" + std::string(module_name) + "] is a package without " +
                           "__main__.py in --package-path [" + pkg.string() +
                           "]; python -m cannot run it.");
  }
  return Status::Ok();
}

}  // namespace trainyard::cli
