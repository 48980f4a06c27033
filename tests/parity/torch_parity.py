#!/usr/bin/env python3
"""Checks stacklab's logits, loss and gradients against the PyTorch mirror
(scripts/stacklab/runs/torch_model.py), variant by variant.

For each wiring in the matrix it runs `stacklab gradients CONFIG --key=value ... --out DIR`, reads
DIR/{weights,batch,outputs}.safetensors, rebuilds the model in float64 PyTorch from the config in
the weights' metadata, and compares: err = max|ours - ref| / max(max|ref|, 1e-12) per quantity.
`--self-test` exercises the same checking path with float32 PyTorch standing in for stacklab.
Not here: training, speed comparisons. Run with Debian's python (torch): /usr/bin/python3.

    PYTHONPATH=scripts /usr/bin/python3 tests/parity/torch_parity.py [--quick] [--stacklab build/stacklab] [--keep DIR]
    PYTHONPATH=scripts /usr/bin/python3 tests/parity/torch_parity.py --self-test
(PYTHONPATH=scripts: the mirror is in the package scripts/stacklab/; scripts/test.sh sets it.)
"""
import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/parity/../..

try:
    import numpy as np
    import torch
    TORCH_ERROR = None
except ImportError as e:  # reported by main(), which decides the exit code
    TORCH_ERROR = e

if TORCH_ERROR is None:
    try:
        from stacklab.runs import io_util, torch_model, torch_model_checks
    except ImportError as e:  # not a missing prerequisite: a wrong invocation, so never a skip
        sys.exit(f"torch_parity: cannot import the package stacklab ({e}); run with PYTHONPATH=scripts "
                 f"(from the repo root: PYTHONPATH=scripts {sys.executable} tests/parity/torch_parity.py)")


# ---- the variant matrix -------------------------------------------------------------------------

def wirings(registry):
    """(name, overrides) for every wiring under test, built from `stacklab registry --json`:
    every placement x norm x residual on/off, each residual scaling, norm scaling, QK-norm with
    each norm, each activation and position embedding, each embedding scale with each position
    embedding, plus the switches (final norm, one
    sub-layer, no bias). Depth and tying are added by variants()."""
    names = {axis: [e["name"] for e in entries] for axis, entries in registry.items()}
    norms = [n for n in names["norm"] if n != "none"]
    out = []
    for pos in names["norm_position"]:
        for norm in norms:
            for res in (True, False):
                name = f"{pos}-{norm}-{'res' if res else 'nores'}"
                out.append((name, [f"--model.norm_position={pos}", f"--model.norm={norm}",
                                   f"--model.residual={str(res).lower()}"]))
    out += [("none-res", ["--model.norm=none", "--model.residual=true"]),
            ("none-nores", ["--model.norm=none", "--model.residual=false"])]
    # Gates that start at 0 (ReZero) make branch grads exactly 0; the gates' own grads are not.
    for scale in names["residual_scale"]:
        if scale != "none":
            pos = "post" if scale == "deepnorm" else "pre"  # DeepNorm is defined for post-norm only
            out.append((f"{pos}-layernorm-res-{scale}", [f"--model.norm_position={pos}", "--model.norm=layernorm",
                                                         f"--model.residual_scale={scale}"]))
    for scaling in names["norm_scaling"]:
        if scaling != "none":
            out.append((f"pre-layernorm-res-lns-{scaling}", [f"--model.norm_scaling={scaling}"]))
    for norm in norms:
        out.append((f"pre-{norm}-res-qknorm", [f"--model.norm={norm}", "--model.qk_norm=true"]))
    out += [
        ("post-layernorm-res-final_norm", ["--model.norm_position=post", "--model.final_norm=true"]),
        ("pre-layernorm-res-no_final_norm", ["--model.final_norm=false"]),
        ("attention-only", ["--model.mlp=false"]),
        ("mlp-only", ["--model.attention=false"]),
        ("no-bias", ["--model.bias=false"]),
        ("no-bias-dyt-sandwich", ["--model.bias=false", "--model.norm=dyt", "--model.norm_position=sandwich"]),
    ]
    # Each attention kind with residual on and off at each placement, and without a norm (at init:
    # zero queries, so the softmax is uniform; the "trained" variants of variants() move them).
    for kind in names.get("attention_kind", []):
        if kind == "softmax":
            continue
        for pos in names["norm_position"]:
            for res in ("true", "false"):
                out.append((f"{pos}-layernorm-{'res' if res == 'true' else 'nores'}-{kind}",
                            [f"--model.attention_kind={kind}", f"--model.norm_position={pos}",
                             f"--model.residual={res}"]))
        out.append((f"none-nores-{kind}", [f"--model.attention_kind={kind}", "--model.norm=none",
                                           "--model.residual=false"]))
    out += [(f"act-{a}", [f"--model.activation={a}"]) for a in names["activation"] if a != "gelu"]
    out += [(f"pos-{p}", [f"--model.pos_emb={p}"]) for p in names["pos_emb"] if p != "learned"]
    # Each embedding scale with each position embedding (the factor's place differs between them).
    out += [(f"emb-{e}-pos-{p}", [f"--model.emb_scale={e}", f"--model.pos_emb={p}"])
            for e in names["emb_scale"] if e != "init_std" for p in names["pos_emb"]]
    return out


