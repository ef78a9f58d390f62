"""Whole tinygrad programs (issue 21): training steps with backward and an optimizer, a CNN with
BatchNorm in train and eval mode, masked attention, sort/topk, pads, pooling, interpolate,
integer and half programs, symbolic shapes, TinyJit, BEAM-searched kernels. Each is a function
of a seeded numpy generator returning numpy results, so the same program runs on DEV=CPU and on
DEV=CPU:KCC (tests/tinygrad/test_programs.py). Weights come from numpy, not from tinygrad's
initializers, so a program's result does not hang on its random generator."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def _t(a: np.ndarray, grad: bool = False) -> Any:
    from tinygrad import Tensor
    t = Tensor(a)
    if grad:
        t.requires_grad = True
    return t


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _mlp_steps(rng: np.random.Generator, make_opt: Callable[[list], Any],
               steps: int) -> list[np.ndarray]:
    """A 2-layer MLP trained for a few steps on a fixed batch: cross-entropy on integer labels,
    backward, an optimizer step; the losses and the final weights."""
    from tinygrad.helpers import Context
    x = _t(_f32(rng, 16, 8))
    y = _t(rng.integers(0, 4, size=(16,)).astype(np.int32))
    w1, b1 = _t(_f32(rng, 8, 12, scale=0.4), True), _t(np.zeros(12, np.float32), True)
    w2, b2 = _t(_f32(rng, 12, 4, scale=0.4), True), _t(np.zeros(4, np.float32), True)
    params = [w1, b1, w2, b2]
    opt = make_opt(params)
    losses = []
    with Context(TRAINING=1):
        for _ in range(steps):
            opt.zero_grad()
            h = (x @ w1 + b1).relu()
            loss = (h @ w2 + b2).sparse_categorical_crossentropy(y)
            loss.backward()
            opt.step()
            losses.append(loss.numpy())
    return [np.stack(losses)] + [p.numpy() for p in params]


def mlp_sgd_training(rng: np.random.Generator) -> list[np.ndarray]:
    from tinygrad.nn.optim import SGD
    return _mlp_steps(rng, lambda ps: SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-4), 4)


def mlp_adam_training(rng: np.random.Generator) -> list[np.ndarray]:
    from tinygrad.nn.optim import Adam
    return _mlp_steps(rng, lambda ps: Adam(ps, lr=0.01), 4)


def cnn_batchnorm_train_eval(rng: np.random.Generator) -> list[np.ndarray]:
    """Conv2d -> BatchNorm2d -> relu -> max_pool2d -> Linear: two SGD steps in training mode
    (batch statistics, running statistics updated), then a forward pass in eval mode."""
    from tinygrad import nn
    from tinygrad.helpers import Context
    from tinygrad.nn.optim import SGD
    conv, bn, fc = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.Linear(4 * 4 * 4, 3)
    conv.weight, conv.bias = _t(_f32(rng, 4, 3, 3, 3, scale=0.3)), _t(_f32(rng, 4, scale=0.1))
    fc.weight, fc.bias = _t(_f32(rng, 3, 64, scale=0.2)), _t(np.zeros(3, np.float32))
    params = [conv.weight, conv.bias, bn.weight, bn.bias, fc.weight, fc.bias]
    for p in params:
        p.requires_grad = True
    x = _t(_f32(rng, 4, 3, 8, 8))
    y = _t(rng.integers(0, 3, size=(4,)).astype(np.int32))

    def forward(inp: Any) -> Any:
        return fc(bn(conv(inp)).relu().max_pool2d().flatten(1))

    opt = SGD(params, lr=0.05)
    losses = []
    with Context(TRAINING=1):
        for _ in range(2):
            opt.zero_grad()
            loss = forward(x).sparse_categorical_crossentropy(y)
            loss.backward()
            opt.step()
            losses.append(loss.numpy())
    with Context(TRAINING=0):
        ev = forward(x).numpy()
    return [np.stack(losses), bn.running_mean.numpy(), bn.running_var.numpy(),
            conv.weight.numpy(), ev]


def attention_masks(rng: np.random.Generator) -> list[np.ndarray]:
    """Scaled dot-product attention: causal, with a boolean padding mask, with an additive
    float mask; and the gradient of the causal one with respect to q."""
    from tinygrad import Tensor
    q = _t(_f32(rng, 2, 2, 8, 16), True)
    k, v = _t(_f32(rng, 2, 2, 8, 16)), _t(_f32(rng, 2, 2, 8, 16))
    keep = np.ones((2, 1, 1, 8), bool)
    keep[0, ..., 6:] = False                          # the first batch's last two keys padded
    add = _f32(rng, 8, 8) * 0.5
    causal = q.scaled_dot_product_attention(k, v, is_causal=True)
    padded = q.scaled_dot_product_attention(k, v, attn_mask=_t(keep))
    biased = q.scaled_dot_product_attention(k, v, attn_mask=_t(add))
    causal.square().sum().backward()
    # by hand: softmax over masked scores, the causal mask from Tensor.ones(...).tril()
    scores = (q @ k.transpose(-1, -2)) / 4.0
    mask = Tensor.ones(8, 8).tril().bool()
    manual = mask.where(scores, float("-inf")).softmax(-1) @ v
    return [causal.numpy(), padded.numpy(), biased.numpy(), q.grad.numpy(), manual.numpy()]


def sort_topk(rng: np.random.Generator) -> list[np.ndarray]:
    x = _t(rng.permutation(48).reshape(3, 16).astype(np.float32) - 20)   # distinct values
    i = _t(rng.integers(-50, 50, size=(20,)).astype(np.int32))
    vals, idx = x.sort(dim=-1)
    dvals, didx = x.sort(dim=0, descending=True)
    tv, ti = x.topk(5)
    sv, si = x.topk(3, dim=0, largest=False)
    return [vals.numpy(), idx.numpy(), dvals.numpy(), didx.numpy(), tv.numpy(), ti.numpy(),
            sv.numpy(), si.numpy(), i.sort()[0].numpy(), x.argsort(dim=-1).numpy()]


def pads_pooling_interpolate(rng: np.random.Generator) -> list[np.ndarray]:
    x = _t(_f32(rng, 2, 3, 7, 9))
    out = [x.pad((1, 2, 2, 1)).numpy(), x.pad((1, 2, 2, 1), value=-3.0).numpy()]
    out += [x.pad((2, 1, 1, 2), mode=m).numpy() for m in ("reflect", "replicate", "circular")]
    out += [x.max_pool2d().numpy(), x.max_pool2d((3, 3), stride=2, padding=1).numpy(),
            x.avg_pool2d((3, 3), stride=1, padding=1).numpy(),
            x.avg_pool2d((2, 3), count_include_pad=False, padding=1).numpy()]
    out += [x.interpolate((14, 5), mode=m).numpy() for m in ("linear", "nearest",
                                                              "nearest-exact")]
    out.append(x.interpolate((4, 18), mode="linear", align_corners=True).numpy())
    return out


def integer_program(rng: np.random.Generator) -> list[np.ndarray]:
    """Integer-only work: a histogram via one_hot, an int32 matmul, cumsum, bit tricks, an
    embedding gather, argmax over int64, floor division and remainder."""
    from tinygrad import dtypes
    labels = _t(rng.integers(0, 10, size=(50,)).astype(np.int32))
    a = _t(rng.integers(-20, 20, size=(6, 9)).astype(np.int32))
    b = _t(rng.integers(-20, 20, size=(9, 5)).astype(np.int32))
    big = _t(rng.integers(-2**40, 2**40, size=(4, 7)).astype(np.int64))
    table = _t(rng.integers(0, 255, size=(10, 4)).astype(np.uint8))
    hist = labels.one_hot(10).sum(axis=0)
    packed = ((a & 0xF) << 4) | (a.abs() % 16)
    return [hist.numpy(), (a @ b).numpy(), a.cumsum(axis=1).numpy(), packed.numpy(),
            table[labels[:12]].numpy(), (table.cast(dtypes.int32).sum(axis=1)).numpy(),
            big.argmax(axis=1).numpy(), (big // 1000).numpy(), (big % 977).numpy(),
            (a.max(axis=0) - a.min(axis=0)).numpy(), (a > 3).where(a, -a).sum().numpy()]


def half_program(rng: np.random.Generator) -> list[np.ndarray]:
    """A float16 MLP forward pass with softmax, a half matmul, half casts and reductions."""
    from tinygrad import dtypes
    x = _t(_f32(rng, 8, 16).astype(np.float16))
    w1 = _t((_f32(rng, 16, 32) * 0.25).astype(np.float16))
    w2 = _t((_f32(rng, 32, 6) * 0.25).astype(np.float16))
    h = (x @ w1).relu()
    p = (h @ w2).softmax(-1)
    return [p.numpy(), h.sum(axis=0).numpy(), h.max(axis=1).numpy(),
            (x.cast(dtypes.float32) @ w1.cast(dtypes.float32)).cast(dtypes.half).numpy(),
            (x * 2 + 1).cast(dtypes.int16).numpy(), x.mean().numpy()]


def symbolic_shapes(rng: np.random.Generator) -> list[np.ndarray]:
    """Variable-length work: a symbolic slice through a linear layer, softmax over the
    symbolic axis and a causal score mask of symbolic size, bound to several lengths."""
    from tinygrad import Tensor, Variable
    x, w = _t(_f32(rng, 16, 8)), _t(_f32(rng, 8, 8, scale=0.3))
    out = []
    for n in (3, 9, 16):
        v = Variable("seq", 1, 16).bind(n)
        h = x[:v] @ w
        out.append(h.sum(axis=0).numpy())
        out.append(h.softmax(axis=0).sum(axis=1).sum().reshape(1).numpy())
        s = h @ h.T
        m = Tensor.ones(16, 16).tril()[:v, :v]
        out.append((s * m).sum(axis=1).sum().reshape(1).numpy())
    return out


def jit_program(rng: np.random.Generator) -> list[np.ndarray]:
    """A TinyJit function called five times (captured on the second call, replayed after)."""
    from tinygrad import TinyJit
    w = _t(_f32(rng, 12, 6))

    @TinyJit
    def step(x: Any) -> Any:
        return ((x @ w).relu().sum(axis=1) + x.max(axis=1)).realize()

    return [step(_t(_f32(rng, 5, 12))).numpy() for _ in range(5)]


def beam_searched(rng: np.random.Generator) -> list[np.ndarray]:
    """BEAM=2 on a tiny matmul: tinygrad compiles and times candidate
    kernels with the device's compiler and keeps the fastest. CACHELEVEL=0 makes it search
    here rather than reuse a search (or an object) from an earlier run."""
    from tinygrad.helpers import Context
    a, b = _t(_f32(rng, 4, 16)), _t(_f32(rng, 16, 4))
    with Context(BEAM=2, CACHELEVEL=0):
        return [(a @ b).numpy()]


def rand_half(rng: np.random.Generator) -> list[np.ndarray]:
    """issue 21's first reproducer."""
    from tinygrad import Tensor, dtypes
    Tensor.manual_seed(7)
    return [Tensor.rand(64, dtype=dtypes.half).numpy()]


def conv_bn_conv_gelu(rng: np.random.Generator) -> list[np.ndarray]:
    """issue 21's second reproducer, as a user writes it (tinygrad's initializers, a random
    input): Conv2d -> BatchNorm -> relu -> Conv2d(stride=2) -> gelu, in train and eval mode."""
    from tinygrad import Tensor, nn
    from tinygrad.helpers import Context
    Tensor.manual_seed(3)
    c1, bn, c2 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.Conv2d(8, 4, 3, stride=2)
    x = Tensor.rand(2, 3, 16, 16)
    with Context(TRAINING=1):                    # batch statistics
        train = c2(bn(c1(x)).relu()).gelu().numpy()
    return [train, c2(bn(c1(x)).relu()).gelu().numpy()]


PROGRAMS: dict[str, Callable[[np.random.Generator], list[np.ndarray]]] = {
    f.__name__: f for f in (mlp_sgd_training, mlp_adam_training, cnn_batchnorm_train_eval,
                            attention_masks, sort_topk, pads_pooling_interpolate,
                            integer_program, half_program, symbolic_shapes, jit_program,
                            beam_searched, rand_half, conv_bn_conv_gelu)
}
