//! The nvcc tap's kept reports of ptxas (`<output>.ptxas`, `cargo occupancy build --tap`), read
//! by `check`'s log front end and joined to the rows read from binaries: what only ptxas's text
//! says (a dropped minimum, an ignored register cap) for code a binary holds.
//!
//! Rows stay the binaries'. Each report (`k.o.ptxas`, read by `check`'s log
//! front end) gives its kernels' records under (the output's file name, kernel, arch). A row
//! read from a binary takes the warnings of the record of its own object (`libk.a(k.o)` →
//! `k.o`) on its own arch, when their registers agree; a module that is no report's output (a
//! device-linked `_dlink.o`) takes those of its kernel and arch when every report agrees on
//! them. The warnings then make their findings as in a log (`unreachable_bound` for a dropped
//! minimum, `register_cap_ignored`), at the binary's row. A warning that joins no row is said.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use occupancy_core::ptxas::KernelRecord;

use crate::cmd::log_input;
use crate::error::CliError;

/// (output file name, kernel symbol, arch).
type Key = (String, String, String);

/// What a report said of one kernel on one arch.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Kept {
    registers: Option<u32>,
    warnings: Vec<String>,
    report: String,
}

/// A package's kept reports, read, and which of their warnings joined a row.
#[derive(Debug, Default)]
pub struct TapReports {
    kept: BTreeMap<Key, Kept>,
    /// Reports of compiles whose modules had no entry function (host code, device functions).
    without_kernels: usize,
    joined: RefCell<BTreeSet<Key>>,
    disagreed: Cell<usize>,
}

impl TapReports {
    /// Reads each report through `check`'s log front end (a report of a compile that failed
    /// is not kept by the tap; one that holds a compiler error is an error here as in a log).
    pub fn read(paths: &[PathBuf]) -> Result<TapReports, CliError> {
        let mut reports = TapReports::default();
        for path in paths {
            let name = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned());
            let name = name.unwrap_or_default();
            let output = name
                .strip_suffix(crate::tap::REPORT_SUFFIX)
                .unwrap_or(&name);
            let shown = occupancy_build::cli::shown_path(path);
            let read = log_input::read_compile_report(path, |record| {
                let kept = Kept {
                    registers: record.registers,
                    warnings: record.warnings,
                    report: shown.clone(),
                };
                let key = (output.to_owned(), record.name, record.arch);
                reports.kept.insert(key, kept);
                Ok(())
            })?;
            match read {
                Some(read) => log_input::conclude(&shown, &read, log_input::LogPolicy::default())?,
                None => reports.without_kernels += 1,
            }
        }
        Ok(reports)
    }

    /// How many reports were read into kernel records.
    pub fn records(&self) -> usize {
        self.kept.len()
    }

    /// How many reports were of compiles without an entry function.
    pub fn without_kernels(&self) -> usize {
        self.without_kernels
    }

    /// Gives `record` (a kernel read from the binary module `module`) the warnings its report
    /// has and it lacks.
    pub fn join(&self, module: &str, record: &mut KernelRecord) {
        let Some((key, kept)) = self.find(module, record) else {
            return;
        };
        if kept.registers.is_some()
            && record.registers.is_some()
            && kept.registers != record.registers
        {
            self.disagreed.set(self.disagreed.get() + 1);
            return;
        }
        for warning in &kept.warnings {
            if !record.warnings.contains(warning) {
                record.warnings.push(warning.clone());
            }
        }
        self.joined.borrow_mut().insert(key);
    }

    /// The record of the kernel's own object, else the one all reports agree on.
    fn find(&self, module: &str, record: &KernelRecord) -> Option<(Key, &Kept)> {
        let own = (member(module), record.name.clone(), record.arch.clone());
        if let Some(kept) = self.kept.get(&own) {
            return Some((own, kept));
        }
        let mut same = (self.kept.iter())
            .filter(|((_, name, arch), _)| *name == record.name && *arch == record.arch);
        let (key, first) = same.next()?;
        let agree = same
            .all(|(_, kept)| kept.warnings == first.warnings && kept.registers == first.registers);
        agree.then(|| (key.clone(), first))
    }

    /// Says, for `package`, the warnings that joined no row and the records whose registers
    /// were not the binary's.
    pub fn say_unjoined(&self, package: &str) {
        let joined = self.joined.borrow();
        for (key, kept) in &self.kept {
            if joined.contains(key) {
                continue;
            }
            let (output, name, arch) = key;
            for warning in &kept.warnings {
                eprintln!(
                    "warning: `{package}`: ptxas warned about `{name}` on {arch} compiling {output} ({}), and no row of it was read from a binary: {warning}",
                    kept.report
                );
            }
        }
        if self.disagreed.get() > 0 {
            eprintln!(
                "warning: `{package}`: {} kernel record(s) of the tap's reports give other registers than the binary: not of this code, not joined",
                self.disagreed.get()
            );
        }
    }
}

