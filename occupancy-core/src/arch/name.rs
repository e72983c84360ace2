//! [`Arch`]: the one spelling of a GPU architecture that every input goes through (the attribute's
//! `archs`, `OCCUPANCY_ARCHS`, `CUDA_COMPUTE_CAP`, `Build::arch`, every `--arch` flag, batch lines
//! and report rows), with the grammar nvcc accepts and nothing more.
//!
//! Accepted: `sm_90`, `compute_90`, the architecture-specific `sm_90a` / `compute_90a` and the
//! family-specific `sm_100f` / `compute_100f` where nvcc has them, and the `CUDA_COMPUTE_CAP`-style
//! numbers `90` and `9.0` (portable only). Rejected, with a did-you-mean and the list of known
//! names: `sm90`, `SM_90`, `sm_090`, `09.0`, `sm_89a` (nvcc has no `a` for 8.9), `sm_90f`, and any
//! number not in the table (`sm_999`). A name in a row's [`ArchFacts::aliases`] parses as that row
//! (`sm_101*`, 11.0's name before CUDA 13, as `sm_110*`). Surrounding whitespace is ignored (lists
//! in environment variables).

use super::{all, ArchFacts};
use std::fmt;
use std::str::FromStr;

/// Which code an architecture name asks nvcc for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    /// `sm_90`: runs on this and, as PTX, later architectures.
    Portable,
    /// `sm_90a`: architecture-specific features, runs only on this compute capability.
    ArchSpecific,
    /// `sm_100f`: family-specific features, runs on the family (e.g. 10.0 and 10.3).
    FamilySpecific,
}

impl Variant {
    /// The letter nvcc appends: `""`, `"a"` or `"f"`.
    pub fn suffix(self) -> &'static str {
        match self {
            Variant::Portable => "",
            Variant::ArchSpecific => "a",
            Variant::FamilySpecific => "f",
        }
    }

    fn from_suffix(suffix: &str) -> Option<Variant> {
        match suffix {
            "" => Some(Variant::Portable),
            "a" => Some(Variant::ArchSpecific),
            "f" => Some(Variant::FamilySpecific),
            _ => None,
        }
    }
}

/// A GPU architecture nvcc accepts and the table knows: compute capability plus variant.
/// `Display` is the canonical real-architecture name (`sm_90a`); `FromStr` and serde accept every
/// spelling of the module's grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub struct Arch {
    /// `major * 10 + minor`: 90 for 9.0, 120 for 12.0.
    number: u32,
    variant: Variant,
}

impl Arch {
    /// Parses any accepted spelling (see the module doc).
    pub fn parse(text: &str) -> Result<Arch, UnknownArch> {
        let trimmed = text.trim();
        match parse_exact(trimmed) {
            Some((number, variant)) => Arch::known(number, variant).ok_or_else(|| {
                UnknownArch::new(text, Some(number).filter(|_| row(number).is_none()))
            }),
            None => Err(UnknownArch::new(text, None)),
        }
    }

    /// The architecture of a table row and variant, when nvcc has that variant. `number` is
    /// `major * 10 + minor` of the row or of one of its aliases (101 gives 11.0's row).
    pub fn known(number: u32, variant: Variant) -> Option<Arch> {
        let facts = row(number)?;
        let number = facts.major * 10 + facts.minor;
        let allowed = match variant {
            Variant::Portable => true,
            Variant::ArchSpecific => facts.arch_specific_variant,
            Variant::FamilySpecific => facts.family_variant,
        };
        allowed.then_some(Arch { number, variant })
    }

    /// Every architecture and variant the table accepts, oldest first.
    pub fn every() -> impl Iterator<Item = Arch> {
        all().iter().flat_map(|facts| {
            let number = facts.major * 10 + facts.minor;
            [
                Variant::Portable,
                Variant::ArchSpecific,
                Variant::FamilySpecific,
            ]
            .into_iter()
            .filter_map(move |variant| Arch::known(number, variant))
        })
    }

    /// The hardware facts of this architecture (the same row for `sm_90` and `sm_90a`).
    pub fn facts(self) -> &'static ArchFacts {
        row(self.number).expect("an Arch is only built for a table row")
    }

    /// `major * 10 + minor`.
    pub fn number(self) -> u32 {
        self.number
    }

    pub fn variant(self) -> Variant {
        self.variant
    }

    /// The portable architecture of the same compute capability (`sm_90a` -> `sm_90`).
    pub fn portable(self) -> Arch {
        Arch {
            number: self.number,
            variant: Variant::Portable,
        }
    }

    /// `compute_90a`: the virtual architecture nvcc generates PTX for.
    pub fn virtual_name(self) -> String {
        format!("compute_{}{}", self.number, self.variant.suffix())
    }
}

/// The table's row whose number, or one of whose [`ArchFacts::aliases`], is `number`.
fn row(number: u32) -> Option<&'static ArchFacts> {
    let alias_number = |alias: &&str| parse_exact(alias).map(|(number, _)| number);
    all().iter().find(|facts| {
        facts.major * 10 + facts.minor == number
            || facts
                .aliases
                .iter()
                .any(|alias| alias_number(alias) == Some(number))
    })
}

impl fmt::Display for Arch {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "sm_{}{}", self.number, self.variant.suffix())
    }
}

