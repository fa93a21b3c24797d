# SPDX-License-Identifier: BSD-3-Clause
"""The backward pass: the package's formulas (fusedblas.reference) checked
by torch.autograd.gradcheck in float64, and the ops' gradients (float32
forward through the library, backward in float32 PyTorch operations)
against float64 gradients from PyTorch's own autograd of the reference
formulas, within a stated bound.

The bound, element by element, is first-order rounding error analysis of
the backward's float32 computation: every float32 operation errs by at
most u_acc relatively (2^-24 on the CPU, 2^-22 on CUDA), so a sum of n
products errs by at most (n + 1) u_acc times its gauge, the same sum of
absolute values; a pre-activation z recomputed from k products by
(k + 3) u_acc |x| |w|; act'(z) by sup|act''| times that plus 8 u_acc for
its evaluation (sup|act'| = 1.13 GELU, 1.10 SiLU, 1 ReLU and none;
sup|act''| = 0.80 GELU, 0.50 SiLU, 0 ReLU away from 0 and none); each
gradient's gauge is its formula evaluated on absolute values with those
sups for the activation's derivatives. The float64 reference errs
negligibly (2^-53). Bounds of this kind come from float32's epsilon and
the sizes m, k, h, n only.
"""

import pytest
import torch
import torch.nn.functional as F

import fusedblas
from fusedblas import reference
from fusedblas import testing as T

from conftest import DEVICES, DTYPES

ACTS = fusedblas.ACTIVATIONS
S1 = {"none": 1.0, "relu": 1.0, "gelu_tanh": 1.13, "gelu_erf": 1.13, "silu": 1.10}
S2 = {"none": 0.0, "relu": 0.0, "gelu_tanh": 0.80, "gelu_erf": 0.80, "silu": 0.50}
EVAL = 8.0


def a64(t):
    return None if t is None else t.detach().to(torch.float64).abs()


def flat(t):
    return reference.rows(t)


def linear_grad_bounds(x, w, b, gy, act, u):
    """Bounds on the float32 gradients of x, weight, bias (see the module
    docstring)."""
    X, W, GY = flat(a64(x)), a64(w), flat(a64(gy))
    m, k = X.shape
    n = W.shape[0]
    Gz = X @ W.t() + (a64(b) if b is not None else 0)
    Gdz = S1[act] * GY
    Edz = GY * (S2[act] * (k + 3) * Gz + EVAL) if act != "none" else 0 * GY
    gx = (n + 1) * (Gdz @ W) + Edz @ W
    gw = (m + 1) * (Gdz.t() @ X) + Edz.t() @ X
    gb = (m + 1) * Gdz.sum(0) + Edz.sum(0)
    tiny = 2.0 ** -120
    return (u * gx + tiny).reshape(x.shape), u * gw + tiny, u * gb + tiny


def mlp_grad_bounds(args, gy, act, u):
    x, wg, wu, wd, bg, bu, bd = args
    X, GY = flat(a64(x)), flat(a64(gy))
    Wg, Wu, Wd = a64(wg), a64(wu), a64(wd)
    m, k = X.shape
    h, n = Wg.shape[0], Wd.shape[0]
    s1, s2 = S1[act], S2[act]
    Gg = X @ Wg.t() + (a64(bg) if bg is not None else 0)
    Gu = X @ Wu.t() + (a64(bu) if bu is not None else 0)
    Eg, Eu = (k + 3) * Gg, (k + 3) * Gu
    Ga = Gg                       # |act(g)| <= |g| for every activation here
    Ea = s1 * Eg + EVAL * Gg
    Gdh = GY @ Wd
    Edh = (n + 1) * Gdh
    Gdu = Gdh * Ga
    Edu = Edh * Ga + Gdh * Ea + Gdu
    Gt = Gdh * Gu
    Et = Edh * Gu + Gdh * Eu + Gt
    Gdg = s1 * Gt
    Edg = s1 * Et + Gt * (s2 * Eg + EVAL)
    Gau = Ga * Gu
    Eau = Ea * Gu + Ga * Eu + Gau
    gx = (h + 2) * (Gdg @ Wg + Gdu @ Wu) + Edg @ Wg + Edu @ Wu
    gwg = (m + 1) * (Gdg.t() @ X) + Edg.t() @ X
    gwu = (m + 1) * (Gdu.t() @ X) + Edu.t() @ X
    gwd = (m + 1) * (GY.t() @ Gau) + GY.t() @ Eau
    gbg = (m + 1) * Gdg.sum(0) + Edg.sum(0)
    gbu = (m + 1) * Gdu.sum(0) + Edu.sum(0)
    gbd = (m + 1) * GY.sum(0)
    tiny = 2.0 ** -120
    return [u * t + tiny for t in ((gx).reshape(x.shape), gwg, gwu, gwd, gbg, gbu, gbd)]


def leaf(t, dtype=None):
    return t.detach().to(dtype or t.dtype).requires_grad_()


def away_from_kink(z, act, k, u):
    """ReLU's derivative jumps at 0: where the float32 z may have the other
    sign, the gradients may differ by a whole term. The inputs are drawn so
    that no such z exists (asserted, not loosened)."""
    return act != "relu" or bool((z.abs() > 4 * (k + 3) * u * z.abs().max()).all())


