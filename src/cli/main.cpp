// The stacklab command: dispatches to one subcommand per file; the only place that catches.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "core/error.h"

namespace {

struct Command {
  const char* name;
  int (*run)(const sl::ArgList&);
  const char* usage;
};

const Command kCommands[] = {
    {"train", sl::cmd_train,
     "train CONFIG [--section.key=value ...] [--out DIR] [--force] | train --resume RUN_DIR   train a model"},
    {"sample", sl::cmd_sample,
     "sample RUN_DIR [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K] [--seed S]   generate text"},
    {"probe", sl::cmd_probe,
     "probe CONFIG [--seeds 0,1,2] [--out FILE] [--section.key=value ...]   gradient flow at init, no training"},
    {"bench", sl::cmd_bench,
     "bench CONFIG [--steps N] [--warmup W] [--threads T] [--json] [--section.key=value ...] | bench --sgemm "
     "[CONFIG] [--threads T] [--json]   time training steps; sgemm ceiling"},
    {"sweep", sl::cmd_sweep, "sweep SWEEP.json [SWEEP.json ...] [--jobs N] [--dry-run]   run grids of train or probe runs"},
    {"validate", sl::cmd_validate, "validate CONFIG [--section.key=value ...]   check a config, print it resolved"},
    {"toyblock", sl::cmd_toyblock,
     "toyblock [--x 1,-1,2,0] [--strength 0.8] [--norm pre|post|both] [--eps 1e-5]   the source texts' toy block"},
    {"registry", sl::cmd_registry, "registry [--json]   every wiring choice: its formula and the parameters it adds"},
    {"gradients", sl::cmd_gradients,
     "gradients CONFIG --out DIR [--section.key=value ...]   weights, one batch, logits, loss, all gradients"},
};

void print_help() {
  std::printf("stacklab %s: train toy decoder-only transformers and see why deep stacks need residuals and norms\n\n"
              "usage: stacklab <command> [args]\n\ncommands:\n",
              STACKLAB_VERSION);
  for (const auto& c : kCommands) std::printf("  %s\n", c.usage);
  std::printf("\nexit codes: 0 ok, 1 bad input (the message names it), 3 training diverged, 70 internal error\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    print_help();
    return argc < 2 ? sl::kExitError : sl::kExitOk;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("stacklab %s\n", STACKLAB_VERSION);
    return sl::kExitOk;
  }
  const std::string name = argv[1];
  sl::ArgList args(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (name != c.name) continue;
    for (const auto& a : args)
      if (a == "--help" || a == "-h") {
        std::printf("usage: stacklab %s\n", c.usage);
        return sl::kExitOk;
      }
    try {
      return c.run(args);
    } catch (const sl::Error& e) {
      std::fprintf(stderr, "stacklab %s: error: %s\n", c.name, e.what());
      return sl::kExitError;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "stacklab %s: error: out of memory\n", c.name);
      return sl::kExitError;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "stacklab %s: internal error: %s\n", c.name, e.what());
      return sl::kExitInternal;
    }
  }
  std::fprintf(stderr, "stacklab: unknown command '%s' (see stacklab --help)\n", name.c_str());
  return sl::kExitError;
}
