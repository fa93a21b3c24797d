#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# gpu_check.sh -- the fusedblas Python package on a GPU machine, in one run:
# install it (no network), run its pytest suite (CUDA tests included), run
# python -m fusedblas.profile, and measure issue 22's goals (gpu_goals.py),
# whose table is printed last.
#
#     FUSEDBLAS_LIBRARY=/path/to/.libs/libfusedblas.so bash python/gpu_check.sh
#
# FUSEDBLAS_LIBRARY (required): the libfusedblas.so to test. When it is a
# build tree's .libs/libfusedblas.so, the CUDA module of that tree
# (lib/cuda/.libs/fusedblas_cuda.so) is used unless FUSEDBLAS_CUDA_MODULE
# says otherwise. PYTHON: the interpreter (python3), which must have
# PyTorch with CUDA; pytest too, or its wheels in $FUSEDBLAS_WHEELS
# (default: .carry/wheels in the repository; made where there is network by
# `pip download -d .carry/wheels pytest`). Logs go to $OUT (or
# /tmp/fusedblas-python).
# Each phase has a time limit (150 s, 90 s, 150 s).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
PY=${PYTHON:-python3}
out=${OUT:-/tmp/fusedblas-python}
mkdir -p "$out"
start=$(date +%s)
say() { printf 'gpu_check: %s (%ss)\n' "$*" "$(( $(date +%s) - start ))"; }

if [ -z "${FUSEDBLAS_LIBRARY:-}" ] || [ ! -e "$FUSEDBLAS_LIBRARY" ]; then
    echo "gpu_check: set FUSEDBLAS_LIBRARY to the libfusedblas.so to test" \
         "(now '${FUSEDBLAS_LIBRARY:-}')"
    exit 2
fi
FUSEDBLAS_LIBRARY=$(readlink -f "$FUSEDBLAS_LIBRARY")
export FUSEDBLAS_LIBRARY
if [ -z "${FUSEDBLAS_CUDA_MODULE:-}" ]; then
    module=$(dirname "$FUSEDBLAS_LIBRARY")/../lib/cuda/.libs/fusedblas_cuda.so
    if [ -f "$module" ]; then
        FUSEDBLAS_CUDA_MODULE=$(readlink -f "$module")
        export FUSEDBLAS_CUDA_MODULE
    fi
fi
# The module needs libcublasLt and libcudart: PyTorch has loaded its own by
# then; the toolkit's are a fallback.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"

# ---- install ---------------------------------------------------------------
site=$(mktemp -d /tmp/fusedblas-site.XXXXXX)
if "$PY" -m pip install --no-deps --no-build-isolation --no-index -q \
        --target "$site" . >"$out/pip.log" 2>&1; then
    how="pip install --no-deps --no-build-isolation --target $site"
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
else
    how="PYTHONPATH=$here/src (pip install failed, see $out/pip.log)"
    export PYTHONPATH="$here/src${PYTHONPATH:+:$PYTHONPATH}"
fi
rm -rf "$here/build" "$here"/src/*.egg-info
say "package: $how"
if ! "$PY" -c "import pytest" 2>/dev/null; then
    wheels=${FUSEDBLAS_WHEELS:-$here/../.carry/wheels}
    if "$PY" -m pip install --no-index --find-links "$wheels" -q --target "$site" \
            pytest >>"$out/pip.log" 2>&1; then
        export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
        say "pytest installed from $wheels"
    else
        say "no pytest, and none in $wheels: the tests cannot run (see pip.log)"
    fi
fi
"$PY" - <<'EOF' 2>&1 | tee "$out/setup.txt"
import os, torch, fusedblas
from fusedblas import _library as L
lib = L.load()
st = lib.cdll.fb_backend_available(L.BACKEND_CUDA)
print(f"fusedblas {fusedblas.__version__} from {os.path.dirname(fusedblas.__file__)}")
print(f"libfusedblas {lib.version} at {lib.path}")
print(f"CUDA module {os.environ.get('FUSEDBLAS_CUDA_MODULE', '(installed one)')}: "
      f"{lib.status_string(st)}")
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
      f"{torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU'}")
EOF

# ---- tests -----------------------------------------------------------------
say "pytest (limit 150 s)"
timeout 150 "$PY" -m pytest -q -rs -p no:cacheprovider tests \
    >"$out/pytest.log" 2>&1
pytest_rc=$?
grep -E '^(FAILED|ERROR|SKIPPED)' "$out/pytest.log" | head -40
pytest_line=$(tail -n 1 "$out/pytest.log")
say "pytest exit $pytest_rc: $pytest_line"

# ---- the seed experiment ---------------------------------------------------------
say "python -m fusedblas.profile (limit 90 s)"
timeout 90 "$PY" -m fusedblas.profile >"$out/profile.txt" 2>"$out/profile.log"
profile_rc=$?
cat "$out/profile.txt"
[ $profile_rc -eq 0 ] || tail -n 20 "$out/profile.log"

# ---- the goals ---------------------------------------------------------------
say "gpu_goals.py (limit 150 s)"
timeout 150 "$PY" gpu_goals.py >"$out/goals.txt" 2>"$out/goals.log"
goals_rc=$?
cat "$out/goals.log"
[ $goals_rc -eq 0 ] || [ $goals_rc -eq 1 ] || tail -n 30 "$out/goals.log"

echo
echo "===== fusedblas Python package on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1) ($(( $(date +%s) - start )) s) ====="
cat "$out/setup.txt"
echo "pytest (exit $pytest_rc): $pytest_line"
echo "profile: exit $profile_rc (table above, $out/profile.txt)"
cat "$out/goals.txt"
echo "gpu_goals.py: exit $goals_rc (0 all goals met, 1 some not, other: failed)"
[ $pytest_rc -eq 0 ] && [ $profile_rc -eq 0 ] && [ $goals_rc -eq 0 ]
