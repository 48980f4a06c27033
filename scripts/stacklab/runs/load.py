"""A trained run as a PyTorch module: `load_run` builds the mirror (torch_model) from a run
directory's checkpoint, with its trained weights and, for text runs, its vocabulary.

    from stacklab import load_run
    model = load_run("runs/quickstart")              # checkpoints/latest.safetensors, eval mode
    logits, _ = model(torch.tensor([model.vocab.encode("To be")]))
    model.vocab.decode(logits[0].argmax(-1).tolist())

The checkpoint must have been written with the run's config.json, as `stacklab sample` requires
(checkpoint_config.py: the binary's comparison, the same keys allowed to differ): another run's
checkpoint is refused by the keys that differ.
Its checksum is verified as the binary verifies it (checkpoint_checksum: src/train/checkpoint.cpp's
FNV-1a 64), so a flipped bit is refused naming the file, as `stacklab sample` refuses it.
Not here: the model's definition (torch_model.py), training.
"""
import json
import os
from typing import List, Optional

import torch

from stacklab.runs import checkpoint_config, io_util, torch_model

CHECKPOINT_FORMATS = ("stacklab.checkpoint.v1", "stacklab.checkpoint.v2")
CHECKSUMMED_FORMAT = "stacklab.checkpoint.v2"  # v1 predates checksums: read unchecked, as the binary does
CHECKSUM_KEY = "checksum"
VOCAB_FORMAT = "stacklab.char_vocab"  # src/data/text.cpp, kVocabFormat
OPTIM_PREFIX = "optim."               # optimizer state in a checkpoint (src/train/checkpoint.cpp)
FNV_BASIS, FNV_PRIME, MASK64 = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1  # src/util/hash.h


class RunLoadError(ValueError):
    """A run directory or checkpoint that cannot become a module; the message names the file."""


class Vocab:
    """A text run's character vocabulary (vocab.json): token id i is the code point chars[i]."""

    def __init__(self, chars: List[str]):
        self.chars = list(chars)
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> List[int]:
        missing = sorted({c for c in text if c not in self.stoi})
        if missing:
            raise KeyError(f"[vocab] characters not in the run's vocabulary: {missing!r}")
        return [self.stoi[c] for c in text]

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)


def read_vocab(path: str) -> Vocab:
    """The vocabulary of vocab.json (format stacklab.char_vocab: code_points in id order)."""
    try:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise RunLoadError(f"[load_run] {path}: cannot read the vocabulary: {e}") from e
    if not isinstance(j, dict) or j.get("format") != VOCAB_FORMAT or not isinstance(j.get("code_points"), list):
        raise RunLoadError(f"[load_run] {path}: not a stacklab vocabulary (expected format '{VOCAB_FORMAT}' "
                           "with a code_points list)")
    return Vocab([chr(int(cp)) for cp in j["code_points"]])


def checkpoint_path(run_dir: str, checkpoint: str = "latest") -> str:
    """'latest' | 'best' | a path, as `stacklab sample --checkpoint` takes it."""
    path = (os.path.join(run_dir, "checkpoints", f"{checkpoint}.safetensors")
            if checkpoint in ("latest", "best") else checkpoint)
    if os.path.isdir(path):
        raise RunLoadError(f"[load_run] checkpoint '{checkpoint}': {path} is a folder, not a checkpoint file "
                           "(checkpoint is 'latest', 'best' or the path of a .safetensors file, e.g. "
                           f"{os.path.join(path, 'latest.safetensors')})")
    if not os.path.isfile(path):
        hint = " (written at a run's first eval)" if checkpoint == "best" else ""
        raise RunLoadError(f"[load_run] checkpoint '{checkpoint}': {path} not found{hint}")
    return path


def fnv1a64(h: int, data: bytes) -> int:
    """h mixed with the bytes of data (src/util/hash.h's fnv1a64); start from FNV_BASIS."""
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK64
    return h


