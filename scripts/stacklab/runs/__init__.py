"""Reading what the binary writes: run folders and sweeps (runlog, which re-exports loaded_run,
run_files and sweep_dirs), safetensors checkpoints (io_util, checkpoint_config), a run as a PyTorch
module (torch_model with its self-checks torch_model_checks, load, nanogpt_export), and the
inputs a run reads (datasets: the data step; make_corpus: data/corpus.txt); which sweeps each
tier runs (tier_lists: configs/experiments/tiers.json). Judges nothing.
"""
