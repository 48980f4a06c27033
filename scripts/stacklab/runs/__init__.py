"""Reading what the binary writes: run folders and sweeps (runlog), safetensors checkpoints
(io_util, checkpoint_config), a run as a PyTorch module (torch_model, load, nanogpt_export), and the
inputs a run reads (datasets: the data step; make_corpus: data/corpus.txt). Judges nothing.
"""
