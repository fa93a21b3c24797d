# SPDX-License-Identifier: BSD-3-Clause
"""Float64 references and error bounds for checking the ops' results.

The bounds are the library's own error model (tests/harness.c in the
fusedblas sources, after Higham, "Accuracy and Stability of Numerical
Algorithms", 2nd ed., 2.2 and 3.1), element by element: every fp32
operation errs by at most u_acc relatively (2^-24 rounding to nearest on
CPUs, 2^-22 on tensor cores, whose adders may truncate); a 16-bit output
is the fp32 result rounded once (u_out: 2^-11 fp16, 2^-8 bf16); GELU and
SiLU are evaluated to 8 * 2^-24 |z| and move an error by at most their
slope (1.13, 1.10); the gated MLP may store its intermediates in the
input type. The bound grows with the gauge sum |x| |w| + |b| and with k
(and h): it comes from the dtype and the sizes, not from what was seen.
"""

import torch

from .reference import activate, rows

_U = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11,
      torch.bfloat16: 2.0 ** -8, torch.float64: 2.0 ** -53}
# half the smallest subnormal: the absolute part of a rounding
_TINY = {torch.float32: 2.0 ** -150, torch.float16: 2.0 ** -25,
         torch.bfloat16: 2.0 ** -134, torch.float64: 2.0 ** -1075}
_SLOPE = {"none": 1.0, "relu": 1.0, "gelu_tanh": 1.13, "gelu_erf": 1.13,
          "silu": 1.10}
_EVAL = {"none": 0.0, "relu": 0.0, "gelu_tanh": 8.0, "gelu_erf": 8.0,
         "silu": 8.0}


def unit_roundoff(dtype):
    return _U[dtype]


def accumulation_roundoff(device):
    """u_acc: fp32 arithmetic on the CPU, tensor cores on CUDA."""
    return 2.0 ** -24 if torch.device(device).type == "cpu" else 2.0 ** -22


def _gamma(n, u):
    return n * u / (1.0 - n * u)


def _d(t):
    return None if t is None else t.detach().to(torch.float64)


def _flat(x):
    return rows(x)


def linear_reference(x, weight, bias, activation):
    """act(x @ weight.T + bias) in float64 from the given (rounded) inputs."""
    return activate(torch.nn.functional.linear(_d(x), _d(weight), _d(bias)),
                    activation)


def linear_bound(x, weight, bias, activation, ref, u_acc, tf32=False):
    """Element-wise bound on |linear(x, ...) - ref| for ref =
    linear_reference(...): x's dtype, k = weight.shape[1]."""
    dtype = x.dtype
    k = weight.shape[1]
    u_in = 2.0 ** -10 if tf32 and dtype == torch.float32 else 0.0
    gauge = _flat(_d(x)).abs() @ _d(weight).abs().t()
    if bias is not None:
        gauge = gauge + _d(bias).abs()
    gauge = gauge.reshape(ref.shape)
    e_z = (1 + u_in) ** 2 * (1 + _gamma(k + 3, u_acc)) - 1
    c = _EVAL[activation] * 2.0 ** -24
    E = _SLOPE[activation] * e_z * gauge + c * (1 + e_z) * gauge
    return E + _U[dtype] * (ref.abs() + E) + _TINY[dtype] + (k + 4) * 2.0 ** -124


def gated_mlp_reference(x, w_gate, w_up, w_down, b_gate, b_up, b_down,
                        activation, dtype=None):
    """The gated MLP in float64 from the given inputs, H rounded to the
    16-bit dtype (x's, unless given) before the down projection, as
    PyTorch stores it."""
    F = torch.nn.functional
    dtype = x.dtype if dtype is None else dtype
    X = _flat(_d(x))
    H = activate(F.linear(X, _d(w_gate), _d(b_gate)), activation) * \
        F.linear(X, _d(w_up), _d(b_up))
    if dtype != torch.float32:
        H = H.to(dtype).to(torch.float64)
    Y = F.linear(H, _d(w_down), _d(b_down))
    return Y.reshape(x.shape[:-1] + (w_down.shape[0],))


def gated_mlp_bound(x, w_gate, w_up, w_down, b_gate, b_up, b_down,
                    activation, ref, u_acc, tf32=False):
    """Element-wise bound on |gated_mlp(x, ...) - ref| for ref =
    gated_mlp_reference(...)."""
    F = torch.nn.functional
    dtype = x.dtype
    k = w_gate.shape[1]
    h = w_gate.shape[0]
    u_in = 2.0 ** -10 if tf32 and dtype == torch.float32 else 0.0
    um, tm = _U[dtype], _TINY[dtype]
    s, c = _SLOPE[activation], _EVAL[activation] * 2.0 ** -24
    in2 = (1 + u_in) ** 2
    e_k = in2 * (1 + _gamma(k + 1, u_acc)) - 1
    e_h = in2 * (1 + _gamma(h + 1, u_acc)) - 1
    rho = (1 + e_k) * (1 + um) - 1
    X = _flat(_d(x)).abs()
    ab = lambda t: None if t is None else _d(t).abs()  # noqa: E731
    gg = F.linear(X, ab(w_gate), ab(b_gate))
    gu = F.linear(X, ab(w_up), ab(b_up))
    Xs = _flat(_d(x))
    H = activate(F.linear(Xs, _d(w_gate), _d(b_gate)), activation) * \
        F.linear(Xs, _d(w_up), _d(b_up))
    if dtype != torch.float32:
        H = H.to(dtype).to(torch.float64)
    du = rho * gu + tm
    da = (1 + um) * ((s * rho + c * (1 + rho)) * gg + (s + c) * tm) + um * gg + tm
    dP = da * (gu + du) + gg * du + u_acc * (gg + da) * (gu + du)
    dH = (1 + um) * dP + 2 * um * (1 + 2 * um) * H.abs() + 3 * tm
    Wd = _d(w_down).abs()
    prop = dH @ Wd.t()
    gh = H.abs() @ Wd.t()
    if b_down is not None:
        gh = gh + _d(b_down).abs()
    E = (1 + e_h) * prop + e_h * gh
    wsum = Wd.sum(1)
    Y = rows(ref)
    bound = E + _U[dtype] * (Y.abs() + E) + _TINY[dtype] + \
        (k + h + 8) * 2.0 ** -124 * (1 + wsum)
    return bound.reshape(ref.shape)


def assert_within(got, ref, bound, what=""):
    """Every element of got within bound of ref (NaN where ref is NaN)."""
    got = got.detach().to(torch.float64).cpu()
    ref = ref.cpu()
    bound = bound.cpu()
    err = (got - ref).abs()
    bad = ~(err <= bound) & ~(torch.isnan(got) & torch.isnan(ref))
    if bad.any():
        i = int(bad.reshape(-1).nonzero()[0])
        ratio = (err / bound).nan_to_num(float("inf")).max().item()
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {got.numel()} elements outside the "
            f"bound (worst error / bound = {ratio:.3g}); element {i}: got "
            f"{got.reshape(-1)[i].item()!r}, reference {ref.reshape(-1)[i].item()!r}, "
            f"bound {bound.reshape(-1)[i].item():.3g}")
