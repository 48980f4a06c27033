"""A plain-PyTorch re-implementation of stacklab's decoder-only transformer, for parity checks.

Same parameter names, shapes and block wiring as src/nn (the formulas are in the Block docstring);
built from the `model` section of a resolved config. Not here: initialisation schemes, training,
speed work, the mirror's own self-checks (torch_model_checks.py). Attention is written out (torch
1.13 has no scaled_dot_product_attention).

    model = build_model(cfg["model"]).double()
    logits, loss = model(idx, targets)   # idx, targets (B, T) int64
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# Mirrors ModelConfig in src/config/config.h; unknown keys are rejected so drift shows up here.
MODEL_DEFAULTS = {
    "n_layer": 4, "n_head": 4, "n_embd": 64, "block_size": 64, "vocab_size": 32, "bias": True,
    "residual": True, "norm": "layernorm", "norm_eps": 1e-5, "norm_position": "pre",
    "residual_scale": "none", "final_norm": None, "attention": True, "attention_kind": "softmax", "mlp": True,
    "mlp_ratio": 4,
    "activation": "gelu", "init": "normal", "init_std": 0.02, "pos_emb": "learned", "emb_scale": "init_std",
    "tie_weights": False, "dyt_alpha_init": 0.5, "norm_scaling": "none", "layerscale_init": 0.1,
    "qk_norm": False,
    "dropout": 0.0,  # training only; parity runs in eval mode, where dropout is inactive
}


def resolve_model_config(model_cfg):
    """The model section with defaults filled in and final_norm resolved to a bool."""
    unknown = sorted(set(model_cfg) - set(MODEL_DEFAULTS))
    if unknown:
        raise ValueError(f"[torch_model] unknown model keys {unknown}; known: {sorted(MODEL_DEFAULTS)}")
    m = {**MODEL_DEFAULTS, **model_cfg}
    for key, mirrors in MIRRORS.items():
        if m[key] not in mirrors:
            raise ValueError(f"[torch_model] model.{key}: no mirror of {m[key]!r}; mirrored: {sorted(mirrors)}")
    if m["n_embd"] % m["n_head"]:
        raise ValueError(f"[torch_model] model.n_embd {m['n_embd']} is not divisible by n_head {m['n_head']}")
    if m["norm"] == "none":
        m["final_norm"] = False
    elif m["final_norm"] is None:
        m["final_norm"] = PLACEMENTS[m["norm_position"]]["final_norm_default"]
    return m


# ---- norms (mirrors of the norm registry, src/nn/wiring.cpp) ------------------------------------
# Each norm multiplies its output by out_scale (model.norm_scaling; 1 otherwise).

class LayerNorm(nn.Module):
    """gamma (x - mu) / sqrt(var + eps) + beta, var biased; beta only with model.bias."""

    def __init__(self, C, bias, eps):
        super().__init__()
        self.eps, self.out_scale = eps, 1.0
        self.weight = nn.Parameter(torch.ones(C))
        self.bias = nn.Parameter(torch.zeros(C)) if bias else None

    def forward(self, x):  # (..., C)
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps) * self.out_scale


class RMSNorm(nn.Module):
    """gamma x / sqrt(mean(x^2) + eps); never a bias."""

    def __init__(self, C, eps):
        super().__init__()
        self.eps, self.out_scale = eps, 1.0
        self.weight = nn.Parameter(torch.ones(C))

    def forward(self, x):  # (..., C)
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.out_scale


class DyT(nn.Module):
    """Dynamic Tanh (Zhu et al. 2025): gamma tanh(alpha x) + beta, alpha one learnable scalar."""

    def __init__(self, C, bias, alpha):
        super().__init__()
        self.out_scale = 1.0
        self.weight = nn.Parameter(torch.ones(C))
        self.bias = nn.Parameter(torch.zeros(C)) if bias else None
        self.alpha = nn.Parameter(torch.full((1,), float(alpha)))

    def forward(self, x):  # (..., C)
        y = self.weight * torch.tanh(self.alpha * x)
        return (y + self.bias if self.bias is not None else y) * self.out_scale


NORMS = {
    "layernorm": lambda m, C: LayerNorm(C, m["bias"], m["norm_eps"]),
    "rmsnorm": lambda m, C: RMSNorm(C, m["norm_eps"]),
    "dyt": lambda m, C: DyT(C, m["bias"], m["dyt_alpha_init"]),
    "none": None,  # no norm modules
}

# model.norm_scaling: the factor on the outputs of block l's norms (l 0-based here).
NORM_SCALINGS = {
    "none": lambda l: 1.0,
    "depth": lambda l: 1.0 / math.sqrt(l + 1),  # LayerNorm Scaling (Sun et al. 2025), 1-based l
}


def make_norm(m, C=None, out_scale=1.0):
    if m["norm"] == "none":
        raise AssertionError("make_norm called with norm 'none'")
    norm = NORMS[m["norm"]](m, C or m["n_embd"])
    norm.out_scale = out_scale
    return norm


# ---- branches -----------------------------------------------------------------------------------

# model.attention_kind (mirrors of the attention-kind registry, src/nn/wiring.cpp): each head's
# (T, T) matrix A from its softmax probabilities P (B, NH, T, T) and the kind's per-head parameters,
# then y = A v. Written as the matrix itself (the C++ side composes alpha v + beta P v - gamma C v).
def _uniform_causal(T, dtype):
    """C: row t is 1/(t+1) over columns 0..t."""
    return torch.ones(T, T, dtype=dtype).tril() / torch.arange(1, T + 1, dtype=dtype)[:, None]


def _per_head(p):
    return p.view(-1, 1, 1)                                     # (NH,) -> (NH, 1, 1)


ATTENTION_KINDS = {
    "softmax": {"params": (), "zero_query": False, "matrix": lambda P, a: P},
    # He & Hofmann 2024 (shaped attention, Noci et al. 2023): A = alpha I + beta P - gamma C.
    "shaped": {"params": ("alpha", "beta", "gamma"), "zero_query": True,
               "matrix": lambda P, a: (_per_head(a.alpha) * torch.eye(P.shape[-1], dtype=P.dtype)
                                       + _per_head(a.beta) * P
                                       - _per_head(a.gamma) * _uniform_causal(P.shape[-1], P.dtype))},
    "shaped_no_identity": {"params": ("beta",), "zero_query": True,
                           "matrix": lambda P, a: _per_head(a.beta) * P},
}


class Attention(nn.Module):
    """Causal multi-head self-attention: qkv Linear(C, 3C), A v per head with A as
    model.attention_kind says (softmax(q k^T / sqrt(HS)) by default), proj. Shaped kinds start the
    query rows of qkv at 0 and their per-head scalars at 1."""

    def __init__(self, m):
        super().__init__()
        C = m["n_embd"]
        self.n_head = m["n_head"]
        self.qkv = nn.Linear(C, 3 * C, bias=m["bias"])
        self.proj = nn.Linear(C, C, bias=m["bias"])
        self.qk_norm = m["qk_norm"]
        if self.qk_norm:  # model.norm over each head's HS entries of q and of k
            self.q_norm = make_norm(m, C // m["n_head"])
            self.k_norm = make_norm(m, C // m["n_head"])
        self.kind = ATTENTION_KINDS[m["attention_kind"]]
        for name in self.kind["params"]:
            setattr(self, name, nn.Parameter(torch.ones(self.n_head)))
        if self.kind["zero_query"]:  # the query rows and their bias (stacklab starts every bias at 0)
            with torch.no_grad():
                self.qkv.weight[:C].zero_()
                if self.qkv.bias is not None:
                    self.qkv.bias[:C].zero_()

    def forward(self, x):  # (B, T, C)
        B, T, C = x.shape
        NH, HS = self.n_head, C // self.n_head
        q, k, v = (t.view(B, T, NH, HS) for t in self.qkv(x).split(C, dim=-1))  # 3 x (B, T, NH, HS)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))         # (B, NH, T, HS)
        att = q @ k.transpose(-2, -1) / math.sqrt(HS)            # (B, NH, T, T)
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)  # key j > query i
        att = att.masked_fill(future, float("-inf")).softmax(dim=-1)
        att = self.kind["matrix"](att, self)                     # A (B, NH, T, T)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)           # (B, NH, T, HS) -> (B, T, C)
        return self.proj(y)


ACTIVATIONS = {
    "gelu": F.gelu,                                              # exact, erf
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "tanh": torch.tanh,
}


class MLP(nn.Module):
    """fc Linear(C, mlp_ratio C), activation, proj Linear(mlp_ratio C, C)."""

    def __init__(self, m):
        super().__init__()
        C, H = m["n_embd"], m["mlp_ratio"] * m["n_embd"]
        self.fc = nn.Linear(C, H, bias=m["bias"])
        self.proj = nn.Linear(H, C, bias=m["bias"])
        self.act = ACTIVATIONS[m["activation"]]

    def forward(self, x):  # (B, T, C)
        return self.proj(self.act(self.fc(x)))


# ---- block: placements and residual scalings (mirrors of src/nn/wiring.cpp) --------------------

def _pre(x, f, n_in, n_out, res, g, skip):
    y = f(n_in(x)) if n_in is not None else f(x)
    return x + g * y if res else y                               # x + g f(norm(x)) | f(norm(x))


def _post(x, f, n_in, n_out, res, g, skip):
    if n_in is None:
        return _pre(x, f, n_in, n_out, res, g, skip)
    return n_in(skip * x + g * f(x)) if res else n_in(f(x))      # norm(a x + g f(x)) | norm(f(x))


def _sandwich(x, f, n_in, n_out, res, g, skip):
    if n_in is None:
        return _pre(x, f, n_in, n_out, res, g, skip)
    y = n_out(f(n_in(x)))
    return x + g * y if res else y                               # x + g norm_out(f(norm(x)))


PLACEMENTS = {
    "pre": {"apply": _pre, "norms": 1, "final_norm_default": True},
    "post": {"apply": _post, "norms": 1, "final_norm_default": False},
    "sandwich": {"apply": _sandwich, "norms": 2, "final_norm_default": True},
}

# gate(m): the branch scale parameter of one sub-layer (named "{sub}" + suffix), or None.
RESIDUAL_SCALES = {
    "none": {"suffix": None, "gate": None, "skip": lambda m: 1.0},
    "rezero": {"suffix": "_gate", "gate": lambda m: torch.zeros(1), "skip": lambda m: 1.0},
    "deepnorm": {"suffix": None, "gate": None, "skip": lambda m: (2 * m["n_layer"]) ** 0.25},
    "layerscale": {"suffix": "_scale", "gate": lambda m: torch.full((m["n_embd"],), float(m["layerscale_init"])),
                   "skip": lambda m: 1.0},
}


class Block(nn.Module):
    """Attention (sub-layer 1) then MLP (sub-layer 2), each wired as its placement says, g the
    residual scaling of the branch, a DeepNorm's factor on x:

        pre       residual on: x + g f(norm(x))             off: f(norm(x))
        post      residual on: norm(a x + g f(x))           off: norm(f(x))
        sandwich  residual on: x + g norm_out(f(norm(x)))   off: norm_out(f(norm(x)))
        no norm   residual on: x + g f(x)                   off: f(x)
    """

    def __init__(self, m, index=0):
        super().__init__()
        self.residual = m["residual"]
        self.place = PLACEMENTS[m["norm_position"]]
        scale = RESIDUAL_SCALES[m["residual_scale"]]
        self.skip = scale["skip"](m)
        out_scale = NORM_SCALINGS[m["norm_scaling"]](index)
        self.subs = []  # (k, branch name, gate name)
        if m["attention"]:
            self.attn = Attention(m)
            self.subs.append((1, "attn", f"attn{scale['suffix']}" if scale["suffix"] else None))
        if m["mlp"]:
            self.mlp = MLP(m)
            self.subs.append((2, "mlp", f"mlp{scale['suffix']}" if scale["suffix"] else None))
        for k, _, gate in self.subs:
            if m["norm"] != "none":
                setattr(self, f"norm{k}", make_norm(m, out_scale=out_scale))
                if self.place["norms"] == 2:
                    setattr(self, f"norm{k}_out", make_norm(m, out_scale=out_scale))
            if gate:
                setattr(self, gate, nn.Parameter(scale["gate"](m)))

    def forward(self, x):  # (B, T, C)
        for k, branch, gate in self.subs:
            x = self.place["apply"](x, getattr(self, branch), getattr(self, f"norm{k}", None),
                                    getattr(self, f"norm{k}_out", None), self.residual,
                                    getattr(self, gate) if gate else 1.0, self.skip)
        return x


# ---- model --------------------------------------------------------------------------------------

def sinusoidal_table(T, C, dtype=torch.float64):
    """PE[t, 2i] = sin(t / 10000^(2i/C)), PE[t, 2i+1] = cos(t / 10000^(2i/C)); (T, C)."""
    pe = torch.zeros(T, C, dtype=torch.float64)
    t = torch.arange(T, dtype=torch.float64)[:, None]               # (T, 1)
    two_i = torch.arange(0, C, 2, dtype=torch.float64)               # (ceil(C/2),)
    angle = t / torch.pow(10000.0, two_i / C)                        # (T, ceil(C/2))
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : C // 2])
    return pe.to(dtype)


class Transformer(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.cfg = m
        C, V = m["n_embd"], m["vocab_size"]
        self.tok_emb = nn.Embedding(V, C)
        if POS_EMBS[m["pos_emb"]] == "learned":
            self.pos_emb = nn.Embedding(m["block_size"], C)
        self.blocks = nn.ModuleList(Block(m, l) for l in range(m["n_layer"]))
        if m["final_norm"]:
            self.norm_f = make_norm(m)
        if not m["tie_weights"]:
            self.head = nn.Linear(C, V, bias=False)

    def forward(self, idx, targets=None):  # idx, targets (B, T) int64
        B, T = idx.shape
        if T > self.cfg["block_size"]:
            raise ValueError(f"[torch_model] sequence length {T} exceeds block_size {self.cfg['block_size']}")
        x = self.tok_emb(idx)                                        # (B, T, C)
        kind = POS_EMBS[self.cfg["pos_emb"]]
        if kind == "learned":
            x = x + self.pos_emb.weight[:T]
        x = x * EMB_SCALES[self.cfg["emb_scale"]](self.cfg)         # sqrt(C) for "unit"
        if kind == "fixed":                                          # added after the factor
            x = x + sinusoidal_table(T, x.shape[-1], x.dtype).to(x.device)
        for block in self.blocks:
            x = block(x)
        if self.cfg["final_norm"]:
            x = self.norm_f(x)
        w = self.tok_emb.weight if self.cfg["tie_weights"] else self.head.weight  # (V, C)
        logits = x @ w.t()                                           # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
        return logits, loss


# model.pos_emb: a learned table, a fixed one (the sinusoid), or nothing.
POS_EMBS = {"learned": "learned", "sinusoidal": "fixed", "none": None}

# model.emb_scale: the factor on tok_emb[id] + pos_emb[t] (a fixed sinusoid is added after it; a tied
# head reads the table as drawn). The tables' init std (init_std, or C^-1/2 for "unit") is not mirrored:
# parity copies stacklab's weights.
EMB_SCALES = {
    "init_std": lambda m: 1.0,
    "unit": lambda m: math.sqrt(m["n_embd"]),  # fairseq's embed_scale
}

# Every mirrored registry, by the config key its entries are chosen with.
MIRRORS = {"norm": NORMS, "norm_position": PLACEMENTS, "residual_scale": RESIDUAL_SCALES,
           "norm_scaling": NORM_SCALINGS, "activation": ACTIVATIONS, "pos_emb": POS_EMBS,
           "emb_scale": EMB_SCALES, "attention_kind": ATTENTION_KINDS}


def missing_mirrors(registry):
    """(axis, name) of every entry of `stacklab registry --json` that has no mirror here."""
    return [(axis, e["name"]) for axis, entries in registry.items() for e in entries
            if e["name"] not in MIRRORS.get(axis, {})]


def build_model(model_cfg):
    """A Transformer for the `model` config section (defaults filled in, final_norm resolved)."""
    return Transformer(resolve_model_config(model_cfg))


def randomize_(model, std, generator=None):
    """Every parameter random, for tests: matrices and embeddings N(0, std), biases N(0, std),
    norm gains 1 + N(0, std), gates and shaped attention's scalars N(0.5, std) so no branch or
    term is switched off."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=torch.float64).to(p.dtype) * std
            if name.endswith(("_gate", "_scale", ".alpha", "attn.beta", "attn.gamma")):
                p.copy_(0.5 + noise)
            elif ".norm" in name or "_norm." in name or name.startswith("norm_f"):
                p.copy_((1.0 if name.endswith(".weight") else 0.0) + noise)
            else:
                p.copy_(noise)
    return model