/// The object a binary module names: `libk.a(k.o)` → `k.o`, `out/k.fatbin` → `k.fatbin`.
fn member(module: &str) -> String {
    if let Some(inner) = module
        .strip_suffix(')')
        .and_then(|rest| rest.rsplit_once('('))
    {
        return inner.1.to_owned();
    }
    let name = Path::new(module).file_name();
    name.map_or_else(
        || module.to_owned(),
        |name| name.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use occupancy_core::ptxas::RecordSource;

    fn record(name: &str, arch: &str, registers: u32) -> KernelRecord {
        let mut record = KernelRecord::new(name, None, arch.into(), true, RecordSource::PtxasLog);
        record.registers = Some(registers);
        record
    }

    fn kept(registers: u32, warning: &str) -> Kept {
        Kept {
            registers: Some(registers),
            warnings: vec![warning.to_owned()],
            report: "r".into(),
        }
    }

    fn key(output: &str, name: &str, arch: &str) -> Key {
        (output.into(), name.into(), arch.into())
    }

    #[test]
    fn members_are_named_as_their_objects() {
        assert_eq!(member("libk.a(x-k.o)"), "x-k.o");
        assert_eq!(member("target/out/libk.a(x-k.o)"), "x-k.o");
        assert_eq!(member("out/k.fatbin"), "k.fatbin");
    }

    #[test]
    fn warnings_join_the_row_of_their_own_object_and_arch() {
        let mut reports = TapReports::default();
        reports
            .kept
            .insert(key("a.o", "k", "sm_80"), kept(8, "dropped"));
        reports
            .kept
            .insert(key("b.o", "k", "sm_80"), kept(8, "other"));
        let mut own = record("k", "sm_80", 8);
        reports.join("libk.a(a.o)", &mut own);
        assert_eq!(own.warnings, ["dropped"]);
        let mut other_arch = record("k", "sm_90", 8);
        reports.join("libk.a(a.o)", &mut other_arch);
        assert!(other_arch.warnings.is_empty());
        // Reports that disagree give a module of no report's output nothing.
        let mut linked = record("k", "sm_80", 8);
        reports.join("libk.a(k_dlink.o)", &mut linked);
        assert!(linked.warnings.is_empty());
        // Registers not the binary's: not this code.
        let mut changed = record("k", "sm_80", 40);
        reports.join("libk.a(b.o)", &mut changed);
        assert!(changed.warnings.is_empty());
        assert_eq!(reports.disagreed.get(), 1);
    }

    #[test]
    fn a_module_of_no_report_takes_what_every_report_agrees_on() {
        let mut reports = TapReports::default();
        reports
            .kept
            .insert(key("a.o", "k", "sm_80"), kept(8, "dropped"));
        let mut linked = record("k", "sm_80", 8);
        reports.join("libk.a(k_dlink.o)", &mut linked);
        assert_eq!(linked.warnings, ["dropped"]);
    }
}
