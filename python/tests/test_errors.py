# SPDX-License-Identifier: BSD-3-Clause
"""Bad inputs raise the documented errors, naming the argument, through
the functions, the ops and the fake implementations alike; library
statuses become FusedBlasError (a RuntimeError) with the library's words."""

import ctypes

import pytest
import torch

import fusedblas
from fusedblas import _library as L
from fusedblas import _handles

from conftest import cuda_only


def linear_calls():
    """The three ways in: the function, the op, and the op on meta tensors
    (its fake implementation), each taking (x, weight, bias, activation)."""
    def meta(x, w, b, a):
        to = lambda t: t.to("meta") if isinstance(t, torch.Tensor) else t  # noqa: E731
        return torch.ops.fusedblas.linear(to(x), to(w), to(b), a)
    return [fusedblas.linear, torch.ops.fusedblas.linear, meta]


def mlp_calls():
    def meta(*args):
        to = lambda t: t.to("meta") if isinstance(t, torch.Tensor) else t  # noqa: E731
        return torch.ops.fusedblas.gated_mlp(*map(to, args))
    return [lambda *a: fusedblas.gated_mlp(*a[:7], activation=a[7]),
            torch.ops.fusedblas.gated_mlp, meta]


x, w, b = torch.randn(4, 8), torch.randn(6, 8), torch.randn(6)

LINEAR_CASES = [
    # (x, weight, bias, activation), error, words the message must have
    ((x, w, b, "gelu"), ValueError, ["activation", "'gelu'", "gelu_tanh"]),
    ((x, w, b, "GELU_TANH"), ValueError, ["activation"]),
    ((x.double(), w.double(), b.double(), "none"), TypeError,
     ["x", "torch.float64", "float32"]),
    ((x.int(), w.int(), b.int(), "none"), TypeError, ["x", "torch.int32"]),
    ((x, w.half(), b, "none"), TypeError, ["weight", "torch.float16", "one dtype"]),
    ((x, w, b.bfloat16(), "none"), TypeError, ["bias", "torch.bfloat16"]),
    ((x, torch.randn(6, 9), b, "none"), ValueError, ["weight", "(6, 9)", "in_features"]),
    ((x, torch.randn(6, 8, 1), b, "none"), ValueError, ["weight", "2-D"]),
    ((x, w, torch.randn(5), "none"), ValueError, ["bias", "length", "6"]),
    ((x, w, torch.randn(6, 1), "none"), ValueError, ["bias", "1-D"]),
    ((torch.tensor(1.0), w, b, "none"), ValueError, ["x", "0-d"]),
]


@pytest.mark.parametrize("call", range(3))
@pytest.mark.parametrize("case", range(len(LINEAR_CASES)))
def test_linear_errors(call, case):
    args, error, words = LINEAR_CASES[case]
    fn = linear_calls()[call]
    if call == 2 and args[0].dtype == torch.int32:
        pytest.skip("meta integer tensors: same check, nothing more to see")
    with pytest.raises(error) as e:
        fn(*args)
    for word in words:
        assert word in str(e.value), (word, str(e.value))
    assert "fusedblas.linear" in str(e.value)


def test_linear_not_tensors():
    with pytest.raises(TypeError, match="x must be a tensor"):
        fusedblas.linear([[1.0]], w, b)
    with pytest.raises(TypeError, match="weight must be a tensor"):
        fusedblas.linear(x, None, b)
    with pytest.raises(TypeError, match="bias must be a tensor or None"):
        fusedblas.linear(x, w, 3.0)
    with pytest.raises(TypeError, match="activation must be a str"):
        fusedblas.linear(x, w, b, 2)


def test_linear_device_mismatch():
    with pytest.raises(RuntimeError, match="weight is on meta but x is on cpu"):
        fusedblas.linear(x, w.to("meta"), b)
    with pytest.raises(RuntimeError, match="bias is on meta"):
        fusedblas.linear(x, w, b.to("meta"))


@cuda_only
def test_linear_cpu_cuda_mix():
    with pytest.raises(RuntimeError, match="weight is on cuda:0 but x is on cpu"):
        fusedblas.linear(x, w.cuda(), b)
    with pytest.raises(RuntimeError, match="x is on cuda"):
        fusedblas.gated_mlp(x.cuda(), *(t for t in mlp_inputs()[1:4]))


def mlp_inputs():
    return [torch.randn(3, 8), torch.randn(10, 8), torch.randn(10, 8),
            torch.randn(5, 10), torch.randn(10), torch.randn(10), torch.randn(5)]