# ---- gradcheck of the package's backward formulas, in float64 ------------


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("bias", [True, False])
def test_gradcheck_linear(inputs, act, bias):
    r = inputs(torch.float64)
    x, w = leaf(r.uniform(2, 3, 6)), leaf(r.weight(5, 6))
    b = leaf(r.uniform(5)) if bias else None
    assert torch.autograd.gradcheck(
        lambda x, w, b: reference.linear(x, w, b, act), (x, w, b))


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("bias", [True, False])
def test_gradcheck_gated_mlp(inputs, act, bias):
    r = inputs(torch.float64)
    b = (lambda n: leaf(r.uniform(n))) if bias else (lambda n: None)
    args = (leaf(r.uniform(2, 3, 6)), leaf(r.weight(7, 6)), leaf(r.weight(7, 6)),
            leaf(r.weight(4, 7)), b(7), b(7), b(4))
    assert torch.autograd.gradcheck(
        lambda *a: reference.gated_mlp(*a, activation=act), args)


# ---- the ops' float32 gradients against float64 ---------------------------


def draw_linear(r, act, m, k, n, u):
    for _ in range(20):
        x, w, b = r.uniform(m, k), r.weight(n, k), r.uniform(n, scale=0.5)
        z = T.linear_reference(x, w, b, "none")
        if away_from_kink(z, act, k, u):
            return x, w, b
    raise AssertionError("no draw kept ReLU's inputs away from 0")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_grad_float32(inputs, device, act, bias):
    r = inputs(torch.float32, device)
    m, k, n = 12, 40, 24
    u = T.accumulation_roundoff(device)
    x, w, b = draw_linear(r, act, m, k, n, u)
    b = b if bias else None
    gy = r.uniform(m, n)
    xs, ws, bs = leaf(x), leaf(w), None if b is None else leaf(b)
    fusedblas.linear(xs, ws, bs, act).backward(gy)
    x64, w64 = leaf(x, torch.float64), leaf(w, torch.float64)
    b64 = None if b is None else leaf(b, torch.float64)
    reference.linear_forward(x64, w64, b64, act).backward(gy.double())
    bounds = linear_grad_bounds(x, w, b, gy, act, u)
    for name, got, ref, bound in zip(("x", "weight", "bias"), (xs, ws, bs),
                                     (x64, w64, b64), bounds):
        if got is not None:
            T.assert_within(got.grad, ref.grad.detach(), bound, f"grad of {name}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("bias", [True, False])
def test_gated_mlp_grad_float32(inputs, device, act, bias):
    r = inputs(torch.float32, device)
    m, k, h, n = 10, 24, 40, 16
    u = T.accumulation_roundoff(device)
    for _ in range(20):
        b = (lambda length: r.uniform(length, scale=0.5)) if bias else (lambda length: None)
        args = (r.uniform(2, m // 2, k), r.weight(h, k), r.weight(h, k),
                r.weight(n, h), b(h), b(h), b(n))
        g = T.linear_reference(args[0], args[1], args[4], "none")
        if away_from_kink(g, act, k, u):
            break
    else:
        raise AssertionError("no draw kept ReLU's inputs away from 0")
    gy = r.uniform(2, m // 2, n)
    ours = [None if t is None else leaf(t) for t in args]
    fusedblas.gated_mlp(*ours, activation=act).backward(gy)
    ref = [None if t is None else leaf(t, torch.float64) for t in args]
    reference.gated_mlp_forward(*ref, activation=act).backward(gy.double())
    bounds = mlp_grad_bounds(args, gy, act, u)
    names = ("x", "w_gate", "w_up", "w_down", "b_gate", "b_up", "b_down")
    for name, got, want, bound in zip(names, ours, ref, bounds):
        if got is not None:
            T.assert_within(got.grad, want.grad.detach(), bound, f"grad of {name}")


def test_only_the_gradients_asked_for(inputs):
    """needs_input_grad is honoured: frozen weights get no gradient."""
    r = inputs()
    x, w, b = leaf(r.uniform(3, 8)), r.weight(5, 8), r.uniform(5)
    fusedblas.linear(x, w, b, "silu").sum().backward()
    assert x.grad is not None and w.grad is None and b.grad is None
    args = [r.uniform(3, 8), leaf(r.weight(6, 8)), r.weight(6, 8), r.weight(4, 6)]
    fusedblas.gated_mlp(*args).sum().backward()
    assert args[1].grad is not None and args[3].grad is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ACTS)
def test_backward_is_pytorch_autograd(inputs, dtype, act):
    """On the CPU, the package's backward gives exactly the bits of
    PyTorch's own autograd of the same formulas in the same dtype: the
    recomputed pre-activations equal the ones autograd saves, and the
    operations are the same."""
    r = inputs(dtype)
    x, w, b, gy = r.uniform(6, 16), r.weight(12, 16), r.uniform(12), r.uniform(6, 12)
    ours = [leaf(t) for t in (x, w, b)]
    fusedblas.linear(*ours, act).backward(gy)
    eager = [leaf(t) for t in (x, w, b)]
    reference.activate(F.linear(*eager), act).backward(gy)
    for a, e in zip(ours, eager):
        assert torch.equal(a.grad, e.grad)
    args = (x, r.weight(20, 16), r.weight(20, 16), r.weight(12, 20),
            r.uniform(20), r.uniform(20), r.uniform(12))
    ours = [leaf(t) for t in args]
    fusedblas.gated_mlp(*ours, activation=act).backward(gy)
    eager = [leaf(t) for t in args]
    reference.gated_mlp_forward(*eager, activation=act).backward(gy)
    for a, e in zip(ours, eager):
        assert torch.equal(a.grad, e.grad)
