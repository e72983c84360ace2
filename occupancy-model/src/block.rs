//! [`BlockDim`]: threads per block.

use core::fmt;

/// Threads per block, as the crate launches the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BlockDim {
    /// Threads along x.
    pub x: u32,
    /// Threads along y (1 for a 1-D block).
    pub y: u32,
    /// Threads along z (1 for 1-D and 2-D blocks).
    pub z: u32,
}

impl BlockDim {
    /// A 1-D block of `x` threads.
    #[inline]
    pub const fn linear(x: u32) -> BlockDim {
        BlockDim { x, y: 1, z: 1 }
    }

    /// A block of `x` by `y` by `z` threads (each at least 1, as a launch gives them).
    #[inline]
    pub const fn new(x: u32, y: u32, z: u32) -> BlockDim {
        BlockDim { x, y, z }
    }

    /// Threads in one block: x * y * z.
    #[inline]
    pub const fn threads(self) -> u32 {
        self.x * self.y * self.z
    }

    /// As a tuple `(x, y, z)`, the form launch APIs take.
    #[inline]
    pub const fn as_tuple(self) -> (u32, u32, u32) {
        (self.x, self.y, self.z)
    }
}

impl fmt::Display for BlockDim {
    /// As the attribute writes it: `256`, `(32, 8)`, `(8, 8, 4)`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.y, self.z) {
            (1, 1) => write!(formatter, "{}", self.x),
            (_, 1) => write!(formatter, "({}, {})", self.x, self.y),
            _ => write!(formatter, "({}, {}, {})", self.x, self.y, self.z),
        }
    }
}

/// Blocks per thread-block cluster (`__cluster_dims__`, `cudaLaunchAttributeClusterDimension`),
/// as x, y, z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ClusterDim {
    /// Blocks along x.
    pub x: u32,
    /// Blocks along y (1 for a 1-D cluster).
    pub y: u32,
    /// Blocks along z (1 for 1-D and 2-D clusters).
    pub z: u32,
}

impl ClusterDim {
    /// A cluster of `x` by `y` by `z` blocks.
    #[inline]
    pub const fn new(x: u32, y: u32, z: u32) -> ClusterDim {
        ClusterDim { x, y, z }
    }

    /// Blocks in one cluster: x * y * z (all the driver's cluster occupancy depends on), at
    /// most `u32::MAX`: a cubin's shape of 65536 x 65536 wrapped to 0 blocks (issue #35, class
    /// 10), which no check refuses.
    #[inline]
    pub const fn blocks(self) -> u32 {
        self.x.saturating_mul(self.y).saturating_mul(self.z)
    }
}

impl fmt::Display for ClusterDim {
    /// As the attribute writes it: `2`, `(2, 2)`, `(2, 2, 2)`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        BlockDim::new(self.x, self.y, self.z).fmt(formatter)
    }
}
