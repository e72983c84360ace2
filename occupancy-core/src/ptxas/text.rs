//! Substring search for the per-line PTX scans, cheap in an unoptimized build.
//!
//! Cargo builds a build script and its dependencies at opt-level 0, where `str::contains(&str)`
//! and `str::split(&str)` set up a two-way searcher on every call: per line of a 10 MB PTX, that
//! set-up was most of a scan's time (the operation scan took 0.107 s on a 5.4 MB PTX). These look
//! for the needle's first byte with `str::find(char)` (memchr) and compare the rest in place:
//! the same answers as `str::find(&str)` for any needle.
//!
//! Looking at every line at all costs about 0.3 µs a line there (192,000 lines in a 5.4 MB
//! PTX), while one `str::find(&str)` over the whole text runs at about 1 GB/s. So a scan that
//! needs only the lines holding some word finds them with [`lines_holding`] and reads just those
//! ([`line_around`], [`line_text`]).

/// The byte offset of the first `needle` in `haystack`, as `haystack.find(needle)`.
pub(crate) fn find(haystack: &str, needle: &str) -> Option<usize> {
    let Some(first) = needle.chars().next() else {
        return Some(0);
    };
    let mut from = 0;
    while let Some(at) = haystack[from..].find(first) {
        let at = from + at;
        if haystack[at..].starts_with(needle) {
            return Some(at);
        }
        from = at + first.len_utf8();
    }
    None
}

/// Whether `haystack` holds `needle`, as `haystack.contains(needle)`.
pub(crate) fn contains(haystack: &str, needle: &str) -> bool {
    find(haystack, needle).is_some()
}

/// The part of a PTX line before its `//` comment, as `line.split("//").next()`.
pub(crate) fn before_line_comment(line: &str) -> &str {
    find(line, "//").map_or(line, |at| &line[..at])
}

/// The offset of the first `wanted` (ASCII) in `text` at or after byte `from`, which may be
/// inside a character (an ASCII byte never is); `text.len()` if none.
pub(crate) fn find_char_from(text: &str, mut from: usize, wanted: char) -> usize {
    while !text.is_char_boundary(from) {
        from += 1;
    }
    text[from..]
        .find(wanted)
        .map_or(text.len(), |offset| from + offset)
}

/// The line that holds byte `at` of `text`: (start, end), `end` at its `\n` or the text's end.
pub(crate) fn line_around(text: &str, at: usize) -> (usize, usize) {
    let start = text[..at].rfind('\n').map_or(0, |newline| newline + 1);
    (start, find_char_from(text, at, '\n'))
}

/// The line from `start` to `end` as `str::lines` gives it: without the `\r` of a `\r\n`.
pub(crate) fn line_text(text: &str, start: usize, end: usize) -> &str {
    let line = &text[start..end];
    match end < text.len() {
        true => line.strip_suffix('\r').unwrap_or(line),
        false => line,
    }
}

/// The starts of the lines of `text` that hold any of `needles` (none empty), in order, each
/// once. A whole-text search per needle, then only those lines: in an unoptimized build this
/// is several times faster than looking at every line (module docs).
pub(crate) fn lines_holding(text: &str, needles: &[&str]) -> Vec<usize> {
    let mut starts = Vec::new();
    for needle in needles.iter().filter(|needle| !needle.is_empty()) {
        let mut from = 0;
        while let Some(offset) = text[from..].find(needle) {
            let (start, end) = line_around(text, from + offset);
            starts.push(start);
            from = end;
        }
    }
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// The bytes of a quoted name as a C compiler writes it (a PTX `.file`, a preprocessor line
/// marker), between its quotes: `\\`, `\"`, `\n`, `\t`, `\r` and octal `\303` undone, any other
/// escape kept as written. nvcc writes a non-ASCII path's bytes in octal (`\303\251.cu` for
/// `é.cu`) and a newline as `\n`: read as written, findings showed octal and a path with a
/// newline named no file (issue #35, class 9).
pub fn unescape_quoted(quoted: &str) -> Vec<u8> {
    let bytes = quoted.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        at += 1;
        if byte != b'\\' || at == bytes.len() {
            out.push(byte);
            continue;
        }
        let next = bytes[at];
        at += 1;
        match next {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'\\' | b'"' | b'\'' => out.push(next),
            b'0'..=b'7' => {
                let mut value = u32::from(next - b'0');
                for _ in 0..2 {
                    match bytes.get(at) {
                        Some(digit @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(digit - b'0');
                            at += 1;
                        }
                        _ => break,
                    }
                }
                out.push(u8::try_from(value).unwrap_or(u8::MAX));
            }
            other => out.extend([b'\\', other]),
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Up to 40 lines drawn from `line`, each ended by `\n` or `\r\n`: PTX-like text for the
    /// scans' proptests.
    pub(crate) fn lines_of(
        line: impl Strategy<Value = &'static str>,
    ) -> impl Strategy<Value = String> {
        prop::collection::vec((line, prop::bool::ANY), 0..40).prop_map(|lines| {
            lines
                .into_iter()
                .map(|(line, crlf)| format!("{line}{}", if crlf { "\r\n" } else { "\n" }))
                .collect()
        })
    }

    #[test]
    fn finds_what_str_finds() {
        for (haystack, needle) in [
            ("add.f64 %fd1;", "f64"),
            ("ff64", "f64"),
            ("f6f64", "f64"),
            ("call.uni x;", "call"),
            ("no", "call"),
            ("", "a"),
            ("abc", ""),
            ("ä//ö", "//"),
            ("a/b//c", "//"),
        ] {
            assert_eq!(
                find(haystack, needle),
                haystack.find(needle),
                "{haystack:?} {needle:?}"
            );
        }
        assert_eq!(before_line_comment("\tret; // done"), "\tret; ");
        assert_eq!(before_line_comment("a/b"), "a/b");
    }

    /// The starts of the lines holding a needle, by `str::lines` (`\n` and `\r\n` endings).
    fn lines_holding_reference(text: &str, needles: &[&str]) -> Vec<usize> {
        let mut starts = Vec::new();
        let mut start = 0;
        for line in text.split_inclusive('\n') {
            if needles.iter().any(|needle| line.contains(needle)) {
                starts.push(start);
            }
            start += line.len();
        }
        starts
    }

    proptest! {
        #[test]
        fn lines_holding_finds_every_line_with_a_needle(text in "[ab\n\r.]{0,60}") {
            let needles = ["ab", ".a", "b\r"];
            prop_assert_eq!(lines_holding(&text, &needles), lines_holding_reference(&text, &needles));
            for start in lines_holding(&text, &needles) {
                let (at, end) = line_around(&text, start);
                prop_assert_eq!(at, start);
                let line = line_text(&text, start, end);
                prop_assert!(text.lines().any(|each| std::ptr::eq(each.as_ptr(), line.as_ptr()) && each == line));
            }
        }

        #[test]
        fn find_equals_str_find(haystack in "[a-c/ä.]{0,40}", needle in "[a-c/ä.]{0,4}") {
            prop_assert_eq!(find(&haystack, &needle), haystack.find(needle.as_str()));
            prop_assert_eq!(
                before_line_comment(&haystack),
                haystack.split("//").next().unwrap_or("")
            );
        }
    }
}
