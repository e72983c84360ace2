#!/usr/bin/env bash
# Rebuilds the fuzz corpus from k.cu: a cubin, a fatbin (a cubin and PTX), a host object, a
# static library of it and a wheel holding the library. Run from this directory with nvcc on PATH
# (source <(scripts/setup-cuda.sh --env)).
set -euo pipefail
nvcc -cubin -arch=sm_90 -maxrregcount=32 -o k.sm_90.cubin k.cu
nvcc -fatbin -gencode arch=compute_90,code=[sm_90,compute_90] -o k.fatbin k.cu
nvcc -c -gencode arch=compute_90,code=sm_90 -o k.o k.cu
rm -f libk.a && ar rcs libk.a k.o
python3 - <<'PY'
import zipfile
with zipfile.ZipFile('k-1.0-py3-none-linux_x86_64.whl', 'w', zipfile.ZIP_DEFLATED) as w:
    w.write('libk.a', 'k/lib/libk.a')
    w.write('k.fatbin', 'k/lib/k.fatbin')
    w.writestr('k/__init__.py', '')
PY
