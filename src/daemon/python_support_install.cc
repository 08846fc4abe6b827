#include "python_support.h"
#include "trainyard/core/util.h"

namespace trainyard::daemon {

Result<std::string> InstallPythonSupport(const std::string& dir) {
  for (const PythonSupportFile& f : PythonSupportFiles()) {
    const std::string path = dir + "/" + f.path;
    if (auto old = ReadFile(path); old.ok() && *old == f.text) continue;
    TRAINYARD_RETURN_IF_ERROR(MakeDirs(path.substr(0, path.rfind('/'))));
    TRAINYARD_RETURN_IF_ERROR(WriteFileAtomic(path, f.text, /*durable=*/false));
  }
  return dir;
}

}  // namespace trainyard::daemon
