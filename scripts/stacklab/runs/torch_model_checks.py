"""The PyTorch mirror's self-checks, run by `tests/parity/torch_parity.py --self-test` before it
compares anything with stacklab: parameter names of a few wirings against hand-written lists,
causality, finite differences against autograd in float64, and hand-checkable values (LayerNorm of
[2, 4], sinusoid entries, a zero-gate ReZero block is the identity, shaped attention as built, the
initial loss near ln V).

    fails = self_check()   # [failure message], empty when every check passes

Not here: the mirror itself (torch_model.py), the comparison with stacklab (torch_parity.py).
"""
import math

import torch

from stacklab.runs.torch_model import LayerNorm, build_model, randomize_, sinusoidal_table


def _tiny(**over):
    return {"n_layer": 1, "n_head": 2, "n_embd": 8, "block_size": 6, "vocab_size": 7, **over}


def _seeded(cfg, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    model = build_model(cfg).to(dtype)
    return randomize_(model, 0.3, g), g


def check_names():
    """Hand-written parameter lists for a few wirings against named_parameters()."""
    def block(index, *names):
        return [f"blocks.{index}.{n}" for n in names]

    def lin(p, bias=True):
        return [f"{p}.weight"] + ([f"{p}.bias"] if bias else [])
    cases = [
        (_tiny(), ["tok_emb.weight", "pos_emb.weight",
                   *block(0, "norm1.weight", "norm1.bias", *lin("attn.qkv"), *lin("attn.proj"), "norm2.weight",
                          "norm2.bias", *lin("mlp.fc"), *lin("mlp.proj")),
                   "norm_f.weight", "norm_f.bias", "head.weight"]),
        (_tiny(norm_position="sandwich", norm="rmsnorm", bias=False, mlp=False, tie_weights=True),
         ["tok_emb.weight", "pos_emb.weight", *block(0, "norm1.weight", "attn.qkv.weight",
          "attn.proj.weight", "norm1_out.weight"), "norm_f.weight"]),
        (_tiny(n_layer=2, norm="none", residual_scale="rezero", attention=False, pos_emb="sinusoidal"),
         ["tok_emb.weight", *[n for i in (0, 1) for n in block(i, *lin("mlp.fc"), *lin("mlp.proj"),
          "mlp_gate")], "head.weight"]),
        (_tiny(norm_position="post", residual_scale="deepnorm", pos_emb="none"),
         ["tok_emb.weight", *block(0, *lin("norm1"), *lin("attn.qkv"), *lin("attn.proj"), "norm2.weight",
          "norm2.bias", *lin("mlp.fc"), *lin("mlp.proj")), "head.weight"]),
        (_tiny(norm_position="post", final_norm=True, attention=False, bias=False, pos_emb="none"),
         ["tok_emb.weight", *block(0, "norm2.weight", "mlp.fc.weight", "mlp.proj.weight"),
          "norm_f.weight", "head.weight"]),
        (_tiny(attention_kind="shaped", mlp=False, norm="none", bias=False, pos_emb="none", tie_weights=True),
         ["tok_emb.weight", *block(0, "attn.qkv.weight", "attn.proj.weight", "attn.alpha", "attn.beta",
                                   "attn.gamma")]),
        (_tiny(attention_kind="shaped_no_identity", mlp=False, norm="none", bias=False, pos_emb="none",
               tie_weights=True),
         ["tok_emb.weight", *block(0, "attn.qkv.weight", "attn.proj.weight", "attn.beta")]),
    ]
    fails = []
    for cfg, want in cases:
        got = [n for n, _ in build_model(cfg).named_parameters()]
        if sorted(got) != sorted(want):
            fails.append(f"names for {cfg}: missing {sorted(set(want) - set(got))}, "
                         f"extra {sorted(set(got) - set(want))}")
    return fails


def check_causal():
    """Changing tokens at t >= t0 leaves logits at t < t0 unchanged, and does change them at t0."""
    fails = []
    for cfg in (_tiny(n_layer=2), _tiny(n_layer=2, norm_position="post", residual=False),
                _tiny(n_layer=2, norm_position="sandwich", norm="rmsnorm", pos_emb="sinusoidal"),
                _tiny(n_layer=2, attention_kind="shaped", residual=False)):
        model, g = _seeded(cfg)
        idx = torch.randint(0, 7, (2, 6), generator=g)
        other = idx.clone()
        other[:, 3:] = (idx[:, 3:] + 1) % 7
        a, _ = model(idx)
        b, _ = model(other)
        if not torch.equal(a[:, :3], b[:, :3]):
            fails.append(f"causal: future tokens changed past logits for {cfg}")
        if torch.allclose(a[:, 3], b[:, 3]):
            fails.append(f"causal: changing token 3 did not change its logits for {cfg}")
    return fails


def check_finite_differences():
    """Central differences in float64 against autograd for sampled entries of every parameter."""
    fails = []
    for cfg in (_tiny(n_layer=2), _tiny(n_layer=2, norm_position="sandwich", norm="rmsnorm", residual=False,
                                        activation="gelu_tanh", tie_weights=True),
                _tiny(n_layer=2, norm_position="post", residual_scale="deepnorm", pos_emb="sinusoidal"),
                _tiny(n_layer=2, norm="none", residual_scale="rezero", activation="tanh", bias=False),
                _tiny(n_layer=2, norm="dyt", residual_scale="layerscale", qk_norm=True, norm_scaling="depth"),
                _tiny(n_layer=2, norm_position="post", emb_scale="unit", tie_weights=True),
                _tiny(n_layer=2, attention_kind="shaped", residual=False, norm="none"),
                _tiny(n_layer=2, attention_kind="shaped_no_identity", norm_position="post")):
        model, g = _seeded(cfg, seed=1)
        idx = torch.randint(0, 7, (2, 6), generator=g)
        tgt = torch.randint(0, 7, (2, 6), generator=g)
        model.zero_grad()
        model(idx, tgt)[1].backward()
        worst = 0.0
        for name, p in model.named_parameters():
            flat = p.data.view(-1)
            for i in torch.randint(0, flat.numel(), (3,), generator=g).tolist():
                old, h = flat[i].item(), 1e-6
                with torch.no_grad():
                    flat[i] = old + h
                    up = model(idx, tgt)[1].item()
                    flat[i] = old - h
                    down = model(idx, tgt)[1].item()
                    flat[i] = old
                num, ana = (up - down) / (2 * h), p.grad.view(-1)[i].item()
                # The floor: some entries are exactly 0 (a key bias shifts every score equally).
                err = abs(num - ana) / max(abs(num), abs(ana), 1e-4)
                worst = max(worst, err)
                if err > 1e-5:
                    fails.append(f"finite differences: {name}[{i}] numeric {num:.8g} autograd {ana:.8g} for {cfg}")
        print(f"    finite differences {cfg.get('norm_position', 'pre')}/{cfg.get('norm', 'layernorm')}: "
              f"worst rel err {worst:.1e}")
    return fails


def check_values():
    """Hand-checkable numbers: LayerNorm of [2, 4] ~ [-1, 1], sinusoid entries, zero-gate identity,
    initial loss near ln V."""
    fails = []
    ln = LayerNorm(2, True, 1e-5).double()
    y = ln(torch.tensor([[2.0, 4.0], [20.0, 40.0]], dtype=torch.float64))
    if not torch.allclose(y, torch.tensor([[-1.0, 1.0], [-1.0, 1.0]], dtype=torch.float64), atol=1e-4):
        fails.append(f"LayerNorm([2, 4]) = {y.tolist()}, expected about [-1, 1]")
    pe = sinusoidal_table(5, 6)
    want = {(0, 0): 0.0, (0, 1): 1.0, (1, 0): math.sin(1), (1, 1): math.cos(1),
            (3, 2): math.sin(3 / 10000 ** (2 / 6)), (3, 5): math.cos(3 / 10000 ** (4 / 6))}
    for (t, c), v in want.items():
        if abs(pe[t, c].item() - v) > 1e-12:
            fails.append(f"sinusoid PE[{t},{c}] = {pe[t, c].item()}, expected {v}")
    cfg = _tiny(n_layer=3, residual_scale="rezero")
    model, g = _seeded(cfg)
    with torch.no_grad():
        for block in model.blocks:
            block.attn_gate.zero_()
            block.mlp_gate.zero_()
    idx = torch.randint(0, 7, (2, 6), generator=g)
    x = model.tok_emb(idx) + model.pos_emb.weight[:6]
    if not torch.allclose(model(idx)[0], model.norm_f(x) @ model.head.weight.t(), atol=1e-12):
        fails.append("rezero with zero gates is not the identity block")
    # Shaped attention as built (query rows 0, alpha = beta = gamma = 1): A = I, the sub-layer is proj(v);
    # the control's A = C, the running mean of v.
    for kind in ("shaped", "shaped_no_identity"):
        attn = build_model(_tiny(attention_kind=kind)).double().blocks[0].attn
        with torch.no_grad():
            attn.qkv.weight[8:].normal_(generator=g)
            attn.qkv.bias[8:].normal_(generator=g)  # the query bias stays 0, as a bias starts
        x = torch.randn(2, 6, 8, generator=g, dtype=torch.float64)
        v = attn.qkv(x)[..., 16:]
        if kind == "shaped_no_identity":
            v = v.cumsum(1) / torch.arange(1, 7, dtype=torch.float64)[:, None]
        if not torch.allclose(attn(x), attn.proj(v), atol=1e-12):
            fails.append(f"{kind} attention as built is not A = {'I' if kind == 'shaped' else 'C'}")
    # Small init (matrices N(0, 0.02), biases 0, gains 1): logits near 0, loss near ln V.
    model = build_model(_tiny(vocab_size=50, n_embd=16)).double()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.02)
            else:
                p.fill_(0.0 if name.endswith(".bias") else 1.0)
    idx = torch.randint(0, 50, (4, 6), generator=g)
    tgt = torch.randint(0, 50, (4, 6), generator=g)
    loss = model(idx, tgt)[1].item()
    if abs(loss - math.log(50)) > 0.1:
        fails.append(f"initial loss {loss:.4f} is not near ln 50 = {math.log(50):.4f}")
    return fails


def self_check():
    """All reference self-checks; a list of failure messages (empty when all pass)."""
    fails = []
    for check in (check_names, check_causal, check_finite_differences, check_values):
        got = check()
        print(f"    {check.__name__:28s} {'ok' if not got else f'{len(got)} FAILED'}")
        fails += got
    return fails
