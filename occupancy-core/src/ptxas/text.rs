//! Substring search for the per-line PTX scans, cheap in an unoptimized build.
//!
//! Cargo builds a build script and its dependencies at opt-level 0, where `str::contains(&str)`
//! and `str::split(&str)` set up a two-way searcher on every call: per line of a 10 MB PTX, that
//! set-up was most of a scan's time (the operation scan took 0.107 s on a 5.4 MB PTX). These look
//! for the needle's first byte with `str::find(char)` (memchr) and compare the rest in place:
//! the same answers as `str::find(&str)` for any needle.

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    proptest! {
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
