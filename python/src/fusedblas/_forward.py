# SPDX-License-Identifier: BSD-3-Clause
"""The ops' forward passes on real tensors: one libfusedblas call each.

Strides: x is passed with its row stride when its rows are contiguous
(a padded row stride included), or as a transposed operand when its
columns are (linear only); the linear weight likewise, as [n, k] rows or
as its transpose. The MLP's weights and every bias are passed as
contiguous arrays, copied only when they are not. The output is a fresh
contiguous tensor from PyTorch's allocator, never allocated by the
library. CUDA calls run on PyTorch's current stream of x's device and
never synchronise the host.
"""

import torch

from . import _handles
from . import _library as L
from ._checks import ACTIVATIONS, DTYPES, check_gated_mlp, check_linear
from .reference import rows

_GEMM = {torch.float32: "sgemm_bias_act", torch.float16: "hgemm_bias_act",
         torch.bfloat16: "bgemm_bias_act"}


def _rows(t, rows, cols):
    """(transposed, ld) to pass the 2-D t [rows, cols] as it is, or None:
    (False, ld) when its rows are contiguous, ld >= cols apart; (True, ld)
    when its columns are, ld >= rows apart."""
    s0, s1 = t.stride()
    if (s1 == 1 or cols <= 1) and (rows <= 1 or s0 >= max(1, cols)):
        return False, s0 if rows > 1 else max(1, cols)
    if (s0 == 1 or rows <= 1) and (cols <= 1 or s1 >= max(1, rows)):
        return True, s1 if cols > 1 else max(1, rows)
    return None


def _handle(lib, x):
    dev = x.get_device()
    if dev < 0:
        return _handles.cpu_handle(lib)
    return _handles.cuda_handle(lib, dev, x.dtype == torch.float32)


def _ptr(t):
    return None if t is None else t.data_ptr()


def _fail(lib, h, routine, names, status):
    err = lib.error(routine, status, h.ptr, names)
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        err.args = (err.args[0] + " (during CUDA graph capture: run this call "
                    "once on the capture stream before capturing, so that the "
                    "library's buffers are sized)",)
    raise err


def _same(dtype, device, t):
    """t is None, or has this dtype and device."""
    return t is None or (t.dtype == dtype and t.device == device)


def _act(activation):
    return ACTIVATIONS.get(activation) if type(activation) is str else None


def linear(x, weight, bias, activation):
    """act(x @ weight.T + bias) through (s|h|b)gemm_bias_act."""
    act = _act(activation)
    dt, dev = x.dtype, x.device
    # The common case checked in a few tests; anything else gets the full
    # checks, which raise the error that names the argument.
    if act is None or dt not in DTYPES or x.dim() < 1 or \
            weight.dim() != 2 or weight.shape[1] != x.shape[-1] or \
            not (_same(dt, dev, weight) and _same(dt, dev, bias)) or \
            (bias is not None and (bias.dim() != 1 or
                                   bias.shape[0] != weight.shape[0])):
        act = check_linear(x, weight, bias, activation)
    lib = L.load()
    n, k = weight.shape
    if x.dim() == 2:
        x2 = x
        out = x.new_empty((x.shape[0], n))
    else:
        x2 = rows(x)
        out = x.new_empty(x.shape[:-1] + (n,))
    m = x2.shape[0]
    if m == 0 or n == 0:
        return out
    xa = _rows(x2, m, k)
    if xa is None:
        x2 = x2.contiguous()
        xa = (False, max(1, k))
    wa = _rows(weight, n, k)
    if wa is None:
        weight = weight.contiguous()
        wa = (False, max(1, k))
    if bias is not None and n > 1 and bias.stride(0) != 1:
        bias = bias.contiguous()
    h = _handle(lib, x)
    # Row-major C = op(A) op(B) with A = x [m, k] and op(B) = weight^T:
    # weight stored [n, k] row by row is B transposed (TRANS); stored
    # column by column it is B [k, n] itself (NO_TRANS).
    st = lib.gemm[dt](
        h.ptr, L.ROW_MAJOR, L.TRANS if xa[0] else L.NO_TRANS,
        L.NO_TRANS if wa[0] else L.TRANS, m, n, k, 1.0, x2.data_ptr(), xa[1],
        weight.data_ptr(), wa[1], 0.0, out.data_ptr(), max(1, n),
        None if bias is None else bias.data_ptr(), act)
    if st:
        _fail(lib, h, _GEMM[dt], L.GEMM_ARGUMENTS, st)
    h.warm = True
    return out


def _contiguous(t):
    return t if t is None or t.is_contiguous() else t.contiguous()


def gated_mlp(x, w_gate, w_up, w_down, b_gate, b_up, b_down, activation):
    """down(act(gate(x)) * up(x)) through mlp_geglu_forward."""
    act = _act(activation)
    dt, dev = x.dtype, x.device
    if act is None or dt not in DTYPES or x.dim() < 1 or \
            w_gate.dim() != 2 or w_down.dim() != 2 or \
            w_gate.shape[1] != x.shape[-1] or w_up.shape != w_gate.shape or \
            w_down.shape[1] != w_gate.shape[0] or \
            not (_same(dt, dev, w_gate) and _same(dt, dev, w_up) and
                 _same(dt, dev, w_down) and _same(dt, dev, b_gate) and
                 _same(dt, dev, b_up) and _same(dt, dev, b_down)) or \
            (b_gate is not None and tuple(b_gate.shape) != (w_gate.shape[0],)) or \
            (b_up is not None and tuple(b_up.shape) != (w_gate.shape[0],)) or \
            (b_down is not None and tuple(b_down.shape) != (w_down.shape[0],)):
        act = check_gated_mlp(x, w_gate, w_up, w_down, b_gate, b_up, b_down,
                              activation)
    lib = L.load()
    k = x.shape[-1]
    hid = w_gate.shape[0]
    n = w_down.shape[0]
    if x.dim() == 2:
        x2 = x
        out = x.new_empty((x.shape[0], n))
    else:
        x2 = rows(x)
        out = x.new_empty(x.shape[:-1] + (n,))
    m = x2.shape[0]
    if m == 0 or n == 0:
        return out
    xa = _rows(x2, m, k)
    if xa is None or xa[0]:
        x2 = x2.contiguous()
        xa = (False, max(1, k))
    w_gate, w_up, w_down = (_contiguous(w_gate), _contiguous(w_up),
                            _contiguous(w_down))
    b_gate, b_up, b_down = (_contiguous(b_gate), _contiguous(b_up),
                            _contiguous(b_down))
    h = _handle(lib, x)
    st = lib.cdll.mlp_geglu_forward(
        h.ptr, DTYPES[dt], act, m, k, hid, n, x2.data_ptr(), xa[1],
        w_gate.data_ptr(), _ptr(b_gate), w_up.data_ptr(), _ptr(b_up),
        w_down.data_ptr(), _ptr(b_down), out.data_ptr(), max(1, n))
    if st:
        _fail(lib, h, "mlp_geglu_forward", L.MLP_ARGUMENTS, st)
    h.warm = True
    return out
