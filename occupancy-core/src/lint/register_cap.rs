//! `register_cap_ignored`: ptxas compiled the kernel under another register cap than the one
//! asked for, and said so in a warning the kernel's record carries (docs/ptxas-formats.md,
//! "Warnings that change resources"; ptxas 13.0.88 and 12.9.86 word them alike):
//!
//! * `For entry K adjusting per thread register count of 8 to lower bound of 24`: a `.maxnreg`
//!   (`__maxnreg__(8)`) below the lowest cap ptxas applies, raised to it;
//! * `For profile sm_80 adjusting per thread register count of 8 to lower bound of 24`: the same
//!   for `-maxrregcount=8`, every kernel of that arch;
//! * `Conflicting options -maxrregcount and -maxntid specified, ignoring -maxntid option` (and
//!   `-minnctapersm`): ptxas options dropped for `-maxrregcount`, which caps registers instead.
//!
//! A cap above 255 that ptxas ignores (`Too many maxnreg specified for entry K, will be ignored`,
//! `Too big maxrregcount value specified 300, will be ignored`) changes nothing: ptxas applies
//! 255, the most a thread can have, as it would without the cap. The record keeps those
//! warnings; they make no finding.

use super::finding::{ptxas_note, CompiledOnArch, Finding, LaunchOrigin};
use super::id::LintId;
use crate::spec::KernelSpec;

/// A register cap ptxas did not apply as asked, read from one of its warnings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CapChange {
    /// A cap below ptxas's lower bound, raised to it: `.maxnreg` (`by_option: false`) or
    /// `-maxrregcount` (`true`).
    Raised {
        asked: u32,
        floor: u32,
        by_option: bool,
    },
    /// A ptxas option dropped for `-maxrregcount` (`-maxntid`, `-minnctapersm`).
    OptionDropped { dropped: String },
}

/// The cap change one warning of ptxas says, if it says one.
pub(crate) fn cap_change(warning: &str) -> Option<CapChange> {
    let message = warning
        .split_once("warning")
        .map_or(warning, |(_, rest)| rest.trim_start_matches([' ', ':']));
    if let Some((head, rest)) = message.split_once(" adjusting per thread register count of ") {
        let (asked, floor) = rest.split_once(" to lower bound of ")?;
        return Some(CapChange::Raised {
            asked: asked.trim().parse().ok()?,
            floor: floor.trim().trim_end_matches('.').parse().ok()?,
            by_option: head.starts_with("For profile "),
        });
    }
    let rest = message.strip_prefix("Conflicting options -maxrregcount and ")?;
    let dropped = rest.split_whitespace().next()?;
    Some(CapChange::OptionDropped {
        dropped: dropped.to_string(),
    })
}

/// The record's warnings that change its register cap, each with what it says. A warning about
/// the command line's `-maxrregcount` concerns every kernel of its ptxas run, but the option caps
/// only the kernels without bounds of their own: those ptxas names in `Overriding maximum
/// register limit 256 for 'K' with  24 of maxrregcount option` (a kernel with `.maxnreg` or
/// `__launch_bounds__` gets `Overriding global maxrregcount ... with entry-specific value`).
pub(crate) fn cap_changes(warnings: &[String]) -> Vec<(&str, CapChange)> {
    let option_applies = warnings
        .iter()
        .any(|warning| warning.contains("of maxrregcount option"));
    warnings
        .iter()
        .filter_map(|warning| cap_change(warning).map(|change| (warning.as_str(), change)))
        .filter(|(_, change)| {
            option_applies
                || matches!(
                    change,
                    CapChange::Raised {
                        by_option: false,
                        ..
                    }
                )
        })
        .collect()
}

