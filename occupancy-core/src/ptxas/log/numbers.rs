//! The numbers of ptxas's lines, read strictly: each way a count can be wrong has its own
//! message, naming the text that was not understood, so that `Used 99999999999 registers`,
//! `Used -5 registers` and `Used 32 registers (8 uniform)` each say what is wrong with them
//! instead of one "cut off" for all.

/// A count: ASCII digits, at most `max`. The error names the text and what is wrong with it.
pub(super) fn count(text: &str, max: u64) -> Result<u64, String> {
    let text = text.trim_matches([' ', '\t']);
    if text.is_empty() {
        return Err("no number".to_string());
    }
    let unsigned = text.strip_prefix('-');
    let digits = unsigned.unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!("`{text}` is not a number"));
    }
    if unsigned.is_some() {
        return Err(format!(
            "`{text}` is negative (ptxas prints counts of 0 or more)"
        ));
    }
    match digits.parse::<u64>() {
        Ok(value) if value <= max => Ok(value),
        _ => Err(format!(
            "`{text}` does not fit in {} bits (the largest is {max})",
            u64::BITS - max.leading_zeros()
        )),
    }
}

/// An item `N UNIT` of a ptxas line (`32 registers`, `8 bytes smem`): `None` when the item is
/// not about `unit` (no word `unit` in it); else its count, or what in it was not understood
/// (the number, or text after the unit: `(8 uniform)` in `32 registers (8 uniform)`).
pub(super) fn item_count(item: &str, unit: &str, max: u64) -> Option<Result<u64, String>> {
    // As ptxas prints it: `N UNIT`, digits only (the common case, without a search).
    if let Some(number) = item
        .strip_suffix(unit)
        .and_then(|head| head.strip_suffix(' '))
    {
        if !number.is_empty() && number.len() < 20 && number.bytes().all(|b| b.is_ascii_digit()) {
            return Some(match number.parse::<u64>() {
                Ok(value) if value <= max => Ok(value),
                _ => count(number, max).map_err(|problem| format!("in `{item}`, {problem}")),
            });
        }
    }
    let at = word_at(item, unit)?;
    let number = item[..at].trim_end_matches([' ', '\t']);
    let after = item[at + unit.len()..].trim_matches([' ', '\t']);
    if number.is_empty() {
        return Some(Err(format!("`{item}` has no number before `{unit}`")));
    }
    let value = match count(number, max) {
        Ok(value) => value,
        Err(problem) => return Some(Err(format!("in `{item}`, {problem}"))),
    };
    if !after.is_empty() {
        return Some(Err(format!(
            "`{after}` after `{number} {unit}` is not a form ptxas prints"
        )));
    }
    Some(Ok(value))
}

/// The offset of `word` in `text` where it starts the text or follows a blank, and ends the
/// text or is followed by a blank or `(`.
fn word_at(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(offset) = text[from..].find(word) {
        let at = from + offset;
        let before = text[..at].bytes().last();
        let after = text[at + word.len()..].bytes().next();
        if matches!(before, None | Some(b' ' | b'\t'))
            && matches!(after, None | Some(b' ' | b'\t' | b'('))
        {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_wrong_number_has_its_own_message() {
        let max = u64::from(u32::MAX);
        assert_eq!(count("42", max), Ok(42));
        assert_eq!(count("4294967295", max), Ok(4_294_967_295));
        assert_eq!(
            count("4294967296", max).unwrap_err(),
            "`4294967296` does not fit in 32 bits (the largest is 4294967295)"
        );
        assert_eq!(
            count("99999999999999999999999", u64::MAX).unwrap_err(),
            "`99999999999999999999999` does not fit in 64 bits (the largest is 18446744073709551615)"
        );
        assert_eq!(
            count("-5", max).unwrap_err(),
            "`-5` is negative (ptxas prints counts of 0 or more)"
        );
        assert_eq!(count("3x", max).unwrap_err(), "`3x` is not a number");
        assert_eq!(count("", max).unwrap_err(), "no number");
    }

    #[test]
    fn items_say_which_part_was_not_understood() {
        let max = u64::from(u32::MAX);
        assert_eq!(item_count("32 registers", "registers", max), Some(Ok(32)));
        assert_eq!(item_count("8 bytes smem", "registers", max), None);
        assert_eq!(
            item_count("32 registers (8 uniform)", "registers", max),
            Some(Err(
                "`(8 uniform)` after `32 registers` is not a form ptxas prints".to_string()
            ))
        );
        assert_eq!(
            item_count("-1 registers", "registers", max),
            Some(Err(
                "in `-1 registers`, `-1` is negative (ptxas prints counts of 0 or more)"
                    .to_string()
            ))
        );
        assert_eq!(
            item_count("registers", "registers", max),
            Some(Err(
                "`registers` has no number before `registers`".to_string()
            ))
        );
        assert_eq!(item_count("32 registersX", "registers", max), None);
    }
}
