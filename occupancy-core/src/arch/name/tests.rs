use super::*;
use proptest::prelude::*;

fn parsed(text: &str) -> String {
    Arch::parse(text).unwrap().to_string()
}

#[test]
fn accepts_what_nvcc_accepts() {
    for (text, canonical) in [
        ("sm_90", "sm_90"),
        ("sm_90a", "sm_90a"),
        ("compute_90", "sm_90"),
        ("compute_90a", "sm_90a"),
        ("90", "sm_90"),
        ("9.0", "sm_90"),
        ("sm_100f", "sm_100f"),
        ("compute_100f", "sm_100f"),
        ("12.1", "sm_121"),
        ("sm_88", "sm_88"),
        ("sm_107a", "sm_107a"),
        ("sm_107f", "sm_107f"),
        ("sm_101a", "sm_110a"),
        (" 86 ", "sm_86"),
        ("sm_50", "sm_50"),
    ] {
        assert_eq!(parsed(text), canonical, "{text}");
    }
}

#[test]
fn rejects_what_nvcc_rejects_with_a_did_you_mean() {
    for (text, suggestion) in [
        ("sm90", Some("sm_90")),
        ("SM_90", Some("sm_90")),
        ("sm_090", Some("sm_90")),
        ("09.0", Some("9.0")),
        ("sm_89a", Some("sm_89")),
        ("sm_90f", Some("sm_90")),
        ("sm_88f", Some("sm_88")),
        ("compute90a", Some("compute_90a")),
        ("sm__90", Some("sm_90")),
        ("sm_999", None),
        ("sm_9", None),
        ("gfx90a", None),
        ("90a", Some("sm_90a")),
        ("9.0a", None),
        ("sm_9.0", Some("sm_90")),
    ] {
        let error = Arch::parse(text).unwrap_err();
        assert_eq!(error.suggestion.as_deref(), suggestion, "{text}");
        assert_eq!(error.name, text);
        let message = error.to_string();
        assert!(message.contains("sm_90/sm_90a"), "{message}");
        if let Some(suggestion) = suggestion {
            assert!(
                message.contains(&format!("did you mean `{suggestion}`")),
                "{message}"
            );
        }
    }
}

#[test]
fn a_well_formed_name_the_table_lacks_says_the_tool_needs_an_update() {
    let error = Arch::parse("sm_130").unwrap_err();
    assert_eq!(error.newer_than_table, Some(130));
    assert!(
        error
            .to_string()
            .contains("if your nvcc knows compute_130, occupancy"),
        "{error}"
    );
    assert_eq!(Arch::parse("13.0").unwrap_err().newer_than_table, Some(130));
    // A known number with a variant nvcc lacks is not "newer".
    assert_eq!(Arch::parse("sm_89a").unwrap_err().newer_than_table, None);
}

#[test]
fn serde_uses_the_canonical_name_and_the_grammar() {
    let arch = Arch::parse("compute_100f").unwrap();
    assert_eq!(serde_json::to_string(&arch).unwrap(), "\"sm_100f\"");
    let back: Arch = serde_json::from_str("\"9.0\"").unwrap();
    assert_eq!(back.to_string(), "sm_90");
    let error = serde_json::from_str::<Arch>("\"sm90\"").unwrap_err();
    assert!(
        error.to_string().contains("did you mean `sm_90`"),
        "{error}"
    );
}

#[test]
fn variants_order_after_their_portable_arch() {
    let mut archs: Vec<Arch> = ["sm_100f", "sm_90a", "sm_100", "sm_90"]
        .iter()
        .map(|name| Arch::parse(name).unwrap())
        .collect();
    archs.sort();
    let names: Vec<String> = archs.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["sm_90", "sm_90a", "sm_100", "sm_100f"]);
    assert_eq!(archs[1].virtual_name(), "compute_90a");
    assert_eq!(archs[1].portable().to_string(), "sm_90");
}

/// Names built from the grammar's parts, well-formed or not.
fn name_parts() -> impl Strategy<Value = String> {
    let prefix = prop::sample::select(vec!["", "sm_", "compute_", "sm", "SM_", "lto_"]);
    let number = prop_oneof![
        prop::sample::select(Arch::every().map(|arch| arch.number()).collect::<Vec<_>>()),
        0u32..1300,
    ];
    let leading_zero = prop::bool::weighted(0.1);
    let dotted = prop::bool::weighted(0.2);
    let suffix = prop::sample::select(vec!["", "", "a", "f", "b"]);
    (prefix, number, leading_zero, dotted, suffix).prop_map(
        |(prefix, number, leading_zero, dotted, suffix)| {
            let zero = if leading_zero { "0" } else { "" };
            let digits = if dotted {
                format!("{zero}{}.{}", number / 10, number % 10)
            } else {
                format!("{zero}{number}")
            };
            format!("{prefix}{digits}{suffix}")
        },
    )
}

proptest! {
    #[test]
    fn display_round_trips_and_names_an_arch_nvcc_accepts(text in name_parts()) {
        if let Ok(arch) = Arch::parse(&text) {
            let shown = arch.to_string();
            prop_assert_eq!(Arch::parse(&shown).unwrap(), arch);
            // Every accepted spelling maps to one of the table's nvcc names (checked against the
            // real nvcc by tests/arch_oracles.rs).
            prop_assert!(Arch::every().any(|known| known == arch), "{}", shown);
            prop_assert!(!text.contains("0.") || text.starts_with(|c: char| c != '0'));
            prop_assert!(!text.starts_with("SM") && !text.starts_with("lto") && !text.ends_with('b'));
        }
    }

    #[test]
    fn never_panics_and_errors_name_the_input(text in "\\PC{0,12}") {
        match Arch::parse(&text) {
            Ok(arch) => prop_assert!(Arch::every().any(|known| known == arch)),
            Err(error) => {
                prop_assert_eq!(&error.name, &text);
                if let Some(suggestion) = &error.suggestion {
                    prop_assert!(Arch::parse(suggestion).is_ok(), "{}", suggestion);
                }
            }
        }
    }
}

#[test]
fn every_known_arch_displays_as_it_parses() {
    for arch in Arch::every() {
        assert_eq!(Arch::parse(&arch.to_string()).unwrap(), arch);
        assert_eq!(Arch::parse(&arch.virtual_name()).unwrap(), arch);
    }
    let variants = |has: fn(&ArchFacts) -> bool| all().iter().filter(|facts| has(facts)).count();
    assert_eq!(
        Arch::every().count(),
        all().len()
            + variants(|facts| facts.arch_specific_variant)
            + variants(|facts| facts.family_variant)
    );
}
