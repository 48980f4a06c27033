// Checkpoints: one safetensors file holding the model's parameters, the optimizer's state
// (prefixed "optim.") and, in its metadata, the resolved config and the train state. One file
// written atomically (temporary file, fsync, rename) so a kill at any moment leaves either the
// previous checkpoint or the new one, never a mix.
#pragma once
#include <string>

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

// read_checkpoint_file, then checks that it was written with `expected_config` (else an sl::Error
// naming the first differing key; the dotted keys in `may_differ` are not compared; a key the
// checkpoint lacks, added to stacklab after it was written, counts as its default), and loads the
// weights and optimizer state.
Checkpoint load_checkpoint(const std::string& path, Model& model, Optimizer& opt,
                           const nlohmann::json& expected_config,
                           const std::vector<std::string>& may_differ = {});

// The first dotted key whose value differs between two configs, or "" when they are equal.
std::string first_config_difference(const nlohmann::json& a, const nlohmann::json& b,
                                    const std::string& prefix = "");

}  // namespace sl
