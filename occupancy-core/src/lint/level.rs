//! [`Level`]: allow, warn or deny, in clippy's words, and how a level word is read.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::did_you_mean;

/// How a finding of a lint is treated, in clippy's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// A level word that is not `allow`, `warn` or `deny`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown lint level `{given}`: write `allow`, `warn` or `deny`{hint}")]
#[non_exhaustive]
pub struct UnknownLevel {
    /// What was written.
    pub given: String,
    hint: String,
}

impl FromStr for Level {
    type Err = UnknownLevel;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "allow" => Ok(Level::Allow),
            "warn" => Ok(Level::Warn),
            "deny" => Ok(Level::Deny),
            other => {
                let lowered = other.trim().to_ascii_lowercase();
                let hint = match lowered.as_str() {
                    "forbid" => " (`forbid` is not supported; `deny` fails the build)".to_owned(),
                    "error" => " (did you mean `deny`?)".to_owned(),
                    "warning" => " (did you mean `warn`?)".to_owned(),
                    "off" | "ignore" | "none" => " (did you mean `allow`?)".to_owned(),
                    _ => {
                        match did_you_mean(&lowered, Level::ALL.iter().map(|level| level.as_str()))
                        {
                            Some(suggestion) => format!(" (did you mean `{suggestion}`?)"),
                            None => String::new(),
                        }
                    }
                };
                Err(UnknownLevel {
                    given: other.to_owned(),
                    hint,
                })
            }
        }
    }
}
