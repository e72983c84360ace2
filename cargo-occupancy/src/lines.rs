//! Line-by-line input with a cap on a line's length: what the CLI reads one line at a time
//! (`calc --batch`) holds at most the cap, whatever comes in. A line with no newline within the
//! cap (`/dev/zero`, a gigabyte without a line break) is refused with its line number and the cap,
//! never read to its end: the input may have none.
//!
//! A line is every byte before its `\n`; a `\r` before the `\n` counts toward the cap and is left
//! on the line for the caller (`\r\n` files). A last line without a `\n` is a line. A line of
//! exactly the cap is read. Lines that fit the reader's buffer are handed out in place, without a
//! copy; only a line across the buffer's end is gathered (up to the cap) in one reused buffer.
//!
//! ptxas logs are not read through this: `occupancy_core::ptxas::LogParser` skips an over-long
//! line (counted and noted) rather than refusing the log, since a build log can hold any other
//! tool's output; its cap is the same 1 MiB.

use std::io::BufRead;

/// The longest line read: 1 MiB (a batch line holds one small JSON object).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Why no further line can be read.
#[derive(Debug)]
pub enum LineError {
    /// Line `line` (1-based) holds more than `max` bytes before its newline, or before the input
    /// ended; the reading stops there.
    TooLong { line: u64, max: usize },
    /// The input failed while line `line` was read.
    Read { line: u64, error: std::io::Error },
}

impl LineError {
    /// The error in words, naming the input (`` `batch.jsonl` ``, `(stdin)`).
    pub fn message(&self, input: &str) -> String {
        match self {
            LineError::TooLong { line, max } => format!(
                "{input}: line {line} is longer than {max} bytes ({}, the longest line read), with no newline within them",
                human_bytes(*max)
            ),
            LineError::Read { line, error } => {
                format!("reading {input} at line {line}: {error}")
            }
        }
    }
}

