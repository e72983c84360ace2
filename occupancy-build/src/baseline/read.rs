//! Reading `occupancy.lock` strictly: a lock decides whether a build passes, so one that is not
//! exactly what a bless writes is refused, never read with a silent choice. Unknown keys, a key
//! twice in one object (`serde_json` would keep the last), an architecture the tool does not
//! know (or a spelling a bless never writes), an empty kernel or source name, registers above
//! 255, a negative or fractional byte count and an occupancy outside 0..=1 are errors that
//! name the line and column and say what is wrong: a value out of range is a bad lock, not a
//! regression.
//!
//! Schema 1 (`kernels: {name: {arch: numbers}}`, one toolchain stamp per arch) is read too: its
//! entries become [`Baseline::unattributed`], compared by kernel name until a bless moves them
//! under their sources.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use occupancy_core::lint::evaluate::BaselineNumbers;
use occupancy_core::spec::{MAX_BLOCKS_PER_SM_ANY_ARCH, MAX_REGISTERS_PER_THREAD_ANY_ARCH};
use occupancy_core::tune::Bound;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::{ArchEntries, Baseline, Versions, SCHEMA_VERSION};

/// Why a lock's text is not a baseline.
#[derive(Debug)]
pub enum ParseError {
    /// Not exactly a baseline of a schema this version reads: the JSON error, with its line and
    /// column.
    Invalid(serde_json::Error),
    /// A `schema_version` this version does not read.
    Unsupported(u32),
}

/// A lock's text as read: the baseline, and the schema the file was written in (1: converted).
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub baseline: Baseline,
    pub schema_version: u32,
}

/// Parses a lock's bytes (schema 1 or 2), refusing anything a bless would not write (bytes
/// that are not UTF-8 too, at their line).
pub fn parse(text: &[u8]) -> Result<Parsed, ParseError> {
    /// Only the version, read first so that another schema gets a version error rather than a
    /// confusing field error; every other key is skipped here.
    #[derive(Deserialize)]
    struct Version {
        schema_version: u32,
    }
    let version: Version = serde_json::from_slice(text).map_err(ParseError::Invalid)?;
    let baseline = match version.schema_version {
        1 => serde_json::from_slice::<FileV1>(text).map(FileV1::into_baseline),
        SCHEMA_VERSION => serde_json::from_slice::<FileV2>(text).map(FileV2::into_baseline),
        other => return Err(ParseError::Unsupported(other)),
    }
    .map_err(ParseError::Invalid)?;
    Ok(Parsed {
        baseline,
        schema_version: version.schema_version,
    })
}

/// Schema 2, as [`Baseline`] writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV2 {
    #[serde(rename = "schema_version")]
    _schema_version: u32,
    toolchains: StrictMap<ArchName, VersionsFile>,
    sources: StrictMap<SourceName, StrictMap<ArchName, EntriesFile>>,
    #[serde(default)]
    unattributed: StrictMap<ArchName, EntriesFile>,
}

impl FileV2 {
    fn into_baseline(self) -> Baseline {
        Baseline {
            schema_version: SCHEMA_VERSION,
            toolchains: self
                .toolchains
                .0
                .into_iter()
                .map(|(arch, versions)| (arch.0, versions.into()))
                .collect(),
            sources: self
                .sources
                .0
                .into_iter()
                .map(|(source, archs)| (source.0, entries_by_arch(archs)))
                .collect(),
            unattributed: entries_by_arch(self.unattributed),
        }
    }
}

