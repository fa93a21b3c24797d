# SPDX-License-Identifier: BSD-3-Clause
"""Shared fixtures: the devices to run on, seeded random inputs.

The library comes from FUSEDBLAS_LIBRARY (set it to a build's
.libs/libfusedblas.so), pkg-config or the system's search. CUDA cases run
where torch.cuda.is_available(), and skip elsewhere.
"""

import math

import pytest
import torch

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(),
                               reason="no CUDA device")


def pytest_report_header(config):
    try:
        import fusedblas
        path, version = fusedblas.library()
        lib = f"libfusedblas {version} at {path}"
    except Exception as e:  # reported, and the tests then fail on it
        lib = f"libfusedblas not loaded: {e}"
    return [f"torch {torch.__version__}, CUDA available: "
            f"{torch.cuda.is_available()}", lib]


class Inputs:
    """Uniform random tensors from one seeded generator: values drawn in
    float64 on the CPU, rounded to dtype, then moved to the device, so a
    test sees the same numbers on every device."""

    def __init__(self, seed, dtype, device):
        self.seed = seed
        self.gen = torch.Generator().manual_seed(seed)
        self.dtype = dtype
        self.device = device

    def uniform(self, *shape, scale=1.0):
        t = (torch.rand(shape, generator=self.gen, dtype=torch.float64) * 2 - 1)
        return (t * scale).to(self.dtype).to(self.device)

    def weight(self, out_features, in_features):
        """nn.Linear-sized weights: variance 1 / in_features."""
        return self.uniform(out_features, in_features,
                            scale=math.sqrt(3.0 / max(1, in_features)))


@pytest.fixture(autouse=True, scope="session")
def pytorch_rounds_once():
    """PyTorch's own 16-bit CUDA matmuls (checked beside ours against the
    same bounds in places) accumulate in fp32 only with reduced-precision
    reductions off; the library's results do not depend on this."""
    m = torch.backends.cuda.matmul
    old = (m.allow_bf16_reduced_precision_reduction,
           m.allow_fp16_reduced_precision_reduction)
    m.allow_bf16_reduced_precision_reduction = False
    m.allow_fp16_reduced_precision_reduction = False
    yield
    (m.allow_bf16_reduced_precision_reduction,
     m.allow_fp16_reduced_precision_reduction) = old


@pytest.fixture
def inputs(request):
    def make(dtype=torch.float32, device="cpu", seed=None):
        if seed is None:
            seed = abs(hash(request.node.nodeid)) % (2 ** 31)
        print(f"seed {seed}")
        return Inputs(seed, dtype, device)
    return make
