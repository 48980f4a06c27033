#!/usr/bin/env python3
"""Reference numbers for tests/train/optimizer_test.cpp, computed with PyTorch's own optimizers.

Runs torch.optim.AdamW and torch.optim.SGD (momentum, with and without nesterov) for three steps
on two small parameters, one with weight decay and one exempt (its own param group, wd 0), with
hand-set gradients, and prints the parameters after each step as C++ initializer lists. Also
prints torch.nn.utils.clip_grad_norm_ on the same gradients. Needs torch (tested with 1.13):
`/usr/bin/python3 tests/parity/optim_reference.py`. Everything is float32, as in stacklab.
"""
import torch

# The fixture shared with the C++ test: param "w" (decay) is 2x3, param "b" (exempt) is 3.
W0 = [[0.5, -1.25, 2.0], [0.75, -0.1, 0.0]]
B0 = [0.3, -0.6, 1.1]
# One gradient per step: magnitudes from 1e-4 to 3 so that eps placement and bias correction matter.
GRADS_W = [
    [[0.1, -0.2, 0.3], [1e-4, 2.0, -0.5]],
    [[-0.3, 0.05, 0.3], [2e-4, -1.0, 0.25]],
    [[0.2, 0.2, -0.1], [-1e-4, 3.0, 0.0]],
]
GRADS_B = [
    [0.01, -0.02, 0.5],
    [0.02, 0.04, -0.5],
    [-0.01, 0.0, 0.25],
]


def fmt(t):
    return "{" + ", ".join("%.9gf" % x for x in t.flatten().tolist()) + "}"


def run(make_opt, lr_per_step):
    w = torch.tensor(W0, dtype=torch.float32, requires_grad=True)
    b = torch.tensor(B0, dtype=torch.float32, requires_grad=True)
    opt = make_opt(w, b)
    for k in range(3):
        w.grad = torch.tensor(GRADS_W[k], dtype=torch.float32)
        b.grad = torch.tensor(GRADS_B[k], dtype=torch.float32)
        for g in opt.param_groups:
            g["lr"] = lr_per_step[k]
        opt.step()
        print("  step %d  w %s" % (k + 1, fmt(w.detach())))
        print("          b %s" % fmt(b.detach()))


LRS = [0.1, 0.05, 0.025]  # exactly the floats the C++ test passes (all three are float-rounded below)
LRS = [float(torch.tensor(x, dtype=torch.float32)) for x in LRS]


def main():
    torch.set_printoptions(precision=9)
    print("AdamW lr", LRS, "betas (0.9, 0.95) eps 1e-3 wd 0.1 on w only")
    run(lambda w, b: torch.optim.AdamW(
        [{"params": [w], "weight_decay": 0.1}, {"params": [b], "weight_decay": 0.0}],
        lr=LRS[0], betas=(0.9, 0.95), eps=1e-3), LRS)
    for nesterov in (False, True):
        print("SGD lr", LRS, "momentum 0.9 nesterov", nesterov, "wd 0.1 on w only")
        run(lambda w, b: torch.optim.SGD(
            [{"params": [w], "weight_decay": 0.1}, {"params": [b], "weight_decay": 0.0}],
            lr=LRS[0], momentum=0.9, nesterov=nesterov), LRS)
    w = torch.tensor(W0, dtype=torch.float32, requires_grad=True)
    b = torch.tensor(B0, dtype=torch.float32, requires_grad=True)
    w.grad = torch.tensor(GRADS_W[0], dtype=torch.float32)
    b.grad = torch.tensor(GRADS_B[0], dtype=torch.float32)
    norm = torch.nn.utils.clip_grad_norm_([w, b], 1.0)
    print("clip_grad_norm_ max_norm 1.0: pre-clip norm %.9g" % float(norm))
    print("  w.grad %s" % fmt(w.grad))
    print("  b.grad %s" % fmt(b.grad))


if __name__ == "__main__":
    main()
