//! The prefixes CI systems put before every line of a build's output. A ptxas report read from
//! such a log has them on each line; they are stripped before the line is read, so that a
//! GitHub Actions log reads like the terminal's output instead of holding "no kernel record".
//!
//! Shapes (each followed by one space; several may nest, e.g. buildkit output in a GitHub log):
//!
//! * an ISO 8601 time: `2024-05-01T12:00:00Z`, `2024-05-01T12:00:00.1234567Z` (GitHub Actions,
//!   Azure Pipelines), `2024-05-01T12:00:00.123+02:00`; GitLab adds a stream marker after it
//!   (`2024-05-01T12:00:00.123456Z 00O `, `00E+ `);
//! * a time of day, bare or in brackets: `12:00:00`, `[12:00:00]`, `[12:00:00.123]` (Jenkins'
//!   timestamper), an ISO time in brackets: `[2024-05-01T12:00:00.123Z]` (Buildkite, Jenkins);
//! * docker buildkit's step and seconds: `#12 0.345 `.
//!
//! Only these exact shapes are stripped: no ptxas line starts with a digit, `[` or `#`, and an
//! indented stack line starts with spaces, so no line of a plain log changes.

/// `line` without the CI prefixes it starts with (at most a few, each one of the shapes above).
pub(super) fn strip_ci_prefix(line: &str) -> &str {
    let mut rest = line;
    // Each strip shortens the line; four nested prefixes are more than any CI writes.
    for _ in 0..4 {
        match one_prefix(rest) {
            Some(after) => rest = after,
            None => break,
        }
    }
    rest
}

/// The line after one prefix, or `None` when it starts with none.
fn one_prefix(line: &str) -> Option<&str> {
    let bytes = line.as_bytes();
    let after = match bytes.first()? {
        b'0'..=b'9' => iso_time(bytes)
            .map(|end| end + gitlab_marker(&bytes[end..]))
            .or_else(|| time_of_day(bytes))?,
        b'[' => {
            let inner = &bytes[1..];
            let end = iso_time(inner).or_else(|| time_of_day(inner))?;
            (inner.get(end) == Some(&b']')).then_some(end + 2)?
        }
        b'#' => buildkit(bytes)?,
        _ => return None,
    };
    // One space ends the prefix; what follows is the tool's line as printed.
    (bytes.get(after) == Some(&b' ')).then(|| &line[after + 1..])
}

/// `count` ASCII digits at the start of `bytes`.
fn digits(bytes: &[u8], count: usize) -> bool {
    bytes.len() >= count && bytes[..count].iter().all(u8::is_ascii_digit)
}

/// How many digits `bytes` starts with.
fn digit_run(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count()
}

/// `HH:MM:SS` with an optional `.fraction`: its length.
fn time_of_day(bytes: &[u8]) -> Option<usize> {
    let shape = digits(bytes, 2)
        && bytes.get(2) == Some(&b':')
        && digits(&bytes[3..], 2)
        && bytes.get(5) == Some(&b':')
        && digits(&bytes[6..], 2);
    if !shape {
        return None;
    }
    Some(8 + fraction(&bytes[8..]))
}

/// `.123`: the length of a fraction of a second (0 when there is none).
fn fraction(bytes: &[u8]) -> usize {
    if bytes.first() != Some(&b'.') {
        return 0;
    }
    match digit_run(&bytes[1..]) {
        0 => 0,
        count => 1 + count,
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction][Z|+HH:MM|-HH:MM]`: its length.
fn iso_time(bytes: &[u8]) -> Option<usize> {
    let date = digits(bytes, 4)
        && bytes.get(4) == Some(&b'-')
        && digits(&bytes[5..], 2)
        && bytes.get(7) == Some(&b'-')
        && digits(&bytes[8..], 2)
        && bytes.get(10) == Some(&b'T');
    if !date {
        return None;
    }
    let mut end = 11 + time_of_day(&bytes[11..])?;
    match bytes.get(end) {
        Some(b'Z') => end += 1,
        Some(b'+' | b'-') => {
            let zone = &bytes[end + 1..];
            if digits(zone, 2) && zone.get(2) == Some(&b':') && digits(&zone[3..], 2) {
                end += 6;
            }
        }
        _ => {}
    }
    Some(end)
}

/// GitLab's ` 00O ` / ` 01E+ ` after the time: the length of ` 00O` (or ` 00O+`), 0 if absent.
fn gitlab_marker(bytes: &[u8]) -> usize {
    let shape = bytes.first() == Some(&b' ')
        && digits(&bytes[1..], 2)
        && matches!(bytes.get(3), Some(b'O' | b'E'));
    match (shape, bytes.get(4)) {
        (true, Some(b'+')) => 5,
        (true, _) => 4,
        (false, _) => 0,
    }
}

/// `#12 0.345`: docker buildkit's step number and seconds since the step started.
fn buildkit(bytes: &[u8]) -> Option<usize> {
    let step = digit_run(&bytes[1..]);
    if step == 0 || bytes.get(1 + step) != Some(&b' ') {
        return None;
    }
    let start = 2 + step;
    let whole = digit_run(&bytes[start..]);
    let seconds = fraction(&bytes[start + whole..]);
    (whole > 0 && seconds > 1).then_some(start + whole + seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ci_shape_is_stripped_and_plain_lines_are_not() {
        let line = "ptxas info    : Used 3 registers";
        for prefix in [
            "2024-05-01T12:00:00.1234567Z ",
            "2024-05-01T12:00:00Z ",
            "2024-05-01T12:00:00.123+02:00 ",
            "2024-05-01T12:00:00.123456Z 00O ",
            "2024-05-01T12:00:00.123456Z 01E+ ",
            "[12:00:00] ",
            "[12:00:00.123] ",
            "12:00:00.123 ",
            "[2024-05-01T12:00:00.123Z] ",
            "#12 0.345 ",
            "2024-05-01T12:00:00.1234567Z #7 12.000 ",
        ] {
            assert_eq!(
                strip_ci_prefix(&format!("{prefix}{line}")),
                line,
                "{prefix:?}"
            );
        }
        for plain in [
            line,
            "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
            "1>  ptxas info    : Used 3 registers",
            "# a comment",
            "#12 [stage 2/3] RUN make",
            "[ 50%] Building CUDA object",
            "12:00 not a time",
            "2024-05-01 12:00:00 not ISO",
            "",
        ] {
            assert_eq!(strip_ci_prefix(plain), plain, "{plain:?}");
        }
        // The stack line keeps its indentation behind a prefix.
        assert_eq!(
            strip_ci_prefix("2024-05-01T12:00:00Z     8 bytes stack frame"),
            "    8 bytes stack frame"
        );
    }
}