def stacklab_registry(binary):
    """The registries of the binary (`stacklab registry --json`)."""
    return json.loads(subprocess.run([binary, "registry", "--json"], check=True, capture_output=True,
                                     text=True).stdout)


def mirror_registry():
    """The registries as torch_model mirrors them, for --self-test (no binary)."""
    return {axis: [{"name": n} for n in mirrors] for axis, mirrors in torch_model.MIRRORS.items()}


def variants(quick, registry):
    """(id, overrides). Full: every wiring at depth 1 untied and depth 3 untied and tied.
    Quick: every wiring once at depth 3, tying alternating."""
    out = []
    for i, (name, ov) in enumerate(wirings(registry)):
        shapes = [(3, i % 2 == 1)] if quick else [(1, False), (3, False), (3, True)]
        for depth, tied in shapes:
            out.append((f"{name} L{depth}{' tied' if tied else ''}",
                        ov + [f"--model.n_layer={depth}", f"--model.tie_weights={str(tied).lower()}"]))
    # Head sizes 16 and 32 take the tiled attention kernels (src/core/ops/attention.cpp: head sizes
    # that are multiples of 16; the base config's 8 takes the per-head sgemms). A length of 20
    # fills one 16-key chunk and part of the next.
    for width in (32, 64):
        out.append((f"tiled attention HS{width // 2} T20 L2",
                    [f"--model.n_embd={width}", "--model.n_head=2", "--model.block_size=20",
                     "--model.n_layer=2"]))
    return out


# ---- one check ----------------------------------------------------------------------------------

class ParityError(Exception):
    """A run whose files cannot be compared (missing names, bad shapes, bad batch)."""


def name_diff(what, got, expected):
    """'' if the name sets agree, else a message listing the missing and the extra names."""
    missing, extra = sorted(expected - got), sorted(got - expected)
    if not missing and not extra:
        return ""
    return (f"{what}: names differ from the reference model\n"
            f"    missing (reference has, file lacks): {missing}\n"
            f"    extra   (file has, reference lacks): {extra}")


def reference(cfg, weights, x, y):
    """float64 torch outputs for the weights and batch: dict logits, loss, grad.<name>."""
    model = torch_model.build_model(cfg["model"]).double()
    params = dict(model.named_parameters())
    diff = name_diff("weights.safetensors", set(weights), set(params))
    if diff:
        raise ParityError(diff)
    with torch.no_grad():
        for name, p in params.items():
            w = weights[name]
            if tuple(w.shape) != tuple(p.shape):
                raise ParityError(f"weights.safetensors: '{name}' has shape {tuple(w.shape)}, "
                                  f"the reference expects {tuple(p.shape)}")
            p.copy_(torch.from_numpy(w.astype(np.float64)))
    logits, loss = model(torch.from_numpy(x), torch.from_numpy(y))
    loss.backward()
    ref = {"logits": logits.detach().numpy(), "loss": loss.detach().numpy().reshape(1)}
    for name, p in params.items():
        ref[f"grad.{name}"] = p.grad.numpy()
    return ref


def token_ids(a, name, V):
    """A float32 (B, T) array of exact token ids as int64; ParityError if it is not one."""
    if a.ndim != 2 or not np.all(a == np.round(a)) or a.min() < 0 or a.max() >= V:
        raise ParityError(f"batch.safetensors: '{name}' must be (B, T) integer ids in [0, {V}), "
                          f"got shape {a.shape}, range [{a.min()}, {a.max()}]")
    return a.astype(np.int64)


