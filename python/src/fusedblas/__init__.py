# SPDX-License-Identifier: BSD-3-Clause
"""fusedblas for PyTorch: nn.Linear + activation and the gated MLP of modern
transformers as single libfusedblas calls, on CPU and CUDA tensors.

    import torch, fusedblas
    y = fusedblas.linear(x, weight, bias, activation="gelu_tanh")
    y = fusedblas.gated_mlp(x, w_gate, w_up, w_down, activation="silu")
    fusedblas.patch(model)          # Llama-style MLPs -> fusedblas.nn.GatedMLP

The ops are torch.ops.fusedblas.linear and torch.ops.fusedblas.gated_mlp
(torch.compile traces them as single nodes). The library is found through
FUSEDBLAS_LIBRARY, pkg-config or the system's search, on first use.
"""

from ._version import __version__
from ._library import FusedBlasError, LibraryError
from ._checks import ACTIVATIONS
from .ops import gated_mlp, linear
from . import nn, reference
from .patching import patch

ACTIVATIONS = tuple(ACTIVATIONS)


def library():
    """(path, version) of the libfusedblas in use, loading it if needed
    (LibraryError if it cannot be found or has another major.minor)."""
    from . import _library
    lib = _library.load()
    return lib.path, lib.version


def last_path():
    """What ran this thread's last call, in the library's words (e.g.
    "cpu/openblas-openmp" or "cuda-lt/epilogue=GELU_BIAS"); "" if none."""
    from . import _handles, _library
    h = _handles.last_handle()
    return "" if h is None else _library.load().last_path(h.ptr)


__all__ = ["ACTIVATIONS", "FusedBlasError", "LibraryError", "__version__",
           "gated_mlp", "last_path", "library", "linear", "nn", "patch",
           "reference"]
