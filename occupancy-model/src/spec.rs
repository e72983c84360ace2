//! What a key's declaration holds ([`KeyInfo`], [`Kind`]), a key's value in any storage
//! ([`Value`], [`ValueMut`]), and what a [`KernelSpec`] says about itself.

use core::fmt;

use crate::{BlockDim, ClusterDim, KernelSpec, Key, Level, Static, Storage, Tunable, KEYS};

/// Everything the toolkit knows about one key, from its one declaration in `keys.rs`.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct KeyInfo {
    /// The key.
    pub key: Key,
    /// As written in the attribute (`max_spill_bytes`); the anchor of its section in
    /// `docs/declaring-kernels.md`.
    pub name: &'static str,
    /// The [`KernelSpec`] field it sets (`dynamic_smem` sets `dynamic_smem_bytes`).
    pub field: &'static str,
    /// What the grammar accepts, and its range.
    pub kind: Kind,
    /// What the number counts (`bytes per thread`).
    pub unit: &'static str,
    /// What leaving the key out means.
    pub when_absent: &'static str,
    /// One line for the keys table.
    pub summary: &'static str,
    /// A value to show in messages (`write `max_spill_bytes = 0``).
    pub example: &'static str,
    /// Words people write for this key, suggested as it (`maxnreg` → `max_registers`).
    pub aliases: &'static [&'static str],
    /// The keys it cannot be written without (`grid_blocks` needs `launch` and `gpus`); each
    /// needs none itself. The grammar refuses the key alone, naming what to add.
    pub needs: &'static [Key],
    /// Its documentation: the key's section of `docs/declaring-kernels.md` and its field's doc.
    pub doc: &'static str,
}

/// The value a key takes, and how the grammar validates it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// `256`, `(32, 8)` or `(8, 8, 4)`: each dimension and the product within every GPU's
    /// limits.
    Block,
    /// A non-negative integer literal without suffix, `min..=max`.
    Integer {
        /// The smallest value accepted.
        min: u32,
        /// The largest value accepted.
        max: u32,
        /// Why a larger value is refused (shown in the error).
        why_max: &'static str,
    },
    /// A non-negative integer literal, `min..=max`, or the string `"auto"`: a launch bound the
    /// build may choose ([`Tunable`]).
    IntegerOrAuto {
        /// The smallest value accepted.
        min: u32,
        /// The largest value accepted.
        max: u32,
        /// Why a larger value is refused (shown in the error).
        why_max: &'static str,
    },
    /// A fraction in (0, 1] (`0.5`, `1`) or a percentage (`"50%"`).
    Fraction,
    /// A compiled kernel's symbol: a non-empty string, no surrounding whitespace.
    Symbol,
    /// A pattern of symbols with `*` for any run of characters.
    Pattern,
    /// A non-empty list of distinct architecture names.
    Archs,
    /// One of a few words, as a string (`"cooperative"`).
    Choice {
        /// The words accepted.
        choices: &'static [&'static str],
    },
    /// A non-empty list of distinct GPU products, by the names of `cargo occupancy arch --gpus`.
    Gpus,
    /// `2`, `(2, 2)` or `(2, 2, 2)`: blocks per cluster, each dimension at least 1, at most
    /// [`MAX_CLUSTER_BLOCKS_ANY_ARCH`](crate::MAX_CLUSTER_BLOCKS_ANY_ARCH) in all.
    Cluster,
    /// `true` or `false`.
    Flag,
}

