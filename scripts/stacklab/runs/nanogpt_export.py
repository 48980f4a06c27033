"""Writes a stacklab run as a nanoGPT checkpoint (`ckpt.pt`: nanoGPT's parameter names and
model_args), loadable by nanoGPT's GPT and its sample.py; reads one back into the mirror.

    python3 -m stacklab.runs.nanogpt_export RUN_DIR OUT_DIR [--checkpoint latest|best|PATH] [--force]
    cd nanoGPT && python3 sample.py --out_dir=OUT_DIR --device=cpu --compile=False

Only nanoGPT's own wiring exports (NANOGPT_WIRING: pre-norm LayerNorm, GELU, learned positions,
tied head, bias on or off); any other is refused by the keys nanoGPT's model lacks. Only a text
run exports: its vocabulary goes into OUT_DIR/meta.pkl (nanoGPT's char-level {stoi, itos,
vocab_size}), which sample.py finds through config['dataset'] (an absolute path, so
os.path.join('data', ...) keeps it); a Markov run's integer tokens have no characters, and without
meta.pkl sample.py falls back to GPT-2's tokenizer, so it is refused. The checkpoint is checked
against the run's config as load_run checks it; an OUT_DIR/ckpt.pt or meta.pkl already there (a
nanoGPT out_dir's training checkpoint) is replaced only with --force.
Not here: nanoGPT's optimizer state (the file samples and evaluates; it does not resume nanoGPT
training), any code of nanoGPT's (the layout below is written from its checkpoint format).
"""
import argparse
import os
import pickle
import sys

import torch

from stacklab.runs import torch_model
from stacklab.runs.load import RunLoadError, load_run

# The stacklab model keys whose values make nanoGPT's GPT (model.py); bias is free (GPTConfig.bias).
NANOGPT_WIRING = {
    "norm": "layernorm", "norm_position": "pre", "residual": True, "residual_scale": "none",
    "norm_scaling": "none", "final_norm": True, "attention": True, "mlp": True, "mlp_ratio": 4,
    "activation": "gelu", "pos_emb": "learned", "tie_weights": True, "qk_norm": False, "norm_eps": 1e-5,
    "emb_scale": "init_std", "attention_kind": "softmax",
}
# What nanoGPT lacks, said per key, for the refusal.
LACKS = {
    "norm": "nanoGPT's blocks use LayerNorm only", "norm_position": "nanoGPT's blocks are pre-norm only",
    "residual": "nanoGPT's blocks always add the residual", "residual_scale": "nanoGPT has no residual scaling",
    "norm_scaling": "nanoGPT has no norm scaling", "final_norm": "nanoGPT always has the final LayerNorm ln_f",
    "attention": "every nanoGPT block has attention", "mlp": "every nanoGPT block has an MLP",
    "mlp_ratio": "nanoGPT's MLP is 4x wide", "activation": "nanoGPT's MLP uses exact GELU",
    "pos_emb": "nanoGPT has a learned position table wpe", "tie_weights": "nanoGPT's head is tied to wte",
    "qk_norm": "nanoGPT has no QK-norm", "norm_eps": "nanoGPT's LayerNorm eps is 1e-5",
    "emb_scale": "nanoGPT's embeddings have no sqrt(C) factor",
    "attention_kind": "nanoGPT's attention is plain softmax attention",
}
MODEL_ARGS = ("n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size", "dropout")

# stacklab name -> nanoGPT name; blocks.{l}. maps to transformer.h.{l}.
TOP_NAMES = {"tok_emb.weight": "transformer.wte.weight", "pos_emb.weight": "transformer.wpe.weight",
             "norm_f.weight": "transformer.ln_f.weight", "norm_f.bias": "transformer.ln_f.bias"}
BLOCK_NAMES = {"norm1": "ln_1", "attn.qkv": "attn.c_attn", "attn.proj": "attn.c_proj", "norm2": "ln_2",
               "mlp.fc": "mlp.c_fc", "mlp.proj": "mlp.c_proj"}


