# A CUDA Tile program: each block adds one 256-element tile of `a` and `b` into `c`.
#
#   python tile_add.py OUT.tilebc ARCH [BYTECODE_VERSION]
#
# writes the kernel as CUDA Tile IR bytecode, the input `tileiras` takes (it reads no textual IR),
# through cuTile Python's ahead-of-time export (`cuda.tile.compilation.export_kernel`, no GPU
# needed). Bytecode 13.2 (the default, for the tileiras 13.2 scripts/setup-cuda.sh installs) is
# made for one ARCH; `tileiras --gpu-name ARCH -o OUT.cubin OUT.tilebc` then compiles it.
# cargo-occupancy/tests/cli_check_tileiras.rs checks the cubin's kernel, `tile_add`.
import sys

import cuda.tile as ct
from cuda.tile.compilation import (ArrayConstraint, CallingConvention, KernelSignature,
                                   export_kernel)

TILE = 256


@ct.kernel
def tile_add(a, b, c):
    block = ct.bid(0)
    x = ct.load(a, index=(block,), shape=(TILE,))
    y = ct.load(b, index=(block,), shape=(TILE,))
    ct.store(c, index=(block,), tile=x + y)


def main(output, arch, bytecode_version="13.2"):
    vector = ArrayConstraint(ct.float32, 1, index_dtype=ct.int32, stride_lower_bound_incl=0,
                             alias_groups=(), may_alias_internally=False)
    signature = KernelSignature([vector, vector, vector], CallingConvention.cutile_python_v1(),
                                symbol="tile_add")
    export_kernel(tile_add, [signature], output, gpu_code=arch,
                  output_format="tileir_bytecode", bytecode_version=bytecode_version)


if __name__ == "__main__":
    main(*sys.argv[1:])
