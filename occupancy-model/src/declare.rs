//! `declare_keys!`: the list of the attribute's keys in `keys.rs` becomes [`Key`](crate::Key),
//! the registry [`KEYS`](crate::KEYS) and [`KernelSpec`](crate::KernelSpec)'s key fields, with
//! the accessors the grammar and the expansion use ([`KernelSpec::value`](crate::KernelSpec::value),
//! [`KernelSpec::value_mut`](crate::KernelSpec::value_mut)). Used once.

/// A key's value in a spec made by `KernelSpec::with_block(block)`.
macro_rules! key_initial {
    ($block:ident, Block) => {
        $block
    };
    ($block:ident, Integer, $default:literal) => {
        $default
    };
    ($block:ident, Flag) => {
        false
    };
    ($block:ident, $kind:ident) => {
        None
    };
}

/// A key's field as a [`Value`](crate::Value).
macro_rules! key_value {
    ($field:expr, Block) => {
        crate::Value::Block(*$field)
    };
    ($field:expr, Integer, $default:literal) => {
        crate::Value::Integer {
            value: *$field,
            default: $default,
        }
    };
    ($field:expr, Integer) => {
        crate::Value::OptionalInteger(*$field)
    };
    ($field:expr, IntegerOrAuto) => {
        crate::Value::Tunable(*$field)
    };
    ($field:expr, Fraction) => {
        crate::Value::Fraction(*$field)
    };
    ($field:expr, Symbol) => {
        crate::Value::Text($field.as_deref())
    };
    ($field:expr, Pattern) => {
        crate::Value::Text($field.as_deref())
    };
    ($field:expr, Archs) => {
        crate::Value::Archs($field.as_deref())
    };
    ($field:expr, Choice) => {
        crate::Value::Text($field.as_deref())
    };
    ($field:expr, Gpus) => {
        crate::Value::Gpus($field.as_deref())
    };
    ($field:expr, Cluster) => {
        crate::Value::Cluster(*$field)
    };
    ($field:expr, Flag) => {
        crate::Value::Flag(*$field)
    };
}

/// A key's field as a [`ValueMut`](crate::ValueMut).
macro_rules! key_value_mut {
    ($field:expr, Block) => {
        crate::ValueMut::Block($field)
    };
    ($field:expr, Integer, $default:literal) => {
        crate::ValueMut::Integer($field)
    };
    ($field:expr, Integer) => {
        crate::ValueMut::OptionalInteger($field)
    };
    ($field:expr, IntegerOrAuto) => {
        crate::ValueMut::Tunable($field)
    };
    ($field:expr, Fraction) => {
        crate::ValueMut::Fraction($field)
    };
    ($field:expr, Symbol) => {
        crate::ValueMut::Text($field)
    };
    ($field:expr, Pattern) => {
        crate::ValueMut::Text($field)
    };
    ($field:expr, Archs) => {
        crate::ValueMut::Archs($field)
    };
    ($field:expr, Choice) => {
        crate::ValueMut::Text($field)
    };
    ($field:expr, Gpus) => {
        crate::ValueMut::Gpus($field)
    };
    ($field:expr, Cluster) => {
        crate::ValueMut::Cluster($field)
    };
    ($field:expr, Flag) => {
        crate::ValueMut::Flag($field)
    };
}