class ExportError(ValueError):
    """A run nanoGPT's model cannot hold; the message names the keys and what nanoGPT lacks."""


class OutDirError(ExportError):
    """An OUT_DIR the export cannot use as given (a file, or files it would replace without
    --force): a usage error, exit 2."""


OUT_FILES = ("ckpt.pt", "meta.pkl")


def check_out_dir(out_dir: str, force: bool = False) -> None:
    """Refuses an OUT_DIR that is not a folder, and one holding ckpt.pt or meta.pkl unless force."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise OutDirError(f"[nanogpt_export] {out_dir}: exists and is not a folder (OUT_DIR is the folder "
                          "ckpt.pt and meta.pkl are written to, nanoGPT's --out_dir)")
    there = [os.path.join(out_dir, f) for f in OUT_FILES if os.path.lexists(os.path.join(out_dir, f))]
    if there and not force:
        raise OutDirError(f"[nanogpt_export] {out_dir}: already holds {', '.join(there)} (a nanoGPT out_dir's "
                          "training checkpoint?); refusing to replace it: choose another OUT_DIR, or pass "
                          "--force to overwrite")


def refusals(m) -> list:
    """'model.KEY=VALUE: what nanoGPT lacks' for every key of a resolved model config off its wiring."""
    return [f"model.{k}={m[k]!r}: {LACKS[k]}" for k, want in NANOGPT_WIRING.items() if m[k] != want]


def nanogpt_name(name: str) -> str:
    """nanoGPT's name of a stacklab parameter of nanoGPT's wiring."""
    if name in TOP_NAMES:
        return TOP_NAMES[name]
    parts = name.split(".")
    if parts[0] == "blocks":
        head, leaf = ".".join(parts[2:-1]), parts[-1]
        if head in BLOCK_NAMES:
            return f"transformer.h.{parts[1]}.{BLOCK_NAMES[head]}.{leaf}"
    raise ExportError(f"[nanogpt_export] no nanoGPT name for parameter '{name}'")


def mask_buffers_wanted() -> bool:
    """nanoGPT registers a causal-mask buffer attn.bias (in its state dict) when torch has no
    scaled_dot_product_attention (torch < 2.0); its strict load_state_dict wants it then, and only then."""
    return not hasattr(torch.nn.functional, "scaled_dot_product_attention")


def state_dict(model, mask_buffers: bool) -> dict:
    """nanoGPT's state dict of a mirror model of nanoGPT's wiring (float32 tensors)."""
    m = model.cfg
    sd = {nanogpt_name(n): p.detach().to(torch.float32).clone() for n, p in model.named_parameters()}
    sd["lm_head.weight"] = sd["transformer.wte.weight"]  # tied: one tensor under both names, as nanoGPT saves it
    if mask_buffers:
        T = m["block_size"]
        for layer in range(m["n_layer"]):
            sd[f"transformer.h.{layer}.attn.bias"] = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
    return sd


def export(run_dir: str, out_dir: str, checkpoint: str = "latest", mask_buffers=None,
           force: bool = False) -> str:
    """Writes OUT_DIR/ckpt.pt and meta.pkl of a text run; returns the ckpt.pt path. Refuses (before
    writing anything) an OUT_DIR that check_out_dir refuses, a checkpoint load_run refuses, a wiring
    other than nanoGPT's and a run without a character vocabulary (Markov data)."""
    check_out_dir(out_dir, force)
    model = load_run(run_dir, checkpoint)
    m = model.cfg
    refused = refusals(m)
    if refused:
        wiring = model.run_config.get("derived", {}).get("wiring", "?")
        raise ExportError(f"[nanogpt_export] {run_dir}: not nanoGPT's wiring ({wiring}): " + "; ".join(refused))
    if model.vocab is None:
        source = model.run_config.get("data", {}).get("source", "?")
        raise ExportError(f"[nanogpt_export] {run_dir}: data.source is {source!r}, not 'text': its tokens are "
                          "integer ids with no characters, so there is no meta.pkl for nanoGPT's sample.py, "
                          "which would then encode with GPT-2's tokenizer and draw ids above the run's "
                          f"vocab_size {m['vocab_size']}; only text runs export (sample this run with "
                          "`stacklab sample` or stacklab.load_run)")
    os.makedirs(out_dir, exist_ok=True)
    out_abs = os.path.abspath(out_dir)
    mask = mask_buffers_wanted() if mask_buffers is None else mask_buffers
    args = {k: m[k] for k in MODEL_ARGS}
    args["dropout"] = 0.0  # inference; nanoGPT's own default
    state = model.train_state or {}
    ckpt = {
        "model": state_dict(model, mask),
        "model_args": args,
        "iter_num": int(state.get("step", state.get("optimizer_steps", 0)) or 0),
        "best_val_loss": float("inf") if state.get("best_val_loss") is None else float(state["best_val_loss"]),
        # sample.py reads config['dataset'] for meta.pkl: os.path.join('data', ABS) is ABS.
        "config": {"dataset": out_abs, "stacklab_run": os.path.abspath(run_dir),
                   "stacklab_checkpoint": os.path.abspath(model.checkpoint_path)},
    }
    path = os.path.join(out_dir, "ckpt.pt")
    torch.save(ckpt, path)
    itos = dict(enumerate(model.vocab.chars))
    with open(os.path.join(out_dir, "meta.pkl"), "wb") as f:
        pickle.dump({"vocab_size": len(itos), "itos": itos, "stoi": dict(model.vocab.stoi)}, f)
    return path