/// `1 MiB`, `64 KiB`, `100 bytes`.
fn human_bytes(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// The lines of a reader, each at most `max` bytes.
pub struct BoundedLines<R> {
    input: R,
    max: usize,
    /// A line across the end of the reader's buffer, gathered here (never beyond `max`).
    spanning: Vec<u8>,
    /// Lines handed out so far.
    lines: u64,
}

impl<R: BufRead> BoundedLines<R> {
    /// Lines of `input`, each at most `max` bytes before its newline.
    pub fn new(input: R, max: usize) -> Self {
        BoundedLines {
            input,
            max,
            spanning: Vec::new(),
            lines: 0,
        }
    }

    /// Calls `use_line` with the next line (without its `\n`) and its 1-based number; `None` at
    /// the end of the input.
    pub fn next_line<T>(
        &mut self,
        use_line: impl FnOnce(&[u8], u64) -> T,
    ) -> Result<Option<T>, LineError> {
        let number = self.lines + 1;
        let read_error = |error| LineError::Read {
            line: number,
            error,
        };
        let available = loop {
            match self.input.fill_buf() {
                Ok(available) => break available,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(read_error(error)),
            }
        };
        if available.is_empty() {
            return Ok(None);
        }
        if let Some(end) = memchr::memchr(b'\n', available) {
            if end > self.max {
                return Err(LineError::TooLong {
                    line: number,
                    max: self.max,
                });
            }
            // The common case: the whole line is in the buffer.
            let answer = use_line(&available[..end], number);
            self.input.consume(end + 1);
            self.lines = number;
            return Ok(Some(answer));
        }
        self.gather_spanning(number)?;
        self.lines = number;
        Ok(Some(use_line(&self.spanning, number)))
    }

    /// Gathers line `number`, which runs past the reader's buffer, into `spanning`.
    fn gather_spanning(&mut self, number: u64) -> Result<(), LineError> {
        self.spanning.clear();
        loop {
            let available = match self.input.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    return Err(LineError::Read {
                        line: number,
                        error,
                    })
                }
            };
            if available.is_empty() {
                return Ok(()); // a last line without a newline
            }
            let (part, consumed, ends) = match memchr::memchr(b'\n', available) {
                Some(end) => (&available[..end], end + 1, true),
                None => (available, available.len(), false),
            };
            if self.spanning.len() + part.len() > self.max {
                return Err(LineError::TooLong {
                    line: number,
                    max: self.max,
                });
            }
            self.spanning.extend_from_slice(part);
            self.input.consume(consumed);
            if ends {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::{BufReader, Read};

    /// Every line of `input` read through a buffer of `capacity` bytes with cap `max`, and how
    /// the reading ended (`None`: at the end of the input).
    fn read_all(input: &[u8], capacity: usize, max: usize) -> (Vec<Vec<u8>>, Option<u64>) {
        let mut lines = BoundedLines::new(BufReader::with_capacity(capacity, input), max);
        let mut read = Vec::new();
        loop {
            match lines.next_line(|line, number| (line.to_vec(), number)) {
                Ok(Some((line, number))) => {
                    assert_eq!(number, read.len() as u64 + 1);
                    assert!(lines.spanning.len() <= max);
                    read.push(line);
                }
                Ok(None) => return (read, None),
                Err(LineError::TooLong { line, max: cap }) => {
                    assert_eq!(cap, max);
                    return (read, Some(line));
                }
                Err(LineError::Read { error, .. }) => panic!("{error}"),
            }
        }
    }

    /// The reference: split at `\n` (a final `\n` opens no empty line); the first line over
    /// `max` bytes ends the reading.
    fn reference(input: &[u8], max: usize) -> (Vec<Vec<u8>>, Option<u64>) {
        let mut lines = Vec::new();
        if input.is_empty() {
            return (lines, None);
        }
        let body = input.strip_suffix(b"\n").unwrap_or(input);
        for (index, line) in body.split(|&byte| byte == b'\n').enumerate() {
            if line.len() > max {
                return (lines, Some(index as u64 + 1));
            }
            lines.push(line.to_vec());
        }
        (lines, None)
    }

    #[test]
    fn a_line_exactly_at_the_cap_is_read_one_byte_more_is_refused() {
        for capacity in [3, 8, 64] {
            assert_eq!(
                read_all(b"abcd\nefgh", capacity, 4),
                (vec![b"abcd".to_vec(), b"efgh".to_vec()], None)
            );
            assert_eq!(
                read_all(b"abcd\nefghi\nj\n", capacity, 4),
                (vec![b"abcd".to_vec()], Some(2))
            );
            // The `\r` of a CRLF line counts toward the cap, and stays on the line.
            assert_eq!(
                read_all(b"abc\r\nabcd\r\n", capacity, 4),
                (vec![b"abc\r".to_vec()], Some(2))
            );
        }
    }

    /// `/dev/zero`: no newline ever. Refused at the cap, having held at most the cap.
    #[test]
    fn endless_input_without_a_newline_is_refused_at_the_cap() {
        let zeros = std::io::repeat(0).take(u64::MAX);
        let mut lines = BoundedLines::new(BufReader::with_capacity(1 << 16, zeros), MAX_LINE_BYTES);
        let error = lines.next_line(|_, _| ()).unwrap_err();
        assert!(lines.spanning.capacity() <= 2 * MAX_LINE_BYTES);
        let message = error.message("`/dev/zero`");
        assert_eq!(
            message,
            "`/dev/zero`: line 1 is longer than 1048576 bytes (1 MiB, the longest line read), with no newline within them"
        );
    }

    proptest! {
        /// Whatever the buffer size, line lengths around the cap, CRLF or a missing last newline:
        /// the lines read are the reference's, and the reading stops at the first line over the
        /// cap, naming it.
        #[test]
        fn lines_are_read_as_split_and_refused_past_the_cap(
            lengths in proptest::collection::vec((0usize..24, proptest::bool::weighted(0.3)), 0..30),
            trailing_newline in proptest::bool::ANY,
            capacity in 1usize..40,
            max in 1usize..20,
        ) {
            let mut input = Vec::new();
            for (index, (length, crlf)) in lengths.iter().enumerate() {
                if index > 0 {
                    input.push(b'\n');
                }
                input.extend((0..*length).map(|offset| b'a' + (offset % 26) as u8));
                if *crlf {
                    input.push(b'\r');
                }
            }
            if trailing_newline && !lengths.is_empty() {
                input.push(b'\n');
            }
            prop_assert_eq!(read_all(&input, capacity, max), reference(&input, max));
        }
    }
}