/// Declares every `key = value` key of the attribute: generates [`Key`](crate::Key) (a variant
/// per key, in the list's order), `Key::ALL`, `Key::as_str`, the registry `KEYS`, and
/// [`KernelSpec`](crate::KernelSpec) with one field per key (documented by the key's
/// documentation) followed by the lint settings.
macro_rules! declare_keys {
    ($(
        $(#[doc = $doc:literal])+
        $variant:ident {
            key: $key:literal,
            field: $field:ident: $field_type:ty,
            value: $kind:ident $({ $($kind_field:ident: $kind_value:expr),+ $(,)? })?,
            $(default: $default:literal,)?
            unit: $unit:literal,
            when_absent: $absent:literal,
            summary: $summary:literal,
            example: $example:literal,
            aliases: [$($alias:literal),* $(,)?]
            $(, needs: [$($need:ident),+ $(,)?])? $(,)?
        }
    )+) => {
        /// A `key = value` key of `#[occupancy::kernel(...)]`, in documentation order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        #[non_exhaustive]
        pub enum Key {
            $(
                #[doc = concat!("`", $key, " = ", $example, "`")]
                #[cfg_attr(feature = "serde", serde(rename = $key))]
                $variant,
            )+
        }

        /// How many keys there are.
        const KEY_COUNT: usize = [$($key),+].len();

        impl Key {
            /// Every key, in documentation order.
            pub const ALL: [Key; KEY_COUNT] = [$(Key::$variant),+];

            /// The key as written in the attribute.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Key::$variant => $key,)+
                }
            }
        }

        /// Every key's declaration, in the order of [`Key::ALL`] (indexed by the key).
        pub static KEYS: [crate::KeyInfo; KEY_COUNT] = [$(
            crate::KeyInfo {
                key: Key::$variant,
                name: $key,
                field: stringify!($field),
                kind: crate::Kind::$kind $({ $($kind_field: $kind_value),+ })?,
                unit: $unit,
                when_absent: $absent,
                summary: $summary,
                example: $example,
                aliases: &[$($alias),*],
                needs: &[$($(Key::$need),+)?],
                doc: concat!($($doc, "\n"),+),
            },
        )+];

        /// One declaration, `#[occupancy::kernel(...)]`: the launch a kernel is made with and
        /// the limits it must meet, one field per key, then the lint settings.
        ///
        /// The build parses it from source (`occupancy_core::spec::KernelSpec`, owned); the
        /// attribute's expansion writes it into the kernel's const (`occupancy::KernelSpec`,
        /// [`Static`](crate::Static)). Every value is in range: only the grammar makes one.
        /// `Display` prints the attribute's arguments back in the canonical form, which parses
        /// to an equal spec.
        #[derive(Debug, Clone, PartialEq)]
        #[cfg_attr(
            feature = "serde",
            derive(serde::Serialize, serde::Deserialize),
            serde(bound(
                serialize = "S::Text: serde::Serialize, S::Archs: serde::Serialize, \
                    S::LintLevels: serde::Serialize, S::ExpectedLints: serde::Serialize, \
                    S::LintReasons: serde::Serialize",
                deserialize = "S::Text: serde::Deserialize<'de>, S::Archs: serde::Deserialize<'de>, \
                    S::LintLevels: serde::Deserialize<'de>, S::ExpectedLints: serde::Deserialize<'de>, \
                    S::LintReasons: serde::Deserialize<'de>"
            ))
        )]
        pub struct KernelSpec<S: crate::Storage> {
            $(
                $(#[doc = $doc])+
                pub $field: $field_type,
            )+
            /// `allow(...)`, `warn(...)`, `deny(...)`: this kernel's lint levels (see
            /// `docs/declaring-kernels.md#lint-levels`).
            pub lint_levels: S::LintLevels,
            /// `expect(...)`: lints whose finding must occur; the build fails when none does
            /// (like Rust's `#[expect]`), so the exception goes when it is no longer needed.
            pub expected_lints: S::ExpectedLints,
            /// `reason = "..."` written in a lint list: why the level or expectation was set.
            pub lint_reasons: S::LintReasons,
        }

        impl<S: crate::Storage> KernelSpec<S> {
            /// A spec with only a block: every other key absent (or at its default), no lint
            /// settings.
            pub fn with_block(block: crate::BlockDim) -> Self {
                KernelSpec {
                    $($field: key_initial!(block, $kind $(, $default)?),)+
                    lint_levels: Default::default(),
                    expected_lints: Default::default(),
                    lint_reasons: Default::default(),
                }
            }

            /// The value of `key`, whatever the storage: what the expansion writes, `Display`
            /// prints and tests compare.
            pub fn value(&self, key: Key) -> crate::Value<'_, S> {
                match key {
                    $(Key::$variant => key_value!(&self.$field, $kind $(, $default)?),)+
                }
            }

            /// The field of `key`, for the grammar to set.
            pub fn value_mut(&mut self, key: Key) -> crate::ValueMut<'_, S> {
                match key {
                    $(Key::$variant => key_value_mut!(&mut self.$field, $kind $(, $default)?),)+
                }
            }
        }
    };
}
