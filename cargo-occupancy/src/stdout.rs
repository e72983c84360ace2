//! Standard output, written one way by every command: locked once, buffered, and every write's
//! error returned, never `print!` (which panics when the reader has gone away). A write that
//! fails becomes [`CliError::writing_stdout`]'s error: a closed pipe (`... | head`) is
//! [`CliError::StdoutClosed`], which `main` ends quietly, like ripgrep; anything else is an
//! output error naming what was being written.

use std::io::{BufWriter, StdoutLock, Write};

use crate::error::CliError;

/// Bytes gathered before one write to the pipe or terminal.
const BUFFER_BYTES: usize = 1 << 16;

/// The writer a command's renderer writes into.
pub type Out = BufWriter<StdoutLock<'static>>;

/// Locked, buffered standard output, and what is written to it (for the error message).
#[derive(Debug)]
pub struct Stdout {
    out: Out,
    /// `writing the table`: the start of the message when a write fails.
    context: &'static str,
}

impl Stdout {
    /// Standard output, locked for this command; `context` starts the message of a failed write.
    pub fn lock(context: &'static str) -> Stdout {
        Stdout {
            out: BufWriter::with_capacity(BUFFER_BYTES, std::io::stdout().lock()),
            context,
        }
    }

    /// Writes `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), CliError> {
        let written = self.out.write_all(bytes);
        self.check(written)
    }

    /// Runs a renderer that writes into the buffered output.
    pub fn write_with<T>(
        &mut self,
        write: impl FnOnce(&mut Out) -> std::io::Result<T>,
    ) -> Result<T, CliError> {
        let written = write(&mut self.out);
        self.check(written)
    }

    /// Flushes what is buffered: the end of a command's output.
    pub fn finish(mut self) -> Result<(), CliError> {
        let flushed = self.out.flush();
        self.check(flushed)
    }

    fn check<T>(&self, result: std::io::Result<T>) -> Result<T, CliError> {
        result.map_err(|error| CliError::writing_stdout(self.context, &error))
    }
}

/// Writes `text` to standard output and flushes it.
pub fn print(context: &'static str, text: &str) -> Result<(), CliError> {
    let mut out = Stdout::lock(context);
    out.write_all(text.as_bytes())?;
    out.finish()
}
