//! The entries of one fatbin, read here, for what cuobjdump refuses. cuobjdump 13.x reads some
//! fatbins of CUDA 12.1 libraries as "Invalid ELF" (bitsandbytes 0.50.2's
//! `libbitsandbytes_cuda121.so`: its sm_70 to sm_90 cubins), though each entry is a plain
//! cubin the cubin reader reads. An entry's header (64 bytes, or more for PTX): kind `u16` at
//! 0 (1 PTX, 2 ELF, 8 LTO IR), header size `u32` at 4, payload size `u64` at 8, the SM number
//! `u32` at 28, flags `u64` at 40 (`0x2000` or `0x8000`: the payload is compressed; `0x8000`
//! is zstd, which nvcc 13 writes by default), uncompressed size `u64` at 56. An uncompressed
//! ELF payload is the cubin itself.

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Ptx,
    Cubin,
    /// LTO IR, or a kind this does not know.
    Other(u16),
}

/// One entry of a fatbin: its kind, SM number, and where its payload lies in the fatbin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// `90` for sm_90 / compute_90.
    pub sm: u32,
    pub compressed: bool,
    pub payload: std::ops::Range<usize>,
}

impl Entry {
    /// `sm_90` (a cubin's) or `compute_90` (PTX's), for messages.
    pub fn arch(&self) -> String {
        match self.kind {
            EntryKind::Ptx => format!("compute_{}", self.sm),
            _ => format!("sm_{}", self.sm),
        }
    }
}

const MAGIC: u32 = 0xBA55_ED50;
const COMPRESSED: u64 = 0x2000 | 0x8000;

/// The entries of the fatbin `bytes` (its 16-byte header, then its entries), in order; an error
/// saying what is wrong when they do not fill it exactly.
pub fn entries(bytes: &[u8]) -> Result<Vec<Entry>, String> {
    let u16_at = |at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        (bytes.get(at..at + 4)).map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()))
    };
    let u64_at = |at: usize| {
        (bytes.get(at..at + 8)).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
    };
    if u32_at(0) != Some(MAGIC) {
        return Err("not a fatbin (no 0xBA55ED50 header)".into());
    }
    let header = usize::from(u16_at(6).ok_or("a fatbin header cut short")?);
    let size = u64_at(8).and_then(|size| usize::try_from(size).ok());
    let end = size
        .and_then(|size| header.checked_add(size))
        .filter(|end| *end <= bytes.len())
        .ok_or("a fatbin whose entries run past its end")?;
    let mut found = Vec::new();
    let mut at = header;
    while at < end {
        let entry_header = u32_at(at + 4).and_then(|h| usize::try_from(h).ok());
        let payload = u64_at(at + 8).and_then(|p| usize::try_from(p).ok());
        let (Some(entry_header), Some(payload)) = (entry_header, payload) else {
            return Err(format!("an entry at byte {at} cut short"));
        };
        let start = at.checked_add(entry_header).filter(|_| entry_header >= 64);
        let stop = start
            .and_then(|start| start.checked_add(payload))
            .filter(|stop| *stop <= end);
        let (Some(start), Some(stop)) = (start, stop) else {
            return Err(format!("an entry at byte {at} runs past the fatbin's end"));
        };
        let kind = match u16_at(at).unwrap_or_default() {
            1 => EntryKind::Ptx,
            2 => EntryKind::Cubin,
            other => EntryKind::Other(other),
        };
        found.push(Entry {
            kind,
            sm: u32_at(at + 28).unwrap_or_default(),
            compressed: u64_at(at + 40).unwrap_or_default() & COMPRESSED != 0,
            payload: start..stop,
        });
        at = stop;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fatbin of `(kind, sm, flags, payload)` entries laid out as nvcc 13.0 writes them.
    fn fatbin(entries: &[(u16, u32, u64, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for (kind, sm, flags, payload) in entries {
            let mut header = vec![0u8; 64];
            header[0..2].copy_from_slice(&kind.to_le_bytes());
            header[4..8].copy_from_slice(&64u32.to_le_bytes());
            header[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
            header[28..32].copy_from_slice(&sm.to_le_bytes());
            header[40..48].copy_from_slice(&flags.to_le_bytes());
            body.extend(header);
            body.extend_from_slice(payload);
        }
        let mut bytes = MAGIC.to_le_bytes().to_vec();
        bytes.extend(1u16.to_le_bytes());
        bytes.extend(16u16.to_le_bytes());
        bytes.extend((body.len() as u64).to_le_bytes());
        bytes.extend(body);
        bytes
    }

    #[test]
    fn entries_give_kind_arch_compression_and_payload() {
        let bytes = fatbin(&[
            (2, 70, 0x11, b"\x7fELFcubin"),
            (2, 90, 0x8011, b"(\xb5/\xfdzstd"),
            (1, 80, 0x11, b".version 9.0"),
        ]);
        let found = entries(&bytes).unwrap();
        assert_eq!(found.len(), 3);
        assert_eq!(
            (found[0].kind, found[0].arch(), found[0].compressed),
            (EntryKind::Cubin, "sm_70".into(), false)
        );
        assert_eq!(&bytes[found[0].payload.clone()], b"\x7fELFcubin");
        assert_eq!(
            (found[1].arch(), found[1].compressed),
            ("sm_90".into(), true)
        );
        assert_eq!(
            (found[2].kind, found[2].arch()),
            (EntryKind::Ptx, "compute_80".into())
        );
    }

    #[test]
    fn damaged_fatbins_are_errors_never_panics() {
        let good = fatbin(&[(2, 80, 0x11, b"\x7fELF")]);
        assert!(entries(&good[..good.len() - 1]).is_err());
        assert!(entries(b"\x50\xed\x55\xba").is_err());
        assert!(entries(b"not a fatbin at all").is_err());
        let mut short_header = good.clone();
        short_header[16 + 4..16 + 8].copy_from_slice(&8u32.to_le_bytes());
        assert!(entries(&short_header).is_err());
        for cut in 0..good.len() {
            let _ = entries(&good[..cut]);
        }
    }
}