def rel_err(ours, ref, floor=1e-12):
    """max|ours - ref| / max(max|ref|, floor)."""
    ours, ref = ours.astype(np.float64), ref.astype(np.float64)
    if ref.size == 0:
        return 0.0
    err = float(np.max(np.abs(ours - ref)) / max(float(np.max(np.abs(ref))), floor))
    return err if np.isfinite(err) else float("inf")  # NaN in ours sorts first and fails


def check_dir(d):
    """[(quantity, err)] sorted worst first, for the three files in directory d."""
    weights, meta = io_util.load(os.path.join(d, "weights.safetensors"))
    batch, _ = io_util.load(os.path.join(d, "batch.safetensors"))
    outputs, _ = io_util.load(os.path.join(d, "outputs.safetensors"))
    if "config" not in meta:
        raise ParityError(f"weights.safetensors: __metadata__ has no 'config' (keys: {sorted(meta)})")
    cfg = json.loads(meta["config"])
    V = int(torch_model.resolve_model_config(cfg["model"])["vocab_size"])
    for key in ("x", "y"):
        if key not in batch:
            raise ParityError(f"batch.safetensors: no '{key}' (has {sorted(batch)})")
    x, y = token_ids(batch["x"], "x", V), token_ids(batch["y"], "y", V)
    if x.shape != y.shape:
        raise ParityError(f"batch.safetensors: x {x.shape} and y {y.shape} differ in shape")
    ref = reference(cfg, weights, x, y)
    diff = name_diff("outputs.safetensors", set(outputs), set(ref))
    if diff:
        raise ParityError(diff)
    # A gradient that is exactly 0 in exact arithmetic (the key bias after QK-norm shifts every
    # score of a query equally, so softmax ignores it) comes out of float32 as rounding noise of
    # the size of the other gradients' rounding: such a tensor is measured against 1e-3 of the
    # largest gradient of the model instead of against its own (zero) size.
    grad_scale = max([float(np.max(np.abs(r))) for q, r in ref.items() if q.startswith("grad.") and r.size] + [0.0])
    errs = []
    for q, r in ref.items():
        o = outputs[q]
        if o.size != r.size or (o.shape != r.shape and q != "loss"):
            raise ParityError(f"outputs.safetensors: '{q}' has shape {o.shape}, the reference {r.shape}")
        floor = max(1e-3 * grad_scale, 1e-12) if q.startswith("grad.") else 1e-12
        errs.append((q, rel_err(o.reshape(r.shape), r, floor)))
    return sorted(errs, key=lambda e: -e[1])


def report(vid, errs, tol, detail=""):
    """Prints the variant's line (and detail on failure); True if it passed."""
    if errs is None:
        print(f"{vid:44s} {'-':36s} {'-':>9s}  FAIL")
        print("    " + detail.replace("\n", "\n    ").rstrip())
        return False
    q, e = errs[0]
    ok = e < tol
    print(f"{vid:44s} {q:36s} {e:9.2e}  {'PASS' if ok else 'FAIL'}")
    if not ok:
        bad = [f"{q}={e:.2e}" for q, e in errs if e >= tol]
        print(f"    {len(bad)} quantities over tol {tol:g}: {', '.join(bad[:12])}{' ...' if len(bad) > 12 else ''}")
    return ok


def check_and_report(vid, d, tol):
    try:
        return report(vid, check_dir(d), tol)
    except (ParityError, io_util.SafetensorsError, OSError, KeyError, ValueError) as e:
        return report(vid, None, tol, f"{type(e).__name__}: {e}")


# ---- against the stacklab binary ----------------------------------------------------------------

def run_stacklab(binary, config, overrides, out_dir):
    """'' on success, else a message with the command line and stderr."""
    cmd = [binary, "gradients", config, *overrides, "--out", out_dir]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return f"timed out after 300 s: {' '.join(cmd)}"
    if r.returncode != 0:
        return f"exit code {r.returncode}: {' '.join(cmd)}\n{r.stderr.strip() or '(no stderr)'}"
    return ""


def slug(vid):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", vid)