def checkpoint_checksum(tensors: dict, metadata: dict) -> str:
    """The checksum src/train/checkpoint.cpp stores: FNV-1a 64 over every metadata entry but the
    checksum (key order, each string with its NUL), then every tensor's name, shape "(a,b)" and
    float32 bytes in name order (the optimizer's included); 16 lower-case hex digits. Pure Python,
    about 10 MB of checkpoint a second."""
    h = FNV_BASIS
    for k in sorted(metadata, key=lambda k: k.encode("utf-8")):  # std::map's byte order
        if k != CHECKSUM_KEY:
            h = fnv1a64(h, k.encode("utf-8") + b"\0" + metadata[k].encode("utf-8") + b"\0")
    for name in sorted(tensors, key=lambda n: n.encode("utf-8")):
        a = tensors[name]
        shape = "(" + ",".join(str(d) for d in a.shape) + ")"
        h = fnv1a64(h, name.encode("utf-8") + b"\0" + shape.encode("ascii") + b"\0")
        h = fnv1a64(h, a.astype("<f4", copy=False).tobytes())
    return f"{h:016x}"


def verify_checksum(path: str, tensors: dict, meta: dict) -> None:
    """Refuses a v2 checkpoint whose stored checksum is missing or differs from its bytes', with the
    binary's words (read_checkpoint_file)."""
    if meta.get("format") != CHECKSUMMED_FORMAT:
        return
    stored = meta.get(CHECKSUM_KEY)
    if stored is None:
        raise RunLoadError(f"[load_run] {path}: corrupt checkpoint: its 'checksum' metadata is missing")
    actual = checkpoint_checksum(tensors, meta)
    if actual != stored:
        raise RunLoadError(f"[load_run] {path}: checksum mismatch (stored {stored}, computed {actual}): the file "
                           "is corrupt (a flipped bit or a damaged copy); restore it or train the run again")


def read_checkpoint(path: str):
    """(model tensors without the optimizer's, config dict, train_state dict) of a checkpoint whose
    format and checksum hold."""
    try:
        tensors, meta = io_util.load(path)
    except (OSError, io_util.SafetensorsError) as e:
        raise RunLoadError(f"[load_run] {path}: {e}") from e
    if meta.get("format") not in CHECKPOINT_FORMATS:
        raise RunLoadError(f"[load_run] {path}: not a stacklab checkpoint (metadata 'format' is "
                           f"{meta.get('format')!r}, expected one of {list(CHECKPOINT_FORMATS)})")
    verify_checksum(path, tensors, meta)  # before the config: a corrupt file gets this message
    try:
        config, state = json.loads(meta["config"]), json.loads(meta.get("train_state", "{}"))
    except (KeyError, json.JSONDecodeError) as e:
        raise RunLoadError(f"[load_run] {path}: metadata 'config' missing or not JSON ({e})") from e
    return {k: v for k, v in tensors.items() if not k.startswith(OPTIM_PREFIX)}, config, state


def not_a_run_dir(run_dir: str) -> Optional[str]:
    """What a path given as the run directory is when it is a checkpoint instead (a run's checkpoints
    folder, a .safetensors file), with the call that loads it; None otherwise."""
    if os.path.isfile(run_dir) and run_dir.endswith(".safetensors"):
        parent = os.path.dirname(os.path.abspath(run_dir))
        run = os.path.dirname(parent) if os.path.basename(parent) == "checkpoints" else "RUN_DIR"
        return (f"[load_run] {run_dir}: a checkpoint file, not a run directory: pass its run's folder and the "
                f"file, load_run({run!r}, checkpoint={run_dir!r})")
    if (os.path.isdir(run_dir) and not os.path.isfile(os.path.join(run_dir, "config.json"))
            and any(f.endswith(".safetensors") for f in os.listdir(run_dir))):
        run = os.path.dirname(os.path.abspath(run_dir))
        return (f"[load_run] {run_dir}: a folder of checkpoints, not a run directory (no config.json): pass the "
                f"run's folder, load_run({run!r}) (checkpoint='best' or a file's path picks another)")
    return None


