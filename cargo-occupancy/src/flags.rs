//! Value parsers for command-line flags that several subcommands share, so that one quantity is
//! checked the same way everywhere it is accepted.

/// A shared memory size: at most `u32::MAX` bytes (what the calculator and the driver count in).
pub fn smem_bytes(text: &str) -> Result<u64, String> {
    let bytes: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of bytes (a non-negative integer)"))?;
    if bytes > u64::from(u32::MAX) {
        return Err(format!(
            "{bytes} bytes is more than any GPU has; at most {} per block",
            u32::MAX
        ));
    }
    Ok(bytes)
}

/// Command-line value parser for counts and sizes: a non-negative integer that fits 32 bits.
pub fn parse_count(text: &str) -> Result<u32, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('-')
        && trimmed[1..].bytes().all(|byte| byte.is_ascii_digit())
        && trimmed.len() > 1
    {
        return Err(format!(
            "`{text}` is negative; expected a non-negative integer"
        ));
    }
    if trimmed.is_empty() || !trimmed.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!("`{text}` is not a non-negative integer"));
    }
    trimmed
        .parse()
        .map_err(|_| format!("`{text}` is larger than {}", u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_sizes_stop_at_32_bits() {
        assert_eq!(smem_bytes("0"), Ok(0));
        assert_eq!(smem_bytes("4294967295"), Ok(u64::from(u32::MAX)));
        assert!(smem_bytes("4294967296")
            .unwrap_err()
            .contains("more than any GPU has"));
        assert!(smem_bytes("-1")
            .unwrap_err()
            .contains("`-1` is not a number of bytes"));
        assert!(smem_bytes("NaN").unwrap_err().contains("`NaN`"));
    }
}
