//! ptxas warnings that change every kernel of one ptxas run and name none: a register cap of the
//! command line below ptxas's lower bound (`For profile sm_80 adjusting per thread register
//! count of 8 to lower bound of 24`, one arch), one above 255 (`Too big maxrregcount value
//! specified 300, will be ignored`), and options ptxas drops for `-maxrregcount` (`Conflicting
//! options -maxrregcount and -maxntid specified, ignoring -maxntid option`). Observed with ptxas
//! 13.0.88 and 12.9.86 (docs/ptxas-formats.md).
//!
//! ptxas writes its warnings before its report (nvcc passes both on one stream, in that order),
//! so such a warning belongs to the next run's section: [`RunWide`] holds it until a section
//! opens, and every entry of that section (of the named arch) carries it.

/// Which entries of the next ptxas run a warning concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Scope {
    /// Every entry compiled for this arch (`For profile sm_80 ...`).
    Arch(String),
    /// Every entry of the run (a command-line option).
    Run,
}

/// The scope of a warning message (after `ptxas warning :`) that changes every kernel of its
/// run; `None` for any other.
pub(super) fn scope(message: &str) -> Option<Scope> {
    if let Some(rest) = message.strip_prefix("For profile ") {
        let arch = rest.split_whitespace().next()?;
        return rest
            .contains("adjusting per thread register count")
            .then(|| Scope::Arch(arch.to_string()));
    }
    let run = message.starts_with("Too big maxrregcount value specified")
        || (message.starts_with("Conflicting options ") && message.contains("maxrregcount"));
    run.then_some(Scope::Run)
}

/// The run-wide warnings waiting for their section, and those of the open section.
#[derive(Debug, Default)]
pub(super) struct RunWide {
    pending: Vec<(Scope, String)>,
    section: Vec<(Scope, String)>,
}

impl RunWide {
    /// A warning of the next run.
    pub(super) fn hold(&mut self, scope: Scope, text: String) {
        self.pending.push((scope, text));
    }

    /// A new section (a ptxas run) opens: the warnings held are its own.
    pub(super) fn open_section(&mut self) {
        self.section = std::mem::take(&mut self.pending);
    }

    /// The section's first entry opens (its module line, if any, came before): warnings held
    /// since are the section's too.
    pub(super) fn join_section(&mut self) {
        self.section.append(&mut self.pending);
    }

    /// The open section's warnings that concern an entry compiled for `arch`.
    pub(super) fn for_entry<'a>(&'a self, arch: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.section
            .iter()
            .filter(move |(scope, _)| match scope {
                Scope::Arch(named) => named == arch,
                Scope::Run => true,
            })
            .map(|(_, text)| text.as_str())
    }

    /// Warnings no section claimed (the log ended after them), in log order.
    pub(super) fn unclaimed(&mut self) -> Vec<String> {
        std::mem::take(&mut self.pending)
            .into_iter()
            .map(|(_, text)| text)
            .collect()
    }
}

/// The entry a warning names without quotes: `... for entry NAME is out of range ...`
/// (a minimum blocks per SM ptxas drops), `For entry NAME adjusting per thread register count of
/// 8 to lower bound of 24` (a `.maxnreg` raised) and `Too many maxnreg specified for entry NAME,
/// will be ignored` (a `.maxnreg` above 255 dropped). Each changes the kernel's registers, so it
/// belongs to the kernel's record.
pub(super) fn unquoted_entry_name(message: &str) -> Option<&str> {
    let rest = message
        .strip_prefix("For entry ")
        .or_else(|| message.split_once(" for entry ").map(|(_, rest)| rest))?;
    let name = rest
        .split(char::is_whitespace)
        .next()?
        .trim_end_matches(',');
    (!name.is_empty() && !name.contains(['\'', '"'])).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_wide_warnings_and_their_scope() {
        assert_eq!(
            scope(
                "For profile sm_80 adjusting per thread register count of 8 to lower bound of 24"
            ),
            Some(Scope::Arch("sm_80".into()))
        );
        assert_eq!(
            scope("Too big maxrregcount value specified 300, will be ignored"),
            Some(Scope::Run)
        );
        assert_eq!(
            scope("Conflicting options -maxrregcount and -maxntid specified, ignoring -maxntid option"),
            Some(Scope::Run)
        );
        assert_eq!(
            scope("For entry k adjusting per thread register count of 8 to lower bound of 24"),
            None
        );
        assert_eq!(
            scope(
                "Value of RegUsageLevel (20) is out of valid range {0..10}, option will be ignored"
            ),
            None
        );
    }

    #[test]
    fn entries_named_without_quotes() {
        for (message, name) in [
            ("Value of threads per SM for entry ignored_minimum is out of range. .minnctapersm will be ignored", "ignored_minimum"),
            ("Value of minnctapersm for entry slot_bound is out of range. minnctapersm will be ignored", "slot_bound"),
            ("For entry _Z4tinyPf adjusting per thread register count of 8 to lower bound of 24", "_Z4tinyPf"),
            ("Too many maxnreg specified for entry big, will be ignored", "big"),
        ] {
            assert_eq!(unquoted_entry_name(message), Some(name), "{message}");
        }
        assert_eq!(
            unquoted_entry_name(
                "For profile sm_80 adjusting per thread register count of 8 to lower bound of 24"
            ),
            None
        );
        assert_eq!(
            unquoted_entry_name("Local memory used for function 'k'"),
            None
        );
    }
}