impl fmt::Display for Kind {
    /// The value column of the keys table.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Block => formatter.write_str("`x`, `(x, y)` or `(x, y, z)`"),
            Kind::Integer { min, max, .. } if *max == u32::MAX => {
                write!(formatter, "integer, at least {min}")
            }
            Kind::Integer { min, max, .. } => write!(formatter, "integer, {min} to {max}"),
            Kind::IntegerOrAuto { min, max, .. } => {
                write!(formatter, "integer, {min} to {max}, or `\"auto\"`")
            }
            Kind::Fraction => formatter.write_str("fraction in (0, 1], or `\"N%\"`"),
            Kind::Symbol => formatter.write_str("string"),
            Kind::Pattern => formatter.write_str("string with `*`"),
            Kind::Archs => formatter.write_str("list of strings"),
            Kind::Choice { choices } => {
                for (index, choice) in choices.iter().enumerate() {
                    let separator = match index {
                        0 => "",
                        _ if index + 1 == choices.len() => " or ",
                        _ => ", ",
                    };
                    write!(formatter, "{separator}`\"{choice}\"`")?;
                }
                Ok(())
            }
            Kind::Gpus => formatter.write_str("list of GPU names"),
            Kind::Cluster => formatter.write_str("`x`, `(x, y)` or `(x, y, z)` blocks"),
            Kind::Flag => formatter.write_str("`true` or `false`"),
        }
    }
}

/// One key's value in a [`KernelSpec`] of any storage (see [`KernelSpec::value`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a, S: Storage> {
    /// [`Kind::Block`].
    Block(BlockDim),
    /// [`Kind::Integer`] of a key with a default.
    Integer {
        /// The value.
        value: u32,
        /// What it is when the attribute leaves the key out.
        default: u32,
    },
    /// [`Kind::Integer`] of a key without a default.
    OptionalInteger(Option<u32>),
    /// [`Kind::IntegerOrAuto`].
    Tunable(Option<Tunable>),
    /// [`Kind::Fraction`].
    Fraction(Option<f64>),
    /// [`Kind::Symbol`], [`Kind::Pattern`] and [`Kind::Choice`].
    Text(Option<&'a str>),
    /// [`Kind::Archs`].
    Archs(Option<&'a [S::Text]>),
    /// [`Kind::Gpus`].
    Gpus(Option<&'a [S::Text]>),
    /// [`Kind::Cluster`].
    Cluster(Option<ClusterDim>),
    /// [`Kind::Flag`] (absent is `false`).
    Flag(bool),
}

impl<S: Storage> Value<'_, S> {
    /// Whether the attribute wrote the key (a key with a default counts as written when its
    /// value differs from the default).
    pub fn is_set(&self) -> bool {
        match self {
            Value::Block(_) => true,
            Value::Integer { value, default } => value != default,
            Value::OptionalInteger(value) => value.is_some(),
            Value::Tunable(value) => value.is_some(),
            Value::Fraction(value) => value.is_some(),
            Value::Text(value) => value.is_some(),
            Value::Archs(value) | Value::Gpus(value) => value.is_some(),
            Value::Cluster(value) => value.is_some(),
            Value::Flag(value) => *value,
        }
    }
}

impl<S: Storage> fmt::Display for Value<'_, S> {
    /// The value as the attribute writes it (`256`, `0.5`, `"saxpy"`, `["sm_80", "sm_90"]`);
    /// nothing for an absent value.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Block(block) => write!(formatter, "{block}"),
            Value::Integer { value, .. } | Value::OptionalInteger(Some(value)) => {
                write!(formatter, "{value}")
            }
            Value::Tunable(Some(value)) => write!(formatter, "{value}"),
            // f64's Display is the shortest text that parses back to the same value.
            Value::Fraction(Some(fraction)) => write!(formatter, "{fraction}"),
            Value::Text(Some(text)) => write!(formatter, "{text:?}"),
            Value::Cluster(Some(cluster)) => write!(formatter, "{cluster}"),
            Value::Flag(flag) => write!(formatter, "{flag}"),
            Value::Archs(Some(names)) | Value::Gpus(Some(names)) => {
                formatter.write_str("[")?;
                for (index, name) in names.iter().enumerate() {
                    let separator = if index == 0 { "" } else { ", " };
                    write!(formatter, "{separator}{:?}", &**name)?;
                }
                formatter.write_str("]")
            }
            Value::OptionalInteger(None)
            | Value::Tunable(None)
            | Value::Fraction(None)
            | Value::Text(None)
            | Value::Archs(None)
            | Value::Gpus(None)
            | Value::Cluster(None) => Ok(()),
        }
    }
}

