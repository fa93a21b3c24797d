# SPDX-License-Identifier: BSD-3-Clause
"""Library handles: one per thread and per (device, CUDA stream).

A handle is bound to one stream for its whole life. Binding a used handle
to another stream makes the library order the new stream after the old
one (a wait on an event recorded outside any graph), which is illegal
inside CUDA graph capture, and it would make two streams share the
handle's device workspace. So each (device, stream) pair a thread calls on
gets its own handle, as PyTorch gives each stream its own cuBLAS
workspace. A handle's first call on the GPU creates its CUDA state
(allocations, a memset, an event wait), which cannot be captured: the
first call on a stream must come before a capture on that stream.

A handle used inside a capture is retired at its next call outside one:
the captured graphs keep the addresses of its device buffers, which the
library frees and reallocates when a later call needs them larger, and
its "done" event was last recorded in a capture, which the library's
host-side waits refuse. A handle used in a capture is kept (never
destroyed, even when its thread ends) for as long as the process lives,
and after the capture the stream gets a fresh one.

Other handles are destroyed with their thread's ``threading.local``
storage.
"""

import ctypes
import threading

import torch

from . import _library as L

_local = threading.local()

try:
    _raw_stream = torch._C._cuda_getCurrentRawStream
except AttributeError:  # a CPU-only build of PyTorch
    _raw_stream = None
_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing",
                     torch.cuda.is_current_stream_capturing)

_retired = []  # handles captured graphs may still use
_retired_lock = threading.Lock()


def _tf32_allowed():
    return bool(torch.backends.cuda.matmul.allow_tf32)


class Handle:
    """An fb_handle set up for one device (and stream)."""

    __slots__ = ("ptr", "cdll", "warm", "captured", "threads", "math",
                 "__weakref__")

    def __init__(self, lib, device_index, stream):
        self.cdll = None
        self.warm = False  # a call has succeeded on it
        self.captured = False  # it has been called inside a graph capture
        self.threads = None
        self.math = L.MATH_DEFAULT
        cdll = lib.cdll
        h = ctypes.c_void_p()
        st = cdll.fb_create(ctypes.byref(h))
        if st != L.STATUS_SUCCESS:
            raise lib.error("fb_create", st, None)
        self.ptr = h.value
        self.cdll = cdll
        if device_index < 0:
            self._check(lib, "fb_set_backend",
                        cdll.fb_set_backend(self.ptr, L.BACKEND_CPU))
            return
        # A CUDA backend named in FUSEDBLAS_BACKEND is kept; anything else
        # (auto, cpu) becomes "cuda": device tensors never go to the CPU.
        chosen = ctypes.c_int(L.BACKEND_AUTO)
        self._check(lib, "fb_get_backend",
                    cdll.fb_get_backend(self.ptr, ctypes.byref(chosen)))
        if chosen.value not in L.CUDA_BACKENDS:
            self._check(lib, "fb_set_backend",
                        cdll.fb_set_backend(self.ptr, L.BACKEND_CUDA))
        self._check(lib, "fb_set_cuda_device",
                    cdll.fb_set_cuda_device(self.ptr, device_index))
        self._check(lib, "fb_set_cuda_stream",
                    cdll.fb_set_cuda_stream(self.ptr, stream))

    def _check(self, lib, routine, st):
        if st != L.STATUS_SUCCESS:
            raise lib.error(routine, st, self.ptr)

    def set_threads(self, n):
        self.cdll.fb_set_threads(self.ptr, n)
        self.threads = n

    def set_math(self, mode):
        self.cdll.fb_set_math_mode(self.ptr, mode)
        self.math = mode

    def __del__(self):
        cdll, self.cdll = self.cdll, None
        if cdll is not None:
            try:
                cdll.fb_destroy(self.ptr)
            except Exception:  # interpreter shutdown: ctypes may be gone
                pass


def _handles():
    try:
        return _local.handles
    except AttributeError:
        _local.handles = {}
        return _local.handles


def cpu_handle(lib):
    """The calling thread's CPU handle, its thread count PyTorch's."""
    table = _handles()
    h = table.get(-1)
    if h is None:
        h = table[-1] = Handle(lib, -1, None)
    n = torch.get_num_threads()
    if h.threads != n:
        h.set_threads(n)
    _local.last = h
    return h


def cuda_handle(lib, device_index, fp32):
    """The calling thread's handle for PyTorch's current stream on
    device_index, its math mode following PyTorch's TF32 switch for
    fp32 matmuls."""
    stream = _raw_stream(device_index) if _raw_stream is not None else \
        torch.cuda.current_stream(device_index).cuda_stream
    try:
        table = _local.handles
    except AttributeError:
        table = _handles()
    key = (device_index, stream)
    h = table.get(key)
    capturing = _capturing()
    if h is None or not h.warm or h.captured != capturing:
        if capturing:
            if h is None or not h.warm:
                raise RuntimeError(
                    f"fusedblas: first call on CUDA stream 0x{stream:x} "
                    f"(device {device_index}) inside CUDA graph capture; the "
                    "library sets up a stream's state (allocations, "
                    "synchronisation) on its first call, which cannot be "
                    "captured. Run the same calls once on that stream before "
                    "capturing: under torch.cuda.stream(s), then "
                    "torch.cuda.graph(g, stream=s)")
            h.captured = True
            with _retired_lock:  # alive as long as the graphs may be
                _retired.append(h)
        else:
            if h is not None and h.captured:
                h = None  # kept in _retired
            if h is None:
                h = table[key] = Handle(lib, device_index, stream)
    if fp32:
        mode = L.MATH_ALLOW_TF32 if _tf32_allowed() else L.MATH_DEFAULT
        if h.math != mode:
            h.set_math(mode)
    _local.last = h
    return h


def last_handle():
    """The handle of this thread's last call, or None."""
    return getattr(_local, "last", None)
