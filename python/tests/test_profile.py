# SPDX-License-Identifier: BSD-3-Clause
"""python -m fusedblas.profile runs and prints its table (small sizes,
on the CPU, without torch.compile, to keep the suite short)."""

import io

import torch

from fusedblas import profile


def test_profile_table(capsys):
    assert profile.main(["--device", "cpu", "--no-compile", "--reps", "2",
                         "--mlp-rows", "16", "--linear-rows", "8"]) == 0
    out = capsys.readouterr().out
    assert "fusedblas.profile: CPU, torch.float32" in out
    for line in ("linear+gelu  8x32->64", "geglu-mlp    16x768->3072->768"):
        assert sum(1 for row in out.splitlines() if row.startswith(line)) == 2, out
    assert "cpu/" in out  # the fusedblas rows name the library's path


def test_run_compares_with_eager():
    """Every variant's result is compared with eager's; a wrong one shows."""
    x = torch.ones(4, 3)
    wrong = [("w", "4x3", lambda t: t, lambda t: t + 1, [x])]
    rows = profile.run(wrong, torch.device("cpu"), 2, False, out=io.StringIO())
    assert [r[5] for r in rows] == [0.0, 1.0]
