//! The attribute lists of a cubin's `.nv.info` sections (and `.nv.compat`): what ptxas decided
//! about each function, stored as `(format, attribute, value)` records. The module-wide
//! `.nv.info` keys its records by function symbol (`EIATTR_REGCOUNT`, `EIATTR_FRAME_SIZE`,
//! `EIATTR_MIN_STACK_SIZE`); a kernel's own `.nv.info.<kernel>` holds its launch bounds, barrier
//! count, cluster shape and the offsets of its spill and refill instructions.
//!
//! A record is a format byte, an attribute byte and a 16-bit field: the value itself for
//! `EIFMT_HVAL` and `EIFMT_BVAL`, nothing for `EIFMT_NVAL`, and the size of the value that
//! follows for `EIFMT_SVAL`. The attribute numbers are those `cuobjdump -elf` names (CUDA 12.9
//! and 13.0, checked by the tests of `resources.rs` against cubins compiled in the test).

/// `EIFMT_NVAL`: no value.
const FORMAT_NONE: u8 = 1;
/// `EIFMT_BVAL`: a byte value in the 16-bit field.
const FORMAT_BYTE: u8 = 2;
/// `EIFMT_HVAL`: a 16-bit value.
const FORMAT_HALF: u8 = 3;
/// `EIFMT_SVAL`: a sized value after the record's head.
const FORMAT_SIZED: u8 = 4;

/// Attribute numbers this reader uses.
pub mod attribute {
    /// `EIATTR_MAX_THREADS`: `__launch_bounds__`'s maximum, as x, y, z.
    pub const MAX_THREADS: u8 = 0x05;
    /// `EIATTR_REQNTID`: `.reqntid` x, y, z.
    pub const REQUIRED_THREADS: u8 = 0x10;
    /// `EIATTR_FRAME_SIZE`: (function symbol, bytes).
    pub const FRAME_SIZE: u8 = 0x11;
    /// `EIATTR_MIN_STACK_SIZE`: (function symbol, bytes): the stack with every callee's.
    pub const MIN_STACK_SIZE: u8 = 0x12;
    /// `EIATTR_MAXREG_COUNT`: the register cap ptxas compiled under (255: none).
    pub const MAX_REGISTER_COUNT: u8 = 0x1b;
    /// `EIATTR_REGCOUNT`: (function symbol, registers).
    pub const REGISTER_COUNT: u8 = 0x2f;
    /// `EIATTR_CTA_PER_CLUSTER`: `__cluster_dims__` x, y, z.
    pub const BLOCKS_PER_CLUSTER: u8 = 0x3d;
    /// `EIATTR_MAX_CLUSTER_RANK`: `.maxclusterrank`.
    pub const MAX_CLUSTER_RANK: u8 = 0x3f;
    /// `EIATTR_SHARED_SCRATCH`: (start offset, bytes) of the shared memory ptxas spills
    /// registers to (`enable_smem_spilling`, CUDA 13), within the kernel's `.nv.shared`.
    pub const SHARED_SCRATCH: u8 = 0x32;
    /// `EIATTR_NUM_BARRIERS`: named barriers the kernel uses.
    pub const BARRIER_COUNT: u8 = 0x4c;
    /// `EIATTR_ANNOTATIONS`: (kind, instruction offset) pairs; kind 1 is `SpillRefill`.
    pub const ANNOTATIONS: u8 = 0x55;
    /// `EIATTR_REG_RECONFIG` (no value): the kernel's code has `setmaxnreg` (`USETMAXREG`).
    pub const REGISTER_RECONFIGURATION: u8 = 0x54;
    /// `EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET` of `.nv.compat`: 1 for `sm_90a`-style code.
    pub const COMPAT_ACCELERATOR_TARGET: u8 = 0x09;
}

/// The `SpillRefill` kind of an `EIATTR_ANNOTATIONS` pair.
pub const ANNOTATION_SPILL_REFILL: u32 = 1;

/// One record's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    None,
    Number(u16),
    Sized(&'a [u8]),
}

impl<'a> Value<'a> {
    /// The 32-bit little-endian words of a sized value (a trailing partial word is ignored).
    pub fn words(self) -> impl Iterator<Item = u32> + 'a {
        let bytes = match self {
            Value::Sized(bytes) => bytes,
            _ => &[],
        };
        bytes
            .chunks_exact(4)
            .map(|word| u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
    }

    /// A byte or 16-bit value.
    pub fn number(self) -> Option<u16> {
        match self {
            Value::Number(value) => Some(value),
            _ => None,
        }
    }
}

/// The records of one section, in order; `None` for a record cut off or of an unknown format
/// (the caller then knows the section cannot be read, rather than reading half of it).
pub fn records(section: &[u8]) -> Option<Vec<(u8, Value<'_>)>> {
    let mut found = Vec::new();
    let mut at = 0usize;
    while at < section.len() {
        let head = section.get(at..at.checked_add(4)?)?;
        let (format, attribute) = (head[0], head[1]);
        let field = u16::from_le_bytes([head[2], head[3]]);
        at += 4;
        let value = match format {
            FORMAT_NONE => Value::None,
            FORMAT_BYTE | FORMAT_HALF => Value::Number(field),
            FORMAT_SIZED => {
                let end = at.checked_add(usize::from(field))?;
                let value = Value::Sized(section.get(at..end)?);
                at = end;
                value
            }
            _ => return None,
        };
        found.push((attribute, value));
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_every_format_are_read_and_a_cut_record_is_refused() {
        let bytes = [
            0x04, 0x2f, 0x08, 0x00, 0x15, 0, 0, 0, 0x40, 0, 0, 0, // REGCOUNT (0x15, 64)
            0x03, 0x1b, 0xff, 0x00, // MAXREG_COUNT 255
            0x02, 0x4c, 0x01, 0x00, // NUM_BARRIERS 1
            0x01, 0x3e, 0x00, 0x00, // EXPLICIT_CLUSTER
        ];
        let found = records(&bytes).unwrap();
        assert_eq!(found.len(), 4);
        assert_eq!(found[0].0, attribute::REGISTER_COUNT);
        assert_eq!(found[0].1.words().collect::<Vec<_>>(), [0x15, 64]);
        assert_eq!(found[1].1.number(), Some(255));
        assert_eq!(found[2].1.number(), Some(1));
        assert_eq!(found[3].1, Value::None);
        assert_eq!(records(&bytes[..10]), None);
        assert_eq!(records(&[0x09, 0x01, 0, 0]), None);
        assert_eq!(records(&[]), Some(vec![]));
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_are_read_or_refused_without_panicking(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = records(&bytes);
        }
    }
}
