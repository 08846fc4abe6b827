// trainyard-launcher --work-dir DIR [--slurm]
// trainyard-launcher --version
// trainyard-launcher slurm-driver --plan FILE
#include <cstdio>
#include <cstring>
#include <string>

#include "launcher.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: trainyard-launcher --work-dir DIR [--slurm]\n"
               "       trainyard-launcher --version\n"
               "       trainyard-launcher slurm-driver --plan FILE\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("trainyard-launcher %s\n", TRAINYARD_VERSION);
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "slurm-driver") == 0) {
    if (argc == 4 && std::strcmp(argv[2], "--plan") == 0) {
      return trainyard::launcher::RunSlurmDriver(argv[3]);
    }
    return Usage();
  }
  std::string work_dir;
  bool slurm = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--work-dir") == 0 && i + 1 < argc) {
      work_dir = argv[++i];
    } else if (std::strncmp(argv[i], "--work-dir=", 11) == 0) {
      work_dir = argv[i] + 11;
    } else if (std::strcmp(argv[i], "--slurm") == 0) {
      slurm = true;
    } else {
      return Usage();
    }
  }
  if (work_dir.empty()) return Usage();
  return trainyard::launcher::RunLauncher(work_dir, slurm);
}
