// Checkpoints: one safetensors file holding the model's parameters, the optimizer's state
// (prefixed "optim.") and, in its metadata, the resolved config and the train state. One file
// written atomically (temporary file, fsync, rename) so a kill at any moment leaves either the
// previous checkpoint or the new one, never a mix. A finished run's checkpoint may hold the
// weights alone (metadata "kept": "weights", drop_optimizer_state): read by sample, gradients and
// load_run, refused by a resume.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/safetensors.h"
#include "nn/model.h"
#include "train/optimizer.h"

namespace sl {

struct Checkpoint {
  nlohmann::json config;       // the resolved config it was written with
  nlohmann::json train_state;  // step, rng, best val loss, ... (the trainer's)
};

void save_checkpoint(const std::string& path, const Model& model, const Optimizer& opt,
                     const nlohmann::json& config, const nlohmann::json& train_state);

// Reads `path` and checks that it is a stacklab checkpoint whose checksum matches its tensors and
// metadata (files from before checksums, format v1, are read unchecked); else an sl::Error naming
// the file. The one integrity check of every reader: load_checkpoint and `stacklab sample`.
TensorFile read_checkpoint_file(const std::string& path);

// Whether a checkpoint file holds the optimizer state a resume needs: false for one whose
// optimizer state was dropped (metadata "kept": "weights").
bool holds_optimizer_state(const TensorFile& file);

// Rewrites the checkpoint at `path` (checked as read_checkpoint_file) without its optimizer
// state, marked "kept": "weights", its checksum recomputed; atomically. Returns the bytes it
// freed (0 when it already held the weights alone).
uint64_t drop_optimizer_state(const std::string& path);

// read_checkpoint_file, then checks that it was written with `expected_config`
// (check_checkpoint_config: the dotted keys in `may_differ` are not compared; a key the
// checkpoint lacks, added to stacklab after it was written, counts as its default), and loads the
// weights and optimizer state; one that holds the weights alone is refused, saying so.
Checkpoint load_checkpoint(const std::string& path, Model& model, Optimizer& opt,
                           const nlohmann::json& expected_config,
                           const std::vector<std::string>& may_differ = {});

// The metadata entry `key` ("config", "train_state") of a checkpoint file, parsed; throws an
// sl::Error naming `path` when it is missing or not JSON.
nlohmann::json checkpoint_metadata(const TensorFile& file, const std::string& path,
                                   const std::string& key);

// The comparison of load_checkpoint, for every reader of a checkpoint (resume, `stacklab
// sample`): throws an sl::Error naming `path` and every differing dotted key, with its value in
// the checkpoint (`written`) and in `expected` (from `expected_where`, e.g. "the run's config"),
// unless the configs differ only where a resumed run may (see load_checkpoint) or in `may_differ`.
void check_checkpoint_config(const std::string& path, const nlohmann::json& written,
                             const nlohmann::json& expected,
                             const std::vector<std::string>& may_differ,
                             const std::string& expected_where);

// The dotted keys of check_checkpoint_config's comparison that differ (none when it passes); the
// cases of tests/fixtures/checkpoint_config_cases.json pin it, and stacklab.runs.checkpoint_config
// (the Python package's copy, for load_run and the nanoGPT export) against the same cases.
std::vector<std::string> checkpoint_config_differences(const nlohmann::json& written,
                                                       const nlohmann::json& expected,
                                                       const std::vector<std::string>& may_differ);

// What a reader of a run's checkpoint (`stacklab sample`, `gradients --checkpoint`, and the Python
// package's load_run) lets differ beyond a resume: where the run lies (train.name, train.out_dir)
// and the decay an extension moved (optim.lr_decay_iters).
const std::vector<std::string>& reader_may_differ();

// Every dotted key whose value differs between two configs (none when they are equal).
std::vector<std::string> config_differences(const nlohmann::json& a, const nlohmann::json& b,
                                            const std::string& prefix = "");

}  // namespace sl
