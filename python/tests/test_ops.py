# SPDX-License-Identifier: BSD-3-Clause
"""The ops' results against float64 references, within the bounds of
fusedblas.testing (from the dtype, k and h): every dtype, activation and
device, bias present and absent, batched inputs, strides, empty sizes."""

import pytest
import torch

import fusedblas
from fusedblas import _forward
from fusedblas import testing as T

from conftest import DEVICES, DTYPES

ACTS = fusedblas.ACTIVATIONS


def check_linear(x, w, b, act, got, what):
    what = f"{what} [{fusedblas.last_path()}]"
    ref = T.linear_reference(x, w, b, act)
    bound = T.linear_bound(x, w, b, act, ref, T.accumulation_roundoff(x.device))
    assert got.shape == ref.shape and got.dtype == x.dtype and got.device == x.device
    T.assert_within(got, ref, bound, what)


def check_mlp(args, act, got, what):
    what = f"{what} [{fusedblas.last_path()}]"
    x = args[0]
    ref = T.gated_mlp_reference(*args, act)
    bound = T.gated_mlp_bound(*args, act, ref, T.accumulation_roundoff(x.device))
    assert got.shape == ref.shape and got.dtype == x.dtype and got.device == x.device
    T.assert_within(got, ref, bound, what)


def mlp_args(r, m, k, h, n, bias, lead=None):
    x = r.uniform(*(lead if lead is not None else (m,)), k)
    b = (lambda length: r.uniform(length, scale=0.5)) if bias else (lambda length: None)
    return (x, r.weight(h, k), r.weight(h, k), r.weight(n, h), b(h), b(h), b(n))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("m,k,n", [(13, 37, 19), (64, 300, 48)])
def test_linear(inputs, device, dtype, act, bias, m, k, n):
    r = inputs(dtype, device)
    x, w = r.uniform(m, k), r.weight(n, k)
    b = r.uniform(n, scale=0.5) if bias else None
    check_linear(x, w, b, act, fusedblas.linear(x, w, b, act), "fusedblas.linear")
    check_linear(x, w, b, act, torch.ops.fusedblas.linear(x, w, b, act),
                 "torch.ops.fusedblas.linear")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("m,k,h,n", [(13, 37, 29, 19), (40, 128, 160, 64)])
def test_gated_mlp(inputs, device, dtype, act, bias, m, k, h, n):
    r = inputs(dtype, device)
    args = mlp_args(r, m, k, h, n, bias)
    check_mlp(args, act, fusedblas.gated_mlp(*args, activation=act),
              "fusedblas.gated_mlp")
    check_mlp(args, act, torch.ops.fusedblas.gated_mlp(*args, act),
              "torch.ops.fusedblas.gated_mlp")


