// trainyard-launcher --work-dir DIR
#include <cstdio>
#include <cstring>
#include <string>

#include "launcher.h"

int main(int argc, char** argv) {
  std::string work_dir;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--work-dir") == 0 && i + 1 < argc) {
      work_dir = argv[++i];
    } else if (std::strncmp(argv[i], "--work-dir=", 11) == 0) {
      work_dir = argv[i] + 11;
    } else {
      std::fprintf(stderr, "usage: trainyard-launcher --work-dir DIR\n");
      return 2;
    }
  }
  if (work_dir.empty()) {
    std::fprintf(stderr, "usage: trainyard-launcher --work-dir DIR\n");
    return 2;
  }
  return trainyard::launcher::RunLauncher(work_dir);
}
