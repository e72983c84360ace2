//! Kernel families: one declaration for every compiled kernel whose symbol matches a pattern
//! (`family = "affine_*"`), as C macros generate them (`UNARY_OP(float, uneg_f32, -x)`).
//!
//! Only `*` is a wildcard (any run of characters, empty included); every other character
//! matches itself. Which characters a pattern may hold is checked by the grammar.

/// Whether `symbol` matches `pattern`, where `*` stands for any run of characters.
///
/// Greedy with backtracking to the last `*`: time O(pattern x symbol) at worst, linear for the
/// usual one-`*` prefix or suffix patterns.
pub fn family_matches(pattern: &str, symbol: &str) -> bool {
    let pattern = pattern.as_bytes();
    let symbol = symbol.as_bytes();
    let (mut pattern_index, mut symbol_index) = (0, 0);
    // The last `*` seen, and the symbol position it was tried at.
    let mut backtrack: Option<(usize, usize)> = None;
    while symbol_index < symbol.len() {
        match pattern.get(pattern_index) {
            Some(b'*') => {
                backtrack = Some((pattern_index, symbol_index));
                pattern_index += 1;
            }
            Some(&byte) if byte == symbol[symbol_index] => {
                pattern_index += 1;
                symbol_index += 1;
            }
            _ => match backtrack {
                Some((star, tried)) => {
                    pattern_index = star + 1;
                    symbol_index = tried + 1;
                    backtrack = Some((star, tried + 1));
                }
                None => return false,
            },
        }
    }
    pattern[pattern_index..].iter().all(|byte| *byte == b'*')
}

/// The characters a pattern may hold: those of compiled symbols (C identifiers and Itanium
/// mangled names), and `*`.
#[cfg_attr(not(feature = "spec"), allow(dead_code))]
pub(crate) fn is_pattern_char(character: char) -> bool {
    character.is_ascii_alphanumeric() || matches!(character, '_' | '$' | '.' | '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn prefix_suffix_and_infix_patterns() {
        assert!(family_matches("affine_*", "affine_f32"));
        assert!(family_matches("affine_*", "affine_"));
        assert!(!family_matches("affine_*", "affine"));
        assert!(!family_matches("affine_*", "xaffine_f32"));
        assert!(family_matches("*_f32", "uneg_f32"));
        assert!(!family_matches("*_f32", "uneg_f32x"));
        assert!(family_matches("u*_f*", "uneg_f16"));
        assert!(family_matches("where_*_*", "where_u8_f32"));
        assert!(!family_matches("where_*_*", "where_u8"));
        assert!(family_matches("exact", "exact"));
        assert!(!family_matches("exact", "exactly"));
        assert!(family_matches("a*b*c", "aXbYbZc"));
        assert!(!family_matches("a*b*c", "aXbYbZ"));
    }

    /// The reference: a regex with `*` as `.*`, anchored.
    fn reference(pattern: &str, symbol: &str) -> bool {
        fn go(pattern: &[u8], symbol: &[u8]) -> bool {
            match pattern.split_first() {
                None => symbol.is_empty(),
                Some((b'*', rest)) => (0..=symbol.len()).any(|skip| go(rest, &symbol[skip..])),
                Some((byte, rest)) => symbol.first() == Some(byte) && go(rest, &symbol[1..]),
            }
        }
        go(pattern.as_bytes(), symbol.as_bytes())
    }

    proptest! {
        #[test]
        fn agrees_with_the_exhaustive_reference(pattern in "[ab*]{0,7}", symbol in "[ab]{0,9}") {
            prop_assert_eq!(family_matches(&pattern, &symbol), reference(&pattern, &symbol));
        }
    }
}