def test_defaults(inputs):
    """linear's activation defaults to none, gated_mlp's to gelu_tanh,
    in the functions and in the ops' schemas."""
    r = inputs()
    x, w = r.uniform(5, 8), r.weight(3, 8)
    check_linear(x, w, None, "none", fusedblas.linear(x, w), "default none")
    check_linear(x, w, None, "none", torch.ops.fusedblas.linear(x, w), "op default")
    args = mlp_args(r, 5, 8, 12, 4, False)
    check_mlp(args, "gelu_tanh", fusedblas.gated_mlp(*args[:4]), "default gelu_tanh")
    check_mlp(args, "gelu_tanh", torch.ops.fusedblas.gated_mlp(*args[:4]),
              "op default")
    schema = str(torch.ops.fusedblas.gated_mlp.default._schema)
    assert 'str activation="gelu_tanh"' in schema
    assert 'str activation="none"' in str(torch.ops.fusedblas.linear.default._schema)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_batched(inputs, device, dtype):
    """x [..., k]: any number of leading dimensions, 1-D included."""
    r = inputs(dtype, device)
    w, b = r.weight(24, 40), r.uniform(24, scale=0.5)
    for lead in [(2, 3), (2, 1, 5), (7,), ()]:
        x = r.uniform(*lead, 40)
        y = fusedblas.linear(x, w, b, "gelu_tanh")
        assert y.shape == lead + (24,)
        check_linear(x, w, b, "gelu_tanh", y, f"linear x{tuple(x.shape)}")
        args = mlp_args(r, None, 40, 56, 24, True, lead=lead)
        y = fusedblas.gated_mlp(*args, activation="silu")
        assert y.shape == lead + (24,)
        check_mlp(args, "silu", y, f"gated_mlp x{tuple(x.shape)}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_padded_row_stride(inputs, device, dtype):
    """x with a padded row stride (a column slice of a wider tensor, 2-D
    or batched) is passed with that stride, not copied; the padding holds
    NaN, which must not reach the result."""
    r = inputs(dtype, device)
    m, k, n = 9, 33, 17
    wide = torch.full((m, k + 7), float("nan"), dtype=dtype, device=device)
    wide[:, :k] = r.uniform(m, k)
    x = wide[:, :k]
    assert _forward._rows(x, m, k) == (False, k + 7)
    w, b = r.weight(n, k), r.uniform(n, scale=0.5)
    check_linear(x, w, b, "silu", fusedblas.linear(x, w, b, "silu"), "padded x")
    args = (x,) + mlp_args(r, m, k, 21, n, True)[1:]
    check_mlp(args, "gelu_tanh", fusedblas.gated_mlp(*args), "padded x, mlp")
    wide3 = torch.full((2, 4, k + 5), float("nan"), dtype=dtype, device=device)
    wide3[..., :k] = r.uniform(2, 4, k)
    x3 = wide3[..., :k]
    assert _forward._rows(x3.reshape(-1, k), 8, k) == (False, k + 5)
    check_linear(x3, w, b, "relu", fusedblas.linear(x3, w, b, "relu"), "padded 3-D x")


@pytest.mark.parametrize("device", DEVICES)
def test_other_strides(inputs, device):
    """Transposed x and weight go to the library as transposed operands;
    strides it cannot take (a zero stride, overlapping rows, a
    non-contiguous bias or MLP weight) are copied to contiguous."""
    r = inputs(torch.float32, device)
    m, k, n = 11, 20, 13
    xt, wt = r.uniform(k, m), r.uniform(k, n)
    x, w = xt.t(), wt.t()
    assert _forward._rows(x, m, k) == (True, m)
    assert _forward._rows(w, n, k) == (True, n)
    b2 = r.uniform(2 * n)[::2]
    check_linear(x, w, b2, "gelu_erf", fusedblas.linear(x, w, b2, "gelu_erf"),
                 "transposed x and weight, strided bias")
    row = r.uniform(1, k)
    xe = row.expand(m, k)
    assert _forward._rows(xe, m, k) is None
    check_linear(xe, w, None, "none", fusedblas.linear(xe, w), "expanded x")
    args = list(mlp_args(r, m, k, 16, n, True))
    args[0] = xt.t()  # the MLP takes x row-major only: copied
    args[1] = r.uniform(k, 16).t()
    args[4] = r.uniform(32)[::2]
    check_mlp(tuple(args), "silu", fusedblas.gated_mlp(*args, activation="silu"),
              "transposed x and w_gate, strided b_gate")


@pytest.mark.parametrize("device", DEVICES)
def test_empty_sizes(inputs, device):
    """m = 0 and n = 0 give empty results; k = 0 gives act(bias) in every
    row; h = 0 gives b_down in every row."""
    r = inputs(torch.float32, device)
    w, b = r.weight(6, 5), r.uniform(6, scale=0.5)
    assert fusedblas.linear(r.uniform(0, 5), w, b).shape == (0, 6)
    assert fusedblas.linear(r.uniform(2, 0, 5), w, b).shape == (2, 0, 6)
    assert fusedblas.linear(r.uniform(3, 5), r.weight(0, 5)).shape == (3, 0)
    x0, w0 = r.uniform(4, 0), r.weight(6, 0)
    check_linear(x0, w0, b, "silu", fusedblas.linear(x0, w0, b, "silu"), "k = 0")
    x0 = r.uniform(2, 3, 0)
    check_linear(x0, w0, b, "silu", fusedblas.linear(x0, w0, b, "silu"), "k = 0, 3-D")
    args = (x0, r.weight(7, 0), r.weight(7, 0), r.weight(6, 7), r.uniform(7),
            r.uniform(7), b)
    check_mlp(args, "gelu_erf", fusedblas.gated_mlp(*args, activation="gelu_erf"),
              "k = 0, 3-D")
    x = r.uniform(3, 5)
    bd = r.uniform(4, scale=0.5)
    y = fusedblas.gated_mlp(x, r.weight(0, 5), r.weight(0, 5), r.weight(4, 0),
                            None, None, bd)
    assert torch.equal(y, bd.expand(3, 4))
    assert fusedblas.gated_mlp(r.uniform(0, 5), r.weight(7, 5), r.weight(7, 5),
                               r.weight(4, 7)).shape == (0, 4)


def test_threads(inputs):
    """Threads calling at once, each on its own handle, get right results."""
    import threading
    r = inputs()
    x, w, b = r.uniform(64, 96), r.weight(80, 96), r.uniform(80)
    args = mlp_args(r, 64, 96, 128, 80, True)
    errors = []

    def work():
        try:
            for _ in range(20):
                check_linear(x, w, b, "gelu_tanh",
                             fusedblas.linear(x, w, b, "gelu_tanh"), "threaded")
                check_mlp(args, "silu", fusedblas.gated_mlp(*args, activation="silu"),
                          "threaded")
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_autocast(inputs):
    """Under autocast, inputs are cast to its dtype as F.linear's are, in
    eager and under torch.compile(fullgraph=True)."""
    import torch._dynamo
    r = inputs()
    x, w, b = r.uniform(6, 16), r.weight(10, 16), r.uniform(10)
    args = mlp_args(r, 6, 16, 24, 10, True)
    low = lambda t: t if t is None else t.to(torch.bfloat16)  # noqa: E731
    want_lin = fusedblas.linear(low(x), low(w), low(b), "silu")
    want_mlp = fusedblas.gated_mlp(*map(low, args), activation="relu")

    def f(x, w, b, *args):
        return fusedblas.linear(x, w, b, "silu"), fusedblas.gated_mlp(*args, activation="relu")

    torch._dynamo.reset()
    for fn in (f, torch.compile(f, backend="eager", fullgraph=True)):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got_lin, got_mlp = fn(x, w, b, *args)
        assert got_lin.dtype == torch.bfloat16 and got_mlp.dtype == torch.bfloat16
        assert torch.equal(got_lin, want_lin) and torch.equal(got_mlp, want_mlp)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):
            assert fn(x, w, b, *args)[0].dtype == torch.float32
    torch._dynamo.reset()
