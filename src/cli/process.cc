#include "process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace trainyard::cli {

namespace {

std::vector<char*> CArgv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<ProcessResult> RunCaptured(const std::vector<std::string>& argv, const std::string& cwd) {
  if (argv.empty()) return InvalidArgument("empty command");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return Internal(std::string("pipe failed: ") + std::strerror(errno));
  }
  std::vector<char*> cargv = CArgv(argv);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Internal(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      dprintf(2, "cannot change directory to %s: %s\n", cwd.c_str(), std::strerror(errno));
      _exit(127);
    }
    execvp(cargv[0], cargv.data());
    dprintf(2, "cannot run %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  ProcessResult result;
  char buf[4096];
  while (true) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) {
      result.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Internal(std::string("waitpid failed: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

Status ExecReplace(const std::vector<std::string>& argv, const std::string& cwd,
                   const std::vector<std::pair<std::string, std::string>>& env) {
  if (argv.empty()) return InvalidArgument("empty command");
  if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
    return FailedPrecondition("cannot change directory to " + cwd + ": " + std::strerror(errno));
  }
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> cargv = CArgv(argv);
  execvp(cargv[0], cargv.data());
  return FailedPrecondition("cannot run " + argv[0] + ": " + std::strerror(errno));
}

}  // namespace trainyard::cli