fn entries_by_arch(archs: StrictMap<ArchName, EntriesFile>) -> BTreeMap<String, ArchEntries> {
    archs
        .0
        .into_iter()
        .map(|(arch, entries)| (arch.0, entries.into()))
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VersionsFile {
    nvcc: String,
    ptxas: String,
}

impl From<VersionsFile> for Versions {
    fn from(file: VersionsFile) -> Versions {
        Versions {
            nvcc: file.nvcc,
            ptxas: file.ptxas,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntriesFile {
    flags: Vec<String>,
    kernels: StrictMap<KernelName, NumbersFile>,
}

impl From<EntriesFile> for ArchEntries {
    fn from(file: EntriesFile) -> ArchEntries {
        ArchEntries {
            flags: file.flags,
            kernels: file
                .kernels
                .0
                .into_iter()
                .map(|(kernel, numbers)| (kernel.0, numbers.into()))
                .collect(),
        }
    }
}

/// Schema 1: one stamp per arch (with its flags), kernels by name without their source.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV1 {
    #[serde(rename = "schema_version")]
    _schema_version: u32,
    #[serde(default)]
    toolchains: StrictMap<ArchName, StampV1>,
    kernels: StrictMap<KernelName, StrictMap<ArchName, NumbersFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StampV1 {
    nvcc: String,
    ptxas: String,
    #[serde(default)]
    flags: Vec<String>,
}

impl FileV1 {
    /// The entries under [`Baseline::unattributed`], each arch with the flags of its stamp.
    fn into_baseline(self) -> Baseline {
        let mut baseline = Baseline::default();
        let mut flags = BTreeMap::new();
        for (arch, stamp) in self.toolchains.0 {
            flags.insert(arch.0.clone(), stamp.flags);
            let versions = Versions {
                nvcc: stamp.nvcc,
                ptxas: stamp.ptxas,
            };
            baseline.toolchains.insert(arch.0, versions);
        }
        for (kernel, archs) in self.kernels.0 {
            for (arch, numbers) in archs.0 {
                let entries = baseline
                    .unattributed
                    .entry(arch.0)
                    .or_insert_with_key(|arch| ArchEntries {
                        flags: flags.get(arch).cloned().unwrap_or_default(),
                        kernels: BTreeMap::new(),
                    });
                entries.kernels.insert(kernel.0.clone(), numbers.into());
            }
        }
        baseline
    }
}

/// One kernel's numbers on one arch, each value checked where it is read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NumbersFile {
    #[serde(deserialize_with = "registers")]
    registers: u32,
    #[serde(deserialize_with = "spill_store_bytes")]
    spill_store_bytes: u64,
    #[serde(deserialize_with = "spill_load_bytes")]
    spill_load_bytes: u64,
    #[serde(deserialize_with = "stack_frame_bytes")]
    stack_frame_bytes: u64,
    #[serde(deserialize_with = "static_smem_bytes")]
    static_smem_bytes: u64,
    #[serde(deserialize_with = "occupancy")]
    occupancy: f64,
    #[serde(default, deserialize_with = "chosen_bounds")]
    chosen_bounds: Option<Bound>,
}

impl From<NumbersFile> for BaselineNumbers {
    fn from(file: NumbersFile) -> BaselineNumbers {
        BaselineNumbers {
            registers: file.registers,
            spill_store_bytes: file.spill_store_bytes,
            spill_load_bytes: file.spill_load_bytes,
            stack_frame_bytes: file.stack_frame_bytes,
            static_smem_bytes: file.static_smem_bytes,
            occupancy: file.occupancy,
            chosen_bounds: file.chosen_bounds,
        }
    }
}

/// `chosen_bounds`: `"none"`, `"no_launch_bounds"`, `{"min_blocks_per_sm": B}` (1 to 32) or
/// `{"max_registers": R}` (1 to 255), as a bless writes it.
fn chosen_bounds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Bound>, D::Error> {
    let bound = Bound::deserialize(deserializer)?;
    let in_range = match bound {
        Bound::None | Bound::NoLaunchBounds => true,
        Bound::MinBlocksPerSm(blocks) => (1..=MAX_BLOCKS_PER_SM_ANY_ARCH).contains(&blocks),
        Bound::MaxRegisters(registers) => {
            (1..=MAX_REGISTERS_PER_THREAD_ANY_ARCH).contains(&registers)
        }
    };
    match in_range {
        true => Ok(Some(bound)),
        false => Err(de::Error::custom(format!(
            "`chosen_bounds` out of range: `{bound}` is no bound a build chooses"
        ))),
    }
}

/// The most registers ptxas gives a thread.
pub const MAX_REGISTERS: u64 = 255;

fn registers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let value = deserializer.deserialize_any(Count {
        key: "registers",
        max: MAX_REGISTERS,
    })?;
    u32::try_from(value).map_err(|_| de::Error::custom("`registers` out of range"))
}

fn spill_store_bytes<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    deserializer.deserialize_any(Count::bytes("spill_store_bytes"))
}

fn spill_load_bytes<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    deserializer.deserialize_any(Count::bytes("spill_load_bytes"))
}

fn stack_frame_bytes<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    deserializer.deserialize_any(Count::bytes("stack_frame_bytes"))
}

fn static_smem_bytes<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    deserializer.deserialize_any(Count::bytes("static_smem_bytes"))
}

/// A whole number from 0 to `max`, named `key` in the error.
struct Count {
    key: &'static str,
    max: u64,
}

impl Count {
    fn bytes(key: &'static str) -> Count {
        Count { key, max: u64::MAX }
    }

