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
from ._checks import DTYPES, check_gated_mlp, check_linear

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


def _run(lib, h, routine, names, status):
    if status != L.STATUS_SUCCESS:
        err = lib.error(routine, status, h.ptr, names)
        if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
            err.args = (err.args[0] + " (during CUDA graph capture: run this "
                        "call once on the capture stream before capturing, "
                        "so that the library's buffers are sized)",)
        raise err
    h.warm = True


def linear(x, weight, bias, activation):
    """act(x @ weight.T + bias) through (s|h|b)gemm_bias_act."""
    act = check_linear(x, weight, bias, activation)
    lib = L.load()
    n, k = weight.shape
    lead = x.shape[:-1]
    out = torch.empty(lead + (n,), dtype=x.dtype, device=x.device)
    x2 = x if x.dim() == 2 else x.reshape(-1, k)
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
    transa = L.TRANS if xa[0] else L.NO_TRANS
    transb = L.NO_TRANS if wa[0] else L.TRANS
    routine = _GEMM[x.dtype]
    st = getattr(lib.cdll, routine)(
        h.ptr, L.ROW_MAJOR, transa, transb, m, n, k, 1.0, x2.data_ptr(), xa[1],
        weight.data_ptr(), wa[1], 0.0, out.data_ptr(), max(1, n), _ptr(bias),
        act)
    _run(lib, h, routine, L.GEMM_ARGUMENTS, st)
    return out


def _contiguous(t):
    return t if t is None or t.is_contiguous() else t.contiguous()


def gated_mlp(x, w_gate, w_up, w_down, b_gate, b_up, b_down, activation):
    """down(act(gate(x)) * up(x)) through mlp_geglu_forward."""
    act = check_gated_mlp(x, w_gate, w_up, w_down, b_gate, b_up, b_down,
                          activation)
    lib = L.load()
    k = x.shape[-1]
    hid = w_gate.shape[0]
    n = w_down.shape[0]
    lead = x.shape[:-1]
    out = torch.empty(lead + (n,), dtype=x.dtype, device=x.device)
    x2 = x if x.dim() == 2 else x.reshape(-1, k)
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
        h.ptr, DTYPES[x.dtype], act, m, k, hid, n, x2.data_ptr(), xa[1],
        w_gate.data_ptr(), _ptr(b_gate), w_up.data_ptr(), _ptr(b_up),
        w_down.data_ptr(), _ptr(b_down), out.data_ptr(), max(1, n))
    _run(lib, h, "mlp_geglu_forward", L.MLP_ARGUMENTS, st)
    return out
