// The stacklab command: dispatches to one subcommand per file; the only place that catches.
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "config/config.h"
#include "config/suggest.h"
#include "core/blas.h"
#include "core/fpmode.h"
#include "util/error.h"

namespace {

struct Command {
  const char* name;
  int (*run)(const sl::ArgList&);
  const char* usage;
  const char* flags;  // every flag with its default, for `stacklab <command> --help`
};

const Command kCommands[] = {
    {"train", sl::cmd_train,
     "train CONFIG [--section.key=value ...] [--out DIR] [--force] | train --resume RUN_DIR "
     "[--train.max_iters=N "
     "[--optim.lr_decay_iters=D]] [--train.threads=T]   train a model",
     "  CONFIG                 a JSON config; the keys it leaves out keep their defaults\n"
     "                         (stacklab validate --defaults prints them all; configs/base.json is "
     "not\n"
     "                         the defaults but the study's base config)\n"
     "  --section.key=value    override any config key, e.g. --model.n_layer=8 (none)\n"
     "  --out DIR              the run directory (default: train.out_dir/train.name = runs/<config "
     "stem>)\n"
     "  --force                start over in a directory that already holds a run, removing its "
     "files\n"
     "                         (default: off, refuse)\n"
     "  --resume RUN_DIR       continue a stopped run from its last checkpoint, in RUN_DIR (not "
     "with\n"
     "                         --out or --force) (default: none)\n"
     "  with --resume: --train.max_iters=N extends the run to N steps (a cosine run past its decay "
     "only\n"
     "  with --optim.lr_decay_iters=D: where the decay ends now), --train.threads=T changes "
     "threads;\n"
     "  no other override is accepted\n"
     "  one train at a time per run directory (RUN_DIR/train.lock); a train or val loss that is "
     "non-finite\n"
     "  or above 10 x ln(vocab_size) ends the run as diverged (exit 3)\n"},
    {"sample", sl::cmd_sample,
     "sample RUN_DIR [--checkpoint best|latest|PATH] [--num-samples K] [--prompt TEXT] [--tokens "
     "N] "
     "[--temperature T] [--top-k K] [--seed S]   generate from a run, token by token",
     "  --checkpoint WHICH     best, latest or a checkpoint file (default: latest)\n"
     "  --num-samples K        independent samples, separated by '---' lines (default: 1)\n"
     "  --prompt TEXT          text runs: characters; Markov runs: letters a.. (V <= 26) or "
     "space-separated\n"
     "                         token ids (default: one random token)\n"
     "  --tokens N             tokens to generate per sample (default: 200)\n"
     "  --temperature T        > 0 (default: 1.0)\n"
     "  --top-k K              keep the K most likely tokens; 0 = all (default: 0)\n"
     "  --seed S               the sampling seed (default: 0)\n"},
    {"probe", sl::cmd_probe,
     "probe CONFIG [--seeds 0,1,2] [--out FILE] [--section.key=value ...]   gradient flow at init, "
     "no training",
     "  --seeds LIST           comma-separated init seeds (default: 0,1,2)\n"
     "  --out FILE             also write the result as JSON (default: none)\n"
     "  --quiet                no table (default: off)\n"
     "  --section.key=value    config overrides (none)\n"},
    {"bench", sl::cmd_bench,
     "bench CONFIG [--steps N] [--warmup W] [--threads T] [--rounds R] [--no-ceiling] [--profile] "
     "[--json] "
     "[--section.key=value ...] | bench --sgemm "
     "[CONFIG] [--threads T] [--json]   time training steps; sgemm ceiling",
     "  --steps N              timed steps (default: 20)\n"
     "  --warmup W             untimed steps first (default: 3)\n"
     "  --threads T            threads; 0 = all cores (default: the config's train.threads)\n"
     "  --rounds R             times the sgemm ceiling R times (at most --steps), between blocks "
     "of the steps (default: 3)\n"
     "  --no-ceiling           steps only, no sgemm ceiling or step/ceiling ratio (default: off)\n"
     "  --profile              then --steps more steps with every op timed: forward and backward\n"
     "                         ms per step of each op, split into sgemm and the rest (default: "
     "off)\n"
     "  --json                 one JSON object instead of the table (default: off)\n"
     "  --sgemm                time sgemm on the config's Linear shapes (default: off)\n"
     "  --section.key=value    config overrides, e.g. --train.flush_subnormals=false to time with\n"
     "                         subnormal floats kept (none)\n"},
    {"sweep", sl::cmd_sweep,
     "sweep SWEEP.json [SWEEP.json ...] [--executor local|slurm] [--jobs N] [--dry-run] "
     "[--on-change fail|rerun|extend] "
     "| sweep --status SWEEP_DIR [...]   run grids of train or probe runs (locally or as Slurm job "
     "arrays); "
     "where they stand",
     "  --executor WHERE       local (child processes here) or slurm (one job array per sweep) "
     "(default: local)\n"
     "  --jobs N               local: runs at once, each single-threaded; 0 = one per core "
     "(default: 0)\n"
     "  --dry-run              list every run, its state and command (slurm: print the array "
     "script); run\n"
     "                         nothing; refuse, as the run would, while runs are changed (default: "
     "off)\n"
     "  --status               count each sweep directory's runs by state, changed ones (compared "
     "with the\n"
     "                         sweep file) too; exit 1 while any failed or changed (default: off)\n"
     "  --slurm-partition P    slurm: #SBATCH --partition (default: the cluster's)\n"
     "  --slurm-time T         slurm: #SBATCH --time per task, e.g. 02:00:00 (default: the "
     "partition's)\n"
     "  --slurm-cpus-per-task C  slurm: cpus per task = each run's train.threads (default: 1)\n"
     "  --slurm-mem M          slurm: #SBATCH --mem per task, e.g. 2G (default: the cluster's)\n"
     "  --slurm-extra \"...\"    slurm: more sbatch options, given to sbatch as is (default: "
     "none)\n"
     "  --max-parallel K       slurm: the array's %K throttle; 0 = none (default: 0)\n"
     "  --wait                 slurm: follow the job with the progress line until it ends "
     "(default: off)\n"
     "  --on-change WHAT       a run directory holding another config's or data's result: fail "
     "(stop and\n"
     "                         list the changed keys), rerun (move it to <dir>.changed-N, run "
     "again) or\n"
     "                         extend (a run whose one change is a longer train.max_iters, with\n"
     "                         optim.lr_decay_iters, continues there by train --resume; others "
     "fail)\n"
     "                         (default: fail)\n"},
    {"prune", sl::cmd_prune,
     "prune PATH... [--keep weights|none] [--dry-run]   drop what finished runs need not keep of "
     "their checkpoints",
     "  PATH                   a run directory, a sweep's out_dir or a study folder (the runs up "
     "to two\n"
     "                         levels below it)\n"
     "  --keep WHAT            weights (drop the optimizer state: the run can no longer be "
     "resumed or\n"
     "                         extended; sample and load_run still read it) or none (drop the "
     "checkpoints)\n"
     "                         (default: each run's train.keep_final; \"full\", the default "
     "config's, drops\n"
     "                         nothing)\n"
     "  --dry-run              list what would be dropped and the bytes it frees; change nothing "
     "(default: off)\n"},
    {"validate", sl::cmd_validate,
     "validate CONFIG [--section.key=value ...] | validate --defaults   check a config, print it "
     "resolved; print "
     "the defaults",
     "  --quiet                no resolved config: only the model summary and CONFIG: ok, on "
     "stderr\n"
     "                         (default: off)\n"
     "  --defaults             print the default config as JSON, every key but train.name (the "
     "config\n"
     "                         file's stem), and exit; save it to start a config from (default: "
     "off)\n"
     "  --section.key=value    config overrides (none)\n"},
    {"toyblock", sl::cmd_toyblock,
     "toyblock [--x 1,-1,2,0] [--strength 0.8] [--norm pre|post|both] [--eps 1e-5]   a worked "
     "4-number example of x + F(norm(x))",
     "  --x LIST               the input vector, at least 2 numbers (default: 1,-1,2,0)\n"
     "  --strength S           the branch's scale (default: 0.8)\n"
     "  --norm WHICH           pre, post or both (default: both)\n"
     "  --eps E                LayerNorm epsilon (default: 1e-5)\n"},
    {"registry", sl::cmd_registry,
     "registry [--json] [--records] [--markdown]   every wiring choice: its formula and the "
     "parameters it adds; the record schema; the documentation tables",
     "  --json                 as JSON: the wiring registries keyed by model axis, or with "
     "--records the\n"
     "                         record schema (default: off, a listing)\n"
     "  --records              the keys of every metrics.jsonl record kind, summary.json and probe "
     "output,\n"
     "                         each with its type and meaning (default: off)\n"
     "  --markdown             the wirings, layer_metrics and records tables as Markdown, each "
     "between\n"
     "                         <!-- registry:NAME --> and <!-- /registry:NAME --> lines (default: "
     "off)\n"},
    {"gradients", sl::cmd_gradients,
     "gradients CONFIG --out DIR [--checkpoint PATH] [--section.key=value ...]   weights, one "
     "batch, logits, loss, all gradients",
     "  --out DIR              where the safetensors files go (required)\n"
     "  --checkpoint PATH      a run's checkpoint to load instead of the initial weights (none)\n"
     "  --section.key=value    config overrides (none)\n"},
};

void print_help() {
  std::printf(
      "stacklab %s: train toy decoder-only transformers and see why deep stacks need residuals and "
      "norms\n\n"
      "usage: stacklab <command> [args]\n\ncommands:\n",
      STACKLAB_VERSION);
  for (const auto& c : kCommands) std::printf("  %s\n", c.usage);
  std::printf(
      "\nexit codes: 0 ok, 1 bad input (the message names it), 3 training diverged, 70 internal "
      "error\n");
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
    std::printf("matrix products: %s\nOpenBLAS kernels: %s\nvector loops: %s\n",
                sl::matmul_path().c_str(), sl::openblas_core().c_str(), sl::simd_clone().c_str());
    std::printf("subnormal floats: %s\n",
                sl::can_flush_subnormals()
                    ? "flushed to zero (FTZ+DAZ on every compute thread) unless "
                      "train.flush_subnormals=false"
                    : "kept (this build has no flush-to-zero control for this CPU)");
    return sl::kExitOk;
  }
  const std::string name = argv[1];
  sl::ArgList args(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (name != c.name) continue;
    for (const auto& a : args)
      if (a == "--help" || a == "-h") {
        std::printf("usage: stacklab %s\n\nflags:\n%s", c.usage, c.flags);
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
    } catch (
        const std::filesystem::filesystem_error& e) {  // a path the user gave that the OS refuses
      std::fprintf(stderr, "stacklab %s: error: %s\n", c.name, e.what());
      return sl::kExitError;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "stacklab %s: internal error: %s\n", c.name, e.what());
      return sl::kExitInternal;
    }
  }
  std::vector<std::string> names;
  for (const auto& c : kCommands) names.push_back(c.name);
  const std::string near = sl::closest_key(name, names);
  std::fprintf(stderr, "stacklab: unknown command '%s'%s (see stacklab --help)\n", name.c_str(),
               near.empty() ? "" : ("; did you mean '" + near + "'?").c_str());
  return sl::kExitError;
}