def read_run_config(run_dir: str) -> dict:
    """The run's config.json as the binary reads it (keys it lacks at their defaults, no derived
    section); a folder without one is not a run directory, as `stacklab sample` says."""
    path = os.path.join(run_dir, "config.json")
    if not os.path.isfile(path):
        raise RunLoadError(f"[load_run] {run_dir}: not a run directory (no config.json)")
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise RunLoadError(f"[load_run] {path}: cannot read the run's config: {e}") from e
    if not isinstance(config, dict):
        raise RunLoadError(f"[load_run] {path}: not a config (expected a JSON object)")
    return checkpoint_config.with_defaults(config)


def build_from_checkpoint(path: str, dtype=torch.float32):
    """The mirror of a checkpoint's model section with its weights, eval mode; a wiring the mirror
    lacks is refused by its config key and name."""
    return build_model(path, *read_checkpoint(path), dtype)


def build_model(path: str, weights: dict, config: dict, state: dict, dtype=torch.float32):
    """build_from_checkpoint of a checkpoint already read (read_checkpoint)."""
    try:
        model = torch_model.build_model(config.get("model", {})).to(dtype)
    except ValueError as e:
        raise RunLoadError(f"[load_run] {path}: the PyTorch mirror cannot build this model: {e}") from e
    params = dict(model.named_parameters())
    missing, extra = sorted(set(params) - set(weights)), sorted(set(weights) - set(params))
    if missing or extra:
        raise RunLoadError(f"[load_run] {path}: parameter names differ from the mirror's: "
                           f"missing {missing}, extra {extra}")
    with torch.no_grad():
        for name, p in params.items():
            w = torch.from_numpy(weights[name])
            if tuple(w.shape) != tuple(p.shape):
                raise RunLoadError(f"[load_run] {path}: '{name}' has shape {tuple(w.shape)}, "
                                   f"the mirror expects {tuple(p.shape)}")
            p.copy_(w.to(dtype))
    model.eval()
    return model, config, state


def load_run(run_dir: str, checkpoint: str = "latest", dtype=torch.float32) -> torch.nn.Module:
    """The run's model as a torch.nn.Module (torch_model.Transformer) in eval mode, with

        model.vocab           the Vocab of a text run (encode/decode), None for synthetic data
        model.run_config      the resolved config the checkpoint was written with
        model.train_state     where training stood (step, optimizer_steps, ...)
        model.checkpoint_path the file read

    checkpoint: 'latest' (default), 'best' (lowest val loss so far) or a path: a checkpoint
    written with another config than the run's config.json (another run's, a Markov one in a text
    run) is refused naming the keys that differ, as `stacklab sample` refuses it. Forward:
    `logits, loss = model(idx, targets=None)`, idx (B, T) int64 token ids, T <= block_size.
    """
    wrong = not_a_run_dir(run_dir)
    if wrong:
        raise RunLoadError(wrong)
    if not os.path.isdir(run_dir):
        raise RunLoadError(f"[load_run] {run_dir}: not a directory (expected a run dir of `stacklab train`)")
    run_config = read_run_config(run_dir)
    path = checkpoint_path(run_dir, checkpoint)
    weights, config, state = read_checkpoint(path)
    wrong = checkpoint_config.mismatch(path, config, run_config, os.path.join(run_dir, "config.json"))
    if wrong:
        raise RunLoadError(f"[load_run] {wrong}")
    model, config, state = build_model(path, weights, config, state, dtype)
    vocab: Optional[Vocab] = None
    if config.get("data", {}).get("source") == "text":
        vocab = read_vocab(os.path.join(run_dir, "vocab.json"))
        if len(vocab) != model.cfg["vocab_size"]:
            raise RunLoadError(f"[load_run] {run_dir}/vocab.json: {len(vocab)} characters, the model's "
                               f"vocab_size is {model.cfg['vocab_size']}")
    model.vocab, model.run_config, model.train_state, model.checkpoint_path = vocab, config, state, path
    return model
