//! The fast path of batch-line parsing: one flat JSON object whose values are plain strings (no
//! escapes), non-negative integers without fraction or exponent, or `null`. Anything else, valid
//! JSON or not, returns `None` and is left to serde_json, so the two paths never disagree on what
//! is JSON. The whole line is scanned before a bad value is reported, so a syntax error always
//! wins over a bad value, as in the serde path.

/// One value of a line, as either parser found it.
#[derive(Debug)]
pub(super) enum Scalar<'a> {
    Unsigned(u64),
    /// A number that is not a non-negative integer (`-1`, `1.5`, `1e3`), as written.
    OtherNumber(&'a str),
    Text(&'a str),
    Null,
    /// `true`, a list, an object: shown as JSON.
    Other(String),
}

/// Scans `line`, handing each key and value to `set` until it refuses one; `None` when the line
/// is not a flat object of plain values (serde_json reads it then), else `set`'s first error.
pub(super) fn scan<'a>(
    line: &'a str,
    mut set: impl FnMut(&'a str, Scalar<'a>) -> Result<(), String>,
) -> Option<Result<(), String>> {
    let mut cursor = Cursor { line, position: 0 };
    let mut first_error = None;
    cursor.skip_whitespace();
    cursor.expect(b'{')?;
    cursor.skip_whitespace();
    if !cursor.eat(b'}') {
        loop {
            cursor.skip_whitespace();
            let key = cursor.string()?;
            cursor.skip_whitespace();
            cursor.expect(b':')?;
            cursor.skip_whitespace();
            let value = cursor.scalar()?;
            if first_error.is_none() {
                first_error = set(key, value).err();
            }
            cursor.skip_whitespace();
            if cursor.eat(b'}') {
                break;
            }
            cursor.expect(b',')?;
        }
    }
    cursor.skip_whitespace();
    if cursor.position != line.len() {
        return None;
    }
    Some(first_error.map_or(Ok(()), Err))
}

struct Cursor<'a> {
    line: &'a str,
    position: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.line.as_bytes().get(self.position).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.position += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.position += 1;
        }
        found
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// A string without escapes or control characters.
    fn string(&mut self) -> Option<&'a str> {
        self.expect(b'"')?;
        let start = self.position;
        loop {
            match self.peek()? {
                b'"' => break,
                b'\\' | 0..=0x1f => return None,
                _ => self.position += 1,
            }
        }
        let text = &self.line[start..self.position];
        self.position += 1;
        Some(text)
    }

    fn scalar(&mut self) -> Option<Scalar<'a>> {
        match self.peek()? {
            b'"' => self.string().map(Scalar::Text),
            b'n' => {
                let rest = &self.line[self.position..];
                rest.starts_with("null").then(|| {
                    self.position += 4;
                    Scalar::Null
                })
            }
            b'0'..=b'9' => self.unsigned(),
            _ => None,
        }
    }

    /// `0` or `[1-9][0-9]*` that fits 64 bits, not followed by a fraction or exponent.
    fn unsigned(&mut self) -> Option<Scalar<'a>> {
        let start = self.position;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.position += 1;
        }
        let digits = &self.line.as_bytes()[start..self.position];
        let leading_zero = digits.len() > 1 && digits[0] == b'0';
        if leading_zero || matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        // Beyond 64 bits: serde_json's path says how large.
        let mut number = 0u64;
        for &digit in digits {
            number = number
                .checked_mul(10)?
                .checked_add(u64::from(digit - b'0'))?;
        }
        Some(Scalar::Unsigned(number))
    }
}