def replace(args, i, value):
    args = list(args)
    args[i] = value
    return args


MLP_CASES = [
    # index to replace, value, error, words
    (1, torch.randn(10, 9), ValueError, ["w_gate", "in_features"]),
    (2, torch.randn(11, 8), ValueError, ["w_up", "w_gate's shape"]),
    (3, torch.randn(5, 11), ValueError, ["w_down", "hidden"]),
    (3, torch.randn(5), ValueError, ["w_down", "2-D"]),
    (4, torch.randn(9), ValueError, ["b_gate", "length"]),
    (5, torch.randn(10, 1), ValueError, ["b_up", "1-D"]),
    (6, torch.randn(10), ValueError, ["b_down", "out_features = 5"]),
    (2, torch.randn(10, 8).half(), TypeError, ["w_up", "torch.float16"]),
    (6, torch.randn(5).double(), TypeError, ["b_down", "torch.float64"]),
]


@pytest.mark.parametrize("call", range(3))
@pytest.mark.parametrize("case", range(len(MLP_CASES)))
def test_mlp_errors(call, case):
    i, value, error, words = MLP_CASES[case]
    args = replace(mlp_inputs(), i, value) + ["silu"]
    with pytest.raises(error) as e:
        mlp_calls()[call](*args)
    for word in words:
        assert word in str(e.value), (word, str(e.value))
    assert "fusedblas.gated_mlp" in str(e.value)


def test_mlp_activation_and_types():
    args = mlp_inputs()
    with pytest.raises(ValueError, match="unknown activation 'swiglu'"):
        fusedblas.gated_mlp(*args, activation="swiglu")
    with pytest.raises(TypeError, match="w_down must be a tensor"):
        fusedblas.gated_mlp(*replace(args, 3, "w"))
    with pytest.raises(TypeError, match="b_up must be a tensor or None"):
        fusedblas.gated_mlp(*replace(args, 5, 0))
    with pytest.raises(RuntimeError, match="w_gate is on meta"):
        fusedblas.gated_mlp(*replace(args, 1, args[1].to("meta")))


def test_library_status_becomes_fused_blas_error():
    """A failing library call (m = -1 straight through ctypes) turns into
    FusedBlasError with fb_status_string, the position and name of the
    argument, and fb_handle_last_message."""
    lib = L.load()
    h = _handles.cpu_handle(lib)
    a = torch.zeros(4)
    st = lib.cdll.sgemm_bias_act(h.ptr, L.ROW_MAJOR, L.NO_TRANS, L.TRANS, -1,
                                 2, 2, 1.0, a.data_ptr(), 2, a.data_ptr(), 2,
                                 0.0, a.data_ptr(), 2, None, 0)
    assert st == L.STATUS_INVALID_ARGUMENT
    err = lib.error("sgemm_bias_act", st, h.ptr, L.GEMM_ARGUMENTS)
    assert isinstance(err, RuntimeError) and isinstance(err, fusedblas.FusedBlasError)
    assert err.status == 1 and err.status_name == "invalid argument"
    assert err.argument == 5 and err.argument_name == "m"
    assert "m < 0" in err.detail
    assert str(err).startswith("fusedblas: sgemm_bias_act failed: invalid "
                               "argument (argument 5, m): ")


def test_failed_call_raises(monkeypatch):
    """When the library refuses a call made through the op, the op raises
    that FusedBlasError (here the library is handed an ld it must refuse:
    x has padded rows, so its stride analysis runs and is patched)."""
    from fusedblas import _forward
    monkeypatch.setattr(_forward, "_rows", lambda t, rows, cols: (False, 0))
    with pytest.raises(fusedblas.FusedBlasError) as e:
        fusedblas.linear(torch.randn(3, 6)[:, :4], torch.randn(2, 4))
    assert e.value.argument == 10 and "lda" in str(e.value)
    with pytest.raises(RuntimeError, match=r"mlp_geglu_forward failed: invalid "
                       r"argument \(argument 9, ldx"):
        fusedblas.gated_mlp(torch.randn(3, 6)[:, :4], torch.randn(5, 4),
                            torch.randn(5, 4), torch.randn(2, 5))


def test_bad_handle_message_on_default_handle():
    """The default handle's message is what lib.error reads for None."""
    lib = L.load()
    st = lib.cdll.fb_set_threads(ctypes.c_void_p(8), 1)
    assert st == L.STATUS_INVALID_ARGUMENT
    assert "not a live fb_handle" in lib.error("fb_set_threads", st, None).detail
