#include <unistd.h>

#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"

int main(int argc, char** argv) {
  // A closed pipe (`trainyard jobs list | head`) should end the program quietly.
  std::signal(SIGPIPE, SIG_DFL);
  std::vector<std::string> args(argv, argv + argc);
  return trainyard::cli::RunCli(args, std::cout, std::cerr, isatty(STDERR_FILENO) == 1);
}