def run_matrix(args, produce, registry):
    """produce(vid, overrides, out_dir) -> '' or an error message. Returns the exit code."""
    root = args.keep or tempfile.mkdtemp(prefix="torch_parity_")
    os.makedirs(root, exist_ok=True)
    passed = failed = 0
    missing = torch_model.missing_mirrors(registry)
    for axis, name in missing:  # a registry entry nobody can check: a failure, not a skip
        print(f"FAIL  model.{axis}={name}: no PyTorch mirror in scripts/stacklab/runs/torch_model.py "
              f"(add it to torch_model.MIRRORS['{axis}'])")
        failed += 1
    try:
        for vid, ov in variants(args.quick, registry):
            d = os.path.join(root, slug(vid))
            os.makedirs(d, exist_ok=True)
            err = produce(vid, ov, d)
            ok = report(vid, None, args.tol, err) if err else check_and_report(vid, d, args.tol)
            passed, failed = passed + ok, failed + (not ok)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"torch parity: {passed} passed, {failed} failed" + (f" (files kept in {root})" if args.keep else ""))
    return 1 if failed else 0


# ---- self-test: float32 torch stands in for stacklab --------------------------------------------

def load_config(path):
    with open(path) as f:
        return json.load(f)


def apply_overrides(cfg, overrides):
    """A copy of cfg with '--section.key=value' applied (value parsed as JSON, else a string)."""
    cfg = copy.deepcopy(cfg)
    for ov in overrides:
        key, _, text = ov[2:].partition("=")
        section, _, leaf = key.partition(".")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        cfg.setdefault(section, {})[leaf] = value
    return cfg


def fake_stacklab(cfg, out_dir, seed, gate=None):
    """Writes the three files stacklab would, computed by the float32 torch model with random
    weights (gates `gate` if given) and a random batch."""
    g = torch.Generator().manual_seed(seed)
    model = torch_model.build_model(cfg["model"])
    m = model.cfg
    torch_model.randomize_(model, m["init_std"], g)
    if gate is not None:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("_gate"):
                    p.fill_(gate)
    B, T = cfg.get("train", {}).get("batch_size", 8), m["block_size"]
    x = torch.randint(0, m["vocab_size"], (B, T), generator=g)
    y = torch.randint(0, m["vocab_size"], (B, T), generator=g)
    logits, loss = model(x, y)
    loss.backward()
    full = {**cfg, "model": {**torch_model.MODEL_DEFAULTS, **cfg["model"]}}
    params = dict(model.named_parameters())
    io_util.save(os.path.join(out_dir, "weights.safetensors"),
                 {n: p.detach().numpy() for n, p in params.items()}, {"config": json.dumps(full)})
    io_util.save(os.path.join(out_dir, "batch.safetensors"),
                 {"x": x.numpy().astype(np.float32), "y": y.numpy().astype(np.float32)})
    out = {"logits": logits.detach().numpy(), "loss": loss.detach().numpy().reshape(1)}
    out.update({f"grad.{n}": p.grad.numpy() for n, p in params.items()})
    io_util.save(os.path.join(out_dir, "outputs.safetensors"), out)