impl FromStr for Arch {
    type Err = UnknownArch;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Arch::parse(text)
    }
}

impl serde::Serialize for Arch {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Arch {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Arch::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// `(number, variant)` when `text` follows the grammar exactly, whether or not the table knows
/// the number.
fn parse_exact(text: &str) -> Option<(u32, Variant)> {
    if let Some((major, minor)) = text.split_once('.') {
        let major = digits_without_leading_zero(major, 1..=2)?;
        let minor =
            digits_without_leading_zero(minor, 1..=1).or_else(|| (minor == "0").then_some(0))?;
        return Some((major * 10 + minor, Variant::Portable));
    }
    let (body, variant) = match text
        .strip_prefix("sm_")
        .or_else(|| text.strip_prefix("compute_"))
    {
        Some(body) => match body.strip_suffix(['a', 'f']) {
            Some(digits) => (digits, Variant::from_suffix(&body[digits.len()..])?),
            None => (body, Variant::Portable),
        },
        None => (text, Variant::Portable),
    };
    Some((digits_without_leading_zero(body, 2..=3)?, variant))
}

fn digits_without_leading_zero(
    text: &str,
    lengths: std::ops::RangeInclusive<usize>,
) -> Option<u32> {
    let well_formed = lengths.contains(&text.len())
        && text.bytes().all(|byte| byte.is_ascii_digit())
        && !text.starts_with('0');
    well_formed.then(|| text.parse().ok()).flatten()
}

/// A name no architecture answers to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown architecture `{name}`{hint}; known: {known}{update}",
    hint = hint(self),
    known = known_names(),
    update = update_note(self)
)]
#[non_exhaustive]
pub struct UnknownArch {
    /// The name as given.
    pub name: String,
    /// A known spelling the name was probably meant as (`sm_90` for `sm90`).
    pub suggestion: Option<String>,
    /// The compute capability (`major * 10 + minor`) of a well-formed name the table lacks
    /// (`sm_130` -> 130): a newer architecture than this version of the tool knows.
    pub newer_than_table: Option<u32>,
}

impl UnknownArch {
    fn new(name: &str, newer_than_table: Option<u32>) -> UnknownArch {
        UnknownArch {
            name: name.to_string(),
            suggestion: suggest(name),
            newer_than_table,
        }
    }
}

fn hint(error: &UnknownArch) -> String {
    error
        .suggestion
        .as_ref()
        .map_or_else(String::new, |suggestion| {
            format!(" (did you mean `{suggestion}`?)")
        })
}

fn update_note(error: &UnknownArch) -> String {
    match (error.newer_than_table, &error.suggestion) {
        (Some(number), None) => format!(
            "; if your nvcc knows compute_{number}, occupancy {} needs an update",
            env!("CARGO_PKG_VERSION")
        ),
        _ => String::new(),
    }
}

/// Every known name with its variants (`sm_90/sm_90a`), for error messages.
pub fn known_names() -> String {
    let mut names: Vec<String> = Vec::new();
    for facts in all() {
        let number = facts.major * 10 + facts.minor;
        let variants: Vec<String> = Arch::every()
            .filter(|arch| arch.number == number)
            .map(|arch| arch.to_string())
            .collect();
        names.push(variants.join("/"));
    }
    format!(
        "{} (each also as compute_NN, or as NN / N.N for the plain sm_NN)",
        names.join(", ")
    )
}

/// The accepted spelling a near miss was meant as: case, a missing or doubled `_`, leading
/// zeros, a variant the architecture lacks (its portable name is suggested).
fn suggest(text: &str) -> Option<String> {
    let lowered: String = text
        .trim()
        .chars()
        .filter(|c| !matches!(c, '-' | ' '))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let (prefix, rest) = [
        ("compute_", "compute_"),
        ("compute", "compute_"),
        ("sm_", "sm_"),
        ("sm", "sm_"),
    ]
    .into_iter()
    .find_map(|(typed, canonical)| {
        lowered
            .strip_prefix(typed)
            .map(|rest| (Some(canonical), rest))
    })
    .unwrap_or((None, lowered.as_str()));
    let rest = rest.trim_start_matches('_');
    let candidate = if let Some((major, minor)) = rest.split_once('.') {
        let (major, minor) = (lenient_number(major)?, lenient_number(minor)?);
        let arch = Arch::known(major * 10 + minor, Variant::Portable).filter(|_| minor < 10)?;
        match prefix {
            Some(_) => arch.to_string(),
            None => format!("{major}.{minor}"),
        }
    } else {
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (digits, suffix) = rest.split_at(digits_end);
        let number = lenient_number(digits)?;
        let variant = Variant::from_suffix(suffix).unwrap_or(Variant::Portable);
        let arch =
            Arch::known(number, variant).or_else(|| Arch::known(number, Variant::Portable))?;
        match prefix {
            Some("compute_") => arch.virtual_name(),
            _ => arch.to_string(),
        }
    };
    (candidate != text.trim()).then_some(candidate)
}

fn lenient_number(digits: &str) -> Option<u32> {
    let significant = digits.trim_start_matches('0');
    let well_formed = !digits.is_empty()
        && significant.len() <= 3
        && digits.bytes().all(|byte| byte.is_ascii_digit());
    well_formed.then(|| significant.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests;
