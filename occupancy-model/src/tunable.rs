//! [`Tunable`]: a launch bound the attribute fixes, or leaves to the build.

use core::fmt;

/// The value of a launch-bound key (`min_blocks_per_sm`, `max_registers`): a number written in
/// the attribute, or `"auto"`, which lets the build choose it per target architecture by
/// assembling the kernel at each bound that changes its resident blocks and keeping the one its
/// objective prefers (`docs/declaring-kernels.md#choosing-bounds-automatically`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tunable {
    /// `min_blocks_per_sm = 4`: this value on every architecture.
    Fixed(u32),
    /// `min_blocks_per_sm = "auto"`: the build's choice on each architecture (possibly none).
    Auto,
}

impl Tunable {
    /// The value written, `None` for `"auto"`.
    #[inline]
    pub const fn fixed(self) -> Option<u32> {
        match self {
            Tunable::Fixed(value) => Some(value),
            Tunable::Auto => None,
        }
    }

    /// Whether the build chooses the value.
    #[inline]
    pub const fn is_auto(self) -> bool {
        matches!(self, Tunable::Auto)
    }
}

impl fmt::Display for Tunable {
    /// As the attribute writes it: `4` or `"auto"`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tunable::Fixed(value) => write!(formatter, "{value}"),
            Tunable::Auto => formatter.write_str("\"auto\""),
        }
    }
}

/// A number, or the string `"auto"`, as the attribute writes it.
#[cfg(feature = "serde")]
impl serde::Serialize for Tunable {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Tunable::Fixed(value) => serializer.serialize_u32(*value),
            Tunable::Auto => serializer.serialize_str("auto"),
        }
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Tunable {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Tunable;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a non-negative integer or \"auto\"")
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Tunable, E> {
                u32::try_from(value)
                    .map(Tunable::Fixed)
                    .map_err(|_| E::custom("a launch bound above u32"))
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Tunable, E> {
                match value {
                    "auto" => Ok(Tunable::Auto),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}
