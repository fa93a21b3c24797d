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


def _ptr(t):
    return None if t is None else t.data_ptr()


def _fail(lib, h, routine, names, status):
    err = lib.error(routine, status, h.ptr, names)
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        err.args = (err.args[0] + " (during CUDA graph capture: run this call "
                    "once on the capture stream before capturing, so that the "
                    "library's buffers are sized)",)
    raise err


def _on(t, cuda, cpu, index):
    """t is on the device described by (is_cuda, is_cpu, get_device()): the
    same test as t.device == x.device, without building device objects."""
    return t.is_cuda is cuda and t.is_cpu is cpu and t.get_device() == index


def _bias_fits(t, n, dtype, cuda, cpu, index):
    """t is a vector of n elements of this dtype, on the device _on
    describes."""
    return t.dtype is dtype and _on(t, cuda, cpu, index) and t.shape == (n,)


def _act(activation):
    return ACTIVATIONS.get(activation) if type(activation) is str else None


def linear(x, weight, bias, activation):
    """act(x @ weight.T + bias) through (s|h|b)gemm_bias_act."""
    act = _act(activation)
    dt = x.dtype
    cuda, cpu, di = x.is_cuda, x.is_cpu, x.get_device()
    xs, ws = x.shape, weight.shape
    # The common case checked in a few tests; anything else gets the full
    # checks, which raise the error that names the argument.
    if act is None or dt not in DTYPES or len(xs) < 1 or len(ws) != 2 or \
            ws[1] != xs[-1] or weight.dtype is not dt or \
            not _on(weight, cuda, cpu, di) or \
            (bias is not None and (bias.dtype is not dt or
                                   not _on(bias, cuda, cpu, di) or
                                   bias.shape != (ws[0],))):
        act = check_linear(x, weight, bias, activation)
    lib = L.load()
    n, k = ws
    if len(xs) == 2:
        x2 = x
        out = x.new_empty((xs[0], n))
    else:
        x2 = rows(x)
        out = x.new_empty(x.shape[:-1] + (n,))
    m = x2.shape[0]
    if m == 0 or n == 0:
        return out
    # Contiguous operands, the common case, skip the stride analysis.
    ld = max(1, k)
    xa = (False, ld) if x2.is_contiguous() else _rows(x2, m, k)
    if xa is None:
        x2 = x2.contiguous()
        xa = (False, ld)
    wa = (False, ld) if weight.is_contiguous() else _rows(weight, n, k)
    if wa is None:
        weight = weight.contiguous()
        wa = (False, ld)
    if bias is not None and not bias.is_contiguous():
        bias = bias.contiguous()
    h = _handles.cpu_handle(lib) if di < 0 else \
        _handles.cuda_handle(lib, di, dt is torch.float32)
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
    dt = x.dtype
    cuda, cpu, di = x.is_cuda, x.is_cpu, x.get_device()
    xs, gs, ds = x.shape, w_gate.shape, w_down.shape
    # The common case, written out (seven tensors: a loop or a helper per
    # tensor costs more than the call's other Python work); anything else
    # gets the full checks, which raise the error that names the argument.
    if act is None or dt not in DTYPES or len(xs) < 1 or len(gs) != 2 or \
            len(ds) != 2 or gs[1] != xs[-1] or w_up.shape != gs or \
            ds[1] != gs[0] or w_gate.dtype is not dt or \
            w_up.dtype is not dt or w_down.dtype is not dt or \
            not (_on(w_gate, cuda, cpu, di) and _on(w_up, cuda, cpu, di) and
                 _on(w_down, cuda, cpu, di)) or \
            (b_gate is not None and not _bias_fits(b_gate, gs[0], dt, cuda, cpu, di)) or \
            (b_up is not None and not _bias_fits(b_up, gs[0], dt, cuda, cpu, di)) or \
            (b_down is not None and not _bias_fits(b_down, ds[0], dt, cuda, cpu, di)):
        act = check_gated_mlp(x, w_gate, w_up, w_down, b_gate, b_up, b_down,
                              activation)
    lib = L.load()
    k = xs[-1]
    hid = gs[0]
    n = ds[0]
    if len(xs) == 2:
        x2 = x
        out = x.new_empty((xs[0], n))
    else:
        x2 = rows(x)
        out = x.new_empty(x.shape[:-1] + (n,))
    m = x2.shape[0]
    if m == 0 or n == 0:
        return out
    xa = (False, max(1, k)) if x2.is_contiguous() else _rows(x2, m, k)
    if xa is None or xa[0]:
        x2 = x2.contiguous()
        xa = (False, max(1, k))
    if not (w_gate.is_contiguous() and w_up.is_contiguous() and
            w_down.is_contiguous()):
        w_gate, w_up, w_down = (w_gate.contiguous(), w_up.contiguous(),
                                w_down.contiguous())
    if b_gate is not None or b_up is not None or b_down is not None:
        b_gate, b_up, b_down = (_contiguous(b_gate), _contiguous(b_up),
                                _contiguous(b_down))
    h = _handles.cpu_handle(lib) if di < 0 else \
        _handles.cuda_handle(lib, di, dt is torch.float32)
    st = lib.cdll.mlp_geglu_forward(
        h.ptr, DTYPES[dt], act, m, k, hid, n, x2.data_ptr(), xa[1],
        w_gate.data_ptr(), _ptr(b_gate), w_up.data_ptr(), _ptr(b_up),
        w_down.data_ptr(), _ptr(b_down), out.data_ptr(), max(1, n))
    if st:
        _fail(lib, h, "mlp_geglu_forward", L.MLP_ARGUMENTS, st)
    h.warm = True
    return out
