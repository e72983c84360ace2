//! [`Level`]: allow, warn or deny, in clippy's words, and how a level word is read.

use core::fmt;

/// How a finding of a lint is treated, in clippy's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Level {
    /// Not reported (still recorded in the JSON report).
    Allow,
    /// Reported as a `cargo:warning`; the build goes on.
    Warn,
    /// Reported as an error; the build fails.
    Deny,
}

impl Level {
    /// Every level, from least to most severe.
    pub const ALL: [Level; 3] = [Level::Allow, Level::Warn, Level::Deny];

    /// The word used in attributes, config files and environment variables.
    pub const fn as_str(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Warn => "warn",
            Level::Deny => "deny",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

#[cfg(feature = "alloc")]
pub use parse::UnknownLevel;

#[cfg(feature = "alloc")]
mod parse {
    use alloc::borrow::ToOwned;
    use alloc::string::String;
    use core::fmt;
    use core::str::FromStr;

    use super::Level;

    /// A level word that is not `allow`, `warn` or `deny`.
    #[derive(Debug, Clone, PartialEq, Eq)]
    #[non_exhaustive]
    pub struct UnknownLevel {
        /// What was written.
        pub given: String,
        /// The level meant, when the word is a known other name (`error`) or a typo (`wran`).
        suggestion: Option<Level>,
    }

    impl fmt::Display for UnknownLevel {
        fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(
                formatter,
                "unknown lint level `{}`: write `allow`, `warn` or `deny`",
                self.given
            )?;
            if self.given.trim().eq_ignore_ascii_case("forbid") {
                formatter.write_str(" (`forbid` is not supported; `deny` fails the build)")
            } else if let Some(level) = self.suggestion {
                write!(formatter, " (did you mean `{level}`?)")
            } else {
                Ok(())
            }
        }
    }

    impl core::error::Error for UnknownLevel {}

    impl FromStr for Level {
        type Err = UnknownLevel;

        fn from_str(text: &str) -> Result<Self, Self::Err> {
            if let Some(level) = Level::ALL.into_iter().find(|level| level.as_str() == text) {
                return Ok(level);
            }
            let lowered = text.trim().to_ascii_lowercase();
            let suggestion = match lowered.as_str() {
                "error" => Some(Level::Deny),
                "warning" => Some(Level::Warn),
                "off" | "ignore" | "none" => Some(Level::Allow),
                _ => Level::ALL
                    .into_iter()
                    .find(|level| is_typo_of(&lowered, level.as_str())),
            };
            Err(UnknownLevel {
                given: text.to_owned(),
                suggestion,
            })
        }
    }

    /// Whether `given` is a likely typo of the level `word`: the same letters with at most one
    /// dropped, added, changed or swapped with its neighbour, or the word in other case.
    fn is_typo_of(given: &str, word: &str) -> bool {
        let (given, word) = (given.as_bytes(), word.as_bytes());
        let common_start = given.iter().zip(word).take_while(|(a, b)| a == b).count();
        let common_end = given[common_start..]
            .iter()
            .rev()
            .zip(word[common_start..].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let (given_rest, word_rest) = (
            &given[common_start..given.len() - common_end],
            &word[common_start..word.len() - common_end],
        );
        match (given_rest.len(), word_rest.len()) {
            (0, 0) => true,
            (0, 1) | (1, 0) | (1, 1) => true,
            (2, 2) => given_rest[0] == word_rest[1] && given_rest[1] == word_rest[0],
            _ => false,
        }
    }
}
