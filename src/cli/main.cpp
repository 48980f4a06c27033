// The stacklab command: dispatches to one subcommand per file; the only place that catches.
#include <cstdio>
#include <cstring>
#include <exception>

#include "core/error.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::printf("usage: stacklab <command> [args]\n");
    return 0;
  }
  std::fprintf(stderr, "stacklab: unknown command '%s'\n", argv[1]);
  return 2;
}