    fn what(&self) -> &'static str {
        if self.key == "registers" {
            "a register count"
        } else {
            "a byte count"
        }
    }

    fn too_big<E: de::Error>(&self, value: impl fmt::Display) -> E {
        let limit = if self.key == "registers" {
            format!("more than the {} registers ptxas gives a thread", self.max)
        } else {
            "more than 64 bits hold".to_string()
        };
        E::custom(format!("`{}` is {value}, {limit}", self.key))
    }

    fn negative<E: de::Error>(&self, value: impl fmt::Display) -> E {
        E::custom(format!(
            "`{}` is {value}: {} cannot be negative",
            self.key,
            self.what()
        ))
    }
}

impl Visitor<'_> for Count {
    type Value = u64;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "`{}`: a whole number from 0 to {}",
            self.key, self.max
        )
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<u64, E> {
        if value > self.max {
            return Err(self.too_big(value));
        }
        Ok(value)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<u64, E> {
        match u64::try_from(value) {
            Ok(value) => self.visit_u64(value),
            Err(_) => Err(self.negative(value)),
        }
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<u64, E> {
        if value < 0.0 {
            return Err(self.negative(value));
        }
        // `as` saturates: 2^64 and more stay above u64::MAX.
        if value.is_finite() && value.fract() == 0.0 && value as u128 > u128::from(self.max) {
            return Err(self.too_big(value));
        }
        Err(E::custom(format!(
            "`{}` is {value}: {} is written as a whole number, without a decimal point",
            self.key,
            self.what()
        )))
    }
}

fn occupancy<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    deserializer.deserialize_any(Fraction)
}

/// `occupancy`: a finite fraction from 0 to 1.
struct Fraction;

impl Visitor<'_> for Fraction {
    type Value = f64;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("`occupancy`: a fraction from 0 to 1")
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<f64, E> {
        if value.is_finite() && (0.0..=1.0).contains(&value) {
            return Ok(value);
        }
        Err(E::custom(format!(
            "`occupancy` is {value}: occupancy is a fraction from 0 to 1 (0.5 is 50%)"
        )))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<f64, E> {
        match value {
            0 => Ok(0.0),
            1 => Ok(1.0),
            _ => self.visit_f64(value as f64),
        }
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<f64, E> {
        match u64::try_from(value) {
            Ok(value) => self.visit_u64(value),
            Err(_) => self.visit_f64(value as f64),
        }
    }
}

/// A JSON object read into a sorted map, refusing a key that appears twice (`serde_json` keeps
/// the last of two without a word).
#[derive(Debug)]
struct StrictMap<K, V>(BTreeMap<K, V>);

impl<K, V> Default for StrictMap<K, V> {
    fn default() -> Self {
        StrictMap(BTreeMap::new())
    }
}

impl<'de, K, V> Deserialize<'de> for StrictMap<K, V>
where
    K: Deserialize<'de> + Ord + fmt::Display,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(StrictMapVisitor(PhantomData))
    }
}

struct StrictMapVisitor<K, V>(PhantomData<(K, V)>);

impl<'de, K, V> Visitor<'de> for StrictMapVisitor<K, V>
where
    K: Deserialize<'de> + Ord + fmt::Display,
    V: Deserialize<'de>,
{
    type Value = StrictMap<K, V>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut map = BTreeMap::new();
        while let Some(key) = access.next_key::<K>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "`{key}` appears twice in one object; a baseline names each key once"
                )));
            }
            let value = access.next_value()?;
            map.insert(key, value);
        }
        Ok(StrictMap(map))
    }
}

/// A key of the lock: a string checked by `check` where it is read.
macro_rules! checked_name {
    ($name:ident, $check:expr) => {
        #[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
        struct $name(String);

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                let check: fn(&str) -> Result<(), String> = $check;
                check(&text).map_err(de::Error::custom)?;
                Ok($name(text))
            }
        }
    };
}

checked_name!(ArchName, check_arch);
checked_name!(KernelName, |name| match name.is_empty() {
    true => Err("a kernel name is empty; each entry is keyed by its kernel's symbol".into()),
    false => Ok(()),
});
checked_name!(SourceName, |name| match name.is_empty() {
    true => Err("a source name is empty; each group is keyed by the file compiled".into()),
    false => Ok(()),
});

/// An architecture the tool knows, spelled as a bless writes it (`sm_90`, `sm_90a`).
fn check_arch(name: &str) -> Result<(), String> {
    match occupancy_core::arch::Arch::parse(name) {
        Ok(arch) if arch.to_string() == name => Ok(()),
        Ok(arch) => Err(format!(
            "architecture `{name}` is spelled `{arch}` in a baseline"
        )),
        Err(_) => Err(format!(
            "unknown architecture `{name}`; known: {}",
            occupancy_core::arch::known_names()
        )),
    }
}