def mirror_config(model_args: dict) -> dict:
    """The mirror's model section for nanoGPT's model of these model_args."""
    return {**NANOGPT_WIRING, **{k: model_args[k] for k in MODEL_ARGS if k != "dropout"}}


def load_into_mirror(ckpt: dict, dtype=torch.float32):
    """The mirror (torch_model) configured as nanoGPT's model, with a nanoGPT checkpoint's weights."""
    model = torch_model.build_model(mirror_config(ckpt["model_args"])).to(dtype)
    sd = {k: v for k, v in ckpt["model"].items() if not k.endswith(".attn.bias") and k != "lm_head.weight"}
    ours = {nanogpt_name(n): n for n, _ in model.named_parameters()}
    missing, extra = sorted(set(ours) - set(sd)), sorted(set(sd) - set(ours))
    if missing or extra:
        raise ExportError(f"[nanogpt_export] checkpoint names differ from nanoGPT's layout: missing {missing}, "
                          f"extra {extra}")
    params = dict(model.named_parameters())
    with torch.no_grad():
        for theirs, n in ours.items():
            params[n].copy_(sd[theirs].to(dtype))
    return model.eval()


def main(argv=None):
    p = argparse.ArgumentParser(description="Write a stacklab run as a nanoGPT ckpt.pt (and meta.pkl).")
    p.add_argument("run_dir")
    p.add_argument("out_dir", help="nanoGPT's --out_dir: ckpt.pt and meta.pkl are written here")
    p.add_argument("--checkpoint", default="latest", help="latest (default), best or a path")
    p.add_argument("--mask-buffers", choices=("auto", "yes", "no"), default="auto",
                   help="write nanoGPT's attn.bias mask buffers (auto: when this torch has no "
                   "scaled_dot_product_attention, as nanoGPT then expects them)")
    p.add_argument("--force", action="store_true",
                   help="replace an OUT_DIR/ckpt.pt or meta.pkl already there (refused without it)")
    a = p.parse_args(argv)
    try:
        path = export(a.run_dir, a.out_dir, a.checkpoint, {"auto": None, "yes": True, "no": False}[a.mask_buffers],
                      force=a.force)
    except OutDirError as e:  # the command line's OUT_DIR: usage, as argparse's errors
        print(f"nanogpt_export: {e}", file=sys.stderr)
        return 2
    except (RunLoadError, ExportError) as e:
        print(f"nanogpt_export: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # OUT_DIR not writable, a full disk: named, no traceback
        print(f"nanogpt_export: {a.out_dir}: cannot write the export: {e}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