/// One key's field in a [`KernelSpec`], to set (see [`KernelSpec::value_mut`]).
#[derive(Debug)]
pub enum ValueMut<'a, S: Storage> {
    /// [`Kind::Block`].
    Block(&'a mut BlockDim),
    /// [`Kind::Integer`] of a key with a default.
    Integer(&'a mut u32),
    /// [`Kind::Integer`] of a key without a default.
    OptionalInteger(&'a mut Option<u32>),
    /// [`Kind::IntegerOrAuto`].
    Tunable(&'a mut Option<Tunable>),
    /// [`Kind::Fraction`].
    Fraction(&'a mut Option<f64>),
    /// [`Kind::Symbol`], [`Kind::Pattern`] and [`Kind::Choice`].
    Text(&'a mut Option<S::Text>),
    /// [`Kind::Archs`].
    Archs(&'a mut Option<S::Archs>),
    /// [`Kind::Gpus`].
    Gpus(&'a mut Option<S::Archs>),
    /// [`Kind::Cluster`].
    Cluster(&'a mut Option<ClusterDim>),
    /// [`Kind::Flag`].
    Flag(&'a mut bool),
}

/// The arguments of the smallest declaration that sets `key` to its example, as `Display` prints
/// a spec: `block = 32` (or `block`'s example), the key and the keys it [`needs`](KeyInfo::needs),
/// each at its example, in the keys' order (`block = 32, launch = "cooperative", grid_blocks_per_sm = 2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExampleArguments(pub Key);

impl fmt::Display for ExampleArguments {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let wanted = |key: Key| key == self.0 || self.0.info().needs.contains(&key);
        for key in Key::ALL {
            match key {
                Key::Block if self.0 == Key::Block => {
                    write!(formatter, "block = {}", key.info().example)?
                }
                Key::Block => formatter.write_str("block = 32")?,
                _ if wanted(key) => write!(formatter, ", {key} = {}", key.info().example)?,
                _ => {}
            }
        }
        Ok(())
    }
}

impl Key {
    /// The key's declaration.
    pub fn info(self) -> &'static KeyInfo {
        &KEYS[self as usize]
    }
}

impl fmt::Display for Key {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl Copy for KernelSpec<Static> {}

impl<S: Storage> KernelSpec<S> {
    /// The spill bytes the `spills` lint accepts: `max_spill_bytes`, 0 when not declared.
    pub fn spill_bytes_allowed(&self) -> u32 {
        self.max_spill_bytes.unwrap_or(0)
    }

    /// The level of the lint named `lint` (e.g. `"spills"`) set in this declaration, if any.
    pub fn lint_level(&self, lint: &str) -> Option<Level> {
        S::lint_levels(&self.lint_levels)
            .find(|(set, _)| S::lint_name(*set) == lint)
            .map(|(_, level)| level)
    }

    /// The `reason = "..."` given for `lint`, if any.
    pub fn lint_reason(&self, lint: S::Lint) -> Option<&str> {
        S::lint_reasons(&self.lint_reasons)
            .find(|(given, _)| *given == lint)
            .map(|(_, reason)| reason)
    }

    /// `word(a, b)` for the lints of one list without a reason, then `word(c, reason = "...")`
    /// per reason, in the reasons' order.
    fn write_lint_list<I: Iterator<Item = S::Lint>>(
        &self,
        formatter: &mut fmt::Formatter<'_>,
        word: &str,
        lints: impl Fn() -> I,
    ) -> fmt::Result {
        let mut reason: Option<&str> = None;
        loop {
            let mut of_reason = lints()
                .filter(|lint| self.lint_reason(*lint) == reason)
                .peekable();
            if of_reason.peek().is_some() {
                write!(formatter, ", {word}(")?;
                for (index, lint) in of_reason.enumerate() {
                    let separator = if index == 0 { "" } else { ", " };
                    write!(formatter, "{separator}{}", S::lint_name(lint))?;
                }
                match reason {
                    Some(reason) => write!(formatter, ", reason = {reason:?})")?,
                    None => formatter.write_str(")")?,
                }
            }
            // The next reason in order: the smallest one after this one.
            reason = lints()
                .filter_map(|lint| self.lint_reason(lint))
                .filter(|next| reason.is_none_or(|current| *next > current))
                .min();
            if reason.is_none() {
                return Ok(());
            }
        }
    }
}

impl<S: Storage> fmt::Display for KernelSpec<S> {
    /// The canonical attribute arguments, e.g. `block = (32, 8), min_occupancy = 0.5, warn(spills)`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut separator = "";
        for key in Key::ALL {
            let value = self.value(key);
            if value.is_set() {
                write!(formatter, "{separator}{key} = {value}")?;
                separator = ", ";
            }
        }
        for level in Level::ALL {
            self.write_lint_list(formatter, level.as_str(), || {
                S::lint_levels(&self.lint_levels)
                    .filter(move |(_, set)| *set == level)
                    .map(|(lint, _)| lint)
            })?;
        }
        self.write_lint_list(formatter, "expect", || {
            S::expected_lints(&self.expected_lints)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry is indexed by the key, and each key's field holds a value of its kind: what
    /// the grammar and the expansion rely on when they handle a key by its kind alone.
    #[test]
    fn each_key_is_its_own_entry_and_its_field_holds_its_kind() {
        let spec = KernelSpec::<Static>::with_block(BlockDim::linear(32));
        for key in Key::ALL {
            let info = key.info();
            assert_eq!((info.key, info.name), (key, key.as_str()));
            let fits = matches!(
                (info.kind, spec.value(key)),
                (Kind::Block, Value::Block(_))
                    | (
                        Kind::Integer { .. },
                        Value::Integer { .. } | Value::OptionalInteger(_)
                    )
                    | (Kind::IntegerOrAuto { .. }, Value::Tunable(_))
                    | (Kind::Fraction, Value::Fraction(_))
                    | (
                        Kind::Symbol | Kind::Pattern | Kind::Choice { .. },
                        Value::Text(_)
                    )
                    | (Kind::Archs, Value::Archs(_))
                    | (Kind::Gpus, Value::Gpus(_))
                    | (Kind::Cluster, Value::Cluster(_))
                    | (Kind::Flag, Value::Flag(_))
            );
            assert!(
                fits,
                "`{}`: its field does not hold a {:?}",
                info.name, info.kind
            );
            // Only `block` is written by `with_block`: every other key starts absent.
            assert_eq!(spec.value(key).is_set(), key == Key::Block, "{}", info.name);
        }
    }

    /// A key's needs are other keys that need nothing themselves, so one level of them makes a
    /// declaration ([`ExampleArguments`]).
    #[test]
    fn needed_keys_need_nothing() {
        for info in &KEYS {
            for need in info.needs {
                assert_ne!(*need, info.key, "{}", info.name);
                assert!(
                    need.info().needs.is_empty(),
                    "{} needs {need}, which needs more",
                    info.name
                );
            }
        }
    }

    /// A word is one key's name or alias, never two keys'.
    #[test]
    fn names_and_aliases_are_distinct() {
        let words = KEYS
            .iter()
            .flat_map(|info| core::iter::once(info.name).chain(info.aliases.iter().copied()));
        for (index, word) in words.clone().enumerate() {
            assert!(
                words.clone().skip(index + 1).all(|other| other != word),
                "`{word}` is written twice in keys.rs"
            );
        }
    }
}