def check_the_checker(base, root):
    """The comparison must fail on a wrong gradient and on renamed or missing tensors."""
    fails = []
    d = os.path.join(root, "negative")
    os.makedirs(d, exist_ok=True)
    fake_stacklab(apply_overrides(base, ["--model.n_layer=2"]), d, seed=7)
    path = os.path.join(d, "outputs.safetensors")
    good, _ = io_util.load(path)
    if check_dir(d)[0][1] >= 1e-4:
        fails.append("unmodified float32 outputs do not pass")

    bad = dict(good)
    bad["grad.blocks.1.attn.qkv.weight"] = good["grad.blocks.1.attn.qkv.weight"] * 1.001
    io_util.save(path, bad)
    worst = check_dir(d)[0]
    if worst[0] != "grad.blocks.1.attn.qkv.weight" or worst[1] < 5e-4:
        fails.append(f"a gradient scaled by 1.001 was not the worst quantity: {worst}")

    for what, files in (("a missing gradient", {k: v for k, v in good.items() if k != "grad.head.weight"}),
                        ("an extra output", {**good, "grad.blocks.0.attn_gate": np.zeros(1, np.float32)})):
        io_util.save(path, files)
        try:
            check_dir(d)
            fails.append(f"{what} was not reported")
        except ParityError as e:
            print(f"    caught {what}: {' '.join(str(e).split())[:150]}")
    io_util.save(path, good)

    wpath = os.path.join(d, "weights.safetensors")
    weights, meta = io_util.load(wpath)
    weights["blocks.0.attention.qkv.weight"] = weights.pop("blocks.0.attn.qkv.weight")
    io_util.save(wpath, weights, meta)
    try:
        check_dir(d)
        fails.append("a renamed weight was not reported")
    except ParityError as e:
        print(f"    caught a renamed weight: {' '.join(str(e).split())[:150]}")

    # stacklab starts rezero gates at 0: every branch gradient is exactly 0 and must still pass.
    d = os.path.join(root, "rezero0")
    os.makedirs(d, exist_ok=True)
    fake_stacklab(apply_overrides(base, ["--model.n_layer=2", "--model.residual_scale=rezero"]), d, 3, gate=0.0)
    errs = dict(check_dir(d))
    outs, _ = io_util.load(os.path.join(d, "outputs.safetensors"))
    if (max(errs.values()) >= 1e-4 or np.any(outs["grad.blocks.0.mlp.fc.weight"])
            or not np.any(outs["grad.blocks.0.mlp_gate"])):
        fails.append("rezero with zero gates: expected zero branch grads, nonzero gate grads, a pass: "
                     f"{max(errs.values())}")
    for msg in fails:
        print(f"    FAILED: {msg}")
    return fails


def self_test(args):
    """Checks the reference (names, causality, finite differences, known values), then that the
    checker catches wrong outputs, then the whole matrix with float32 torch as 'ours'."""
    base = load_config(args.config)
    print("self-test: the reference model")
    fails = torch_model_checks.self_check()
    for msg in fails:
        print(f"    FAILED: {msg}")
    print("self-test: the checker")
    with tempfile.TemporaryDirectory(prefix="torch_parity_neg_") as root:
        fails += check_the_checker(base, root)
    if torch_model.missing_mirrors({"norm": [{"name": "layernorm"}, {"name": "batchnorm"}]}) != [("norm", "batchnorm")]:
        fails.append("a registry entry without a mirror was not reported by missing_mirrors")
    print("self-test: the matrix, float32 torch standing in for stacklab")

    def produce(vid, ov, d):
        fake_stacklab(apply_overrides(base, ov), d, seed=len(vid))
        return ""
    code = run_matrix(args, produce, mirror_registry())
    print(f"self-test: {len(fails)} invariant failures" if fails else "self-test: invariants all passed")
    return 1 if fails or code else 0


# ---- main ---------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stacklab", default=os.path.join(REPO, "build", "stacklab"), help="the binary")
    ap.add_argument("--config", default=os.path.join(REPO, "configs", "parity.json"), help="base config")
    ap.add_argument("--tol", type=float, default=1e-4, help="max relative error per quantity")
    ap.add_argument("--keep", metavar="DIR", help="keep each variant's files under DIR")
    ap.add_argument("--quick", action="store_true", help="each wiring once, at depth 3")
    ap.add_argument("--self-test", action="store_true", help="float32 torch stands in for stacklab")
    ap.add_argument("--allow-skip", action="store_true", help="exit 0 when torch is missing")
    args = ap.parse_args()

    if TORCH_ERROR is not None:
        print("=" * 72)
        print(f"SKIPPED: torch parity needs PyTorch and numpy ({TORCH_ERROR}).")
        print(f"         This interpreter is {sys.executable}; try /usr/bin/python3.")
        print("=" * 72)
        return 0 if args.allow_skip else 2
    torch.set_num_threads(1)  # tiny models: threads only add noise and start-up time
    if args.self_test:
        return self_test(args)
    if not os.access(args.stacklab, os.X_OK):
        print(f"torch_parity: stacklab binary not found or not executable at '{args.stacklab}'; "
              f"build it (cmake --build build) or pass --stacklab PATH", file=sys.stderr)
        return 2
    binary, config = os.path.abspath(args.stacklab), os.path.abspath(args.config)
    return run_matrix(args, lambda vid, ov, d: run_stacklab(binary, config, ov, d), stacklab_registry(binary))


if __name__ == "__main__":
    sys.exit(main())