/// What ptxas did, for the finding's message.
fn what_happened(kernel: &str, arch: &str, change: &CapChange) -> String {
    match change {
        CapChange::Raised {
            asked,
            floor,
            by_option,
        } => {
            let cap = if *by_option {
                format!("`-maxrregcount={asked}`")
            } else {
                format!("`.maxnreg {asked}` (`__maxnreg__({asked})`)")
            };
            format!(
                "ptxas raised the register cap of kernel `{kernel}` on {arch} from {asked} to {floor}: {cap} is below the fewest registers per thread ptxas compiles a kernel for"
            )
        }
        CapChange::OptionDropped { dropped } => format!(
            "ptxas ignored `{dropped}` for kernel `{kernel}` on {arch}: beside `-maxrregcount` it drops the option, and `-maxrregcount` alone caps the kernel's registers"
        ),
    }
}

/// How to get the cap ptxas applies, or none.
fn help(change: &CapChange, origin: LaunchOrigin) -> String {
    let allow = origin.allow(LintId::RegisterCapIgnored);
    match change {
        CapChange::Raised {
            floor, by_option, ..
        } => {
            let what = if *by_option {
                "`-maxrregcount`"
            } else {
                "the kernel's `__maxnreg__`/`.maxnreg`"
            };
            format!("raise {what} to {floor} or more (what ptxas applies anyway), or remove it; or {allow}")
        }
        CapChange::OptionDropped { dropped } => format!(
            "pass `-maxrregcount` or `{dropped}` to ptxas, not both (or write the bound in the source: `__launch_bounds__`), or {allow}"
        ),
    }
}

/// `register_cap_ignored`: one finding per kernel and arch whose record carries a warning that
/// ptxas compiled it under another register cap than asked; every such warning is quoted.
pub(super) fn register_cap_ignored(
    _spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let record = on.record;
    let changes = cap_changes(&record.warnings);
    let Some((_, first)) = changes.first() else {
        return;
    };
    let mut notes: Vec<String> = changes
        .iter()
        .map(|(warning, _)| format!("ptxas: {warning}"))
        .collect();
    notes.push(format!(
        "`{}` used {} registers per thread on {}",
        record.name,
        record.registers.unwrap_or(0),
        on.arch.name
    ));
    notes.push(ptxas_note(record));
    findings.push(Finding {
        arch: Some(on.arch.name.to_string()),
        message: what_happened(&record.name, on.arch.name, first),
        notes,
        help: Some(help(first, origin)),
        ..Finding::new(LintId::RegisterCapIgnored)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_warning_says_its_change() {
        assert_eq!(
            cap_change("ptxas warning : For entry tiny adjusting per thread register count of 8 to lower bound of 24"),
            Some(CapChange::Raised { asked: 8, floor: 24, by_option: false })
        );
        assert_eq!(
            cap_change("ptxas warning : For profile sm_80 adjusting per thread register count of 2 to lower bound of 24"),
            Some(CapChange::Raised { asked: 2, floor: 24, by_option: true })
        );
        assert_eq!(
            cap_change("ptxas warning : Conflicting options -maxrregcount and -minnctapersm specified, ignoring -minnctapersm option"),
            Some(CapChange::OptionDropped { dropped: "-minnctapersm".into() })
        );
        // The option's warning concerns the kernels the option caps.
        let option = "ptxas warning : For profile sm_90 adjusting per thread register count of 8 to lower bound of 24".to_string();
        let capped = "ptxas info    : Overriding maximum register limit 256 for 'uncapped' with  24 of maxrregcount option".to_string();
        assert_eq!(cap_changes(&[option.clone(), capped.clone()]).len(), 1);
        assert!(cap_changes(std::slice::from_ref(&option)).is_empty());
        for unchanged in [
            "ptxas warning : Too many maxnreg specified for entry big, will be ignored",
            "ptxas warning : Too big maxrregcount value specified 300, will be ignored",
            "ptxas warning : Value of threads per SM for entry k is out of range. .minnctapersm will be ignored",
            "ptxas info    : Overriding maximum register limit 256 for 'k' with  24 of maxrregcount option",
        ] {
            assert_eq!(cap_change(unchanged), None, "{unchanged}");
        }
    }
}
