// Placeholder until this subcommand lands.
#include <cstdio>

#include "cli/commands.h"

namespace crosspoint::cli {

int run_roofline(int, char**) {
  std::fprintf(stderr, "crosspoint roofline: not available in this build yet\n");
  return 2;
}

}  // namespace crosspoint::cli
