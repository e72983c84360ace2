//! Property tests of `[package.metadata.occupancy]` reading (issue 11): any TOML value under any
//! key, known or not, read through `cargo metadata` as a build reads it, gives settings or an
//! error naming the section, never a panic; an unknown key, at the top or in a kernel's table,
//! is always an error that names it.

use std::path::PathBuf;

use proptest::prelude::*;

use crate::config::load;

/// Any TOML value, nested a few levels, with the numbers a hostile user would try.
fn any_value() -> impl Strategy<Value = toml::Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(toml::Value::Boolean),
        prop_oneof![
            Just(i64::MIN),
            Just(-1i64),
            Just(0i64),
            Just(i64::from(u32::MAX) + 1),
            any::<i64>()
        ]
        .prop_map(toml::Value::Integer),
        prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(-0.0),
            any::<f64>()
        ]
        .prop_map(toml::Value::Float),
        prop_oneof![
            Just("sm_90".to_string()),
            Just("deny".to_string()),
            Just(String::new()),
            "\\PC{0,12}"
        ]
        .prop_map(toml::Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(toml::Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|map| toml::Value::Table(map.into_iter().collect())),
        ]
    })
}

/// Known keys most of the time, anything else sometimes.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["archs", "lints", "kernels", "baseline", "reports", "spills"])
            .prop_map(str::to_string),
        1 => "[a-z_]{1,8}",
    ]
}

fn scratch() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let case = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!(
        "occupancy-config-fuzz-{}-{case}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The manifest text of a package whose metadata table is `occupancy`.
fn manifest(occupancy: toml::Table) -> String {
    let mut metadata = toml::Table::new();
    metadata.insert("occupancy".into(), toml::Value::Table(occupancy));
    let mut package = toml::Table::new();
    package.insert("name".into(), "fuzzed".into());
    package.insert("metadata".into(), toml::Value::Table(metadata));
    let mut root = toml::Table::new();
    root.insert("package".into(), toml::Value::Table(package));
    toml::to_string(&root).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn any_metadata_reads_or_fails_naming_the_section(
        table in prop::collection::btree_map(key(), any_value(), 0..5),
    ) {
        let known = ["archs", "lints", "kernels", "baseline", "reports"];
        let has_unknown = table.keys().any(|key| !known.contains(&key.as_str()));
        let result = load_table(table.into_iter().collect());
        prop_assert!(!(has_unknown && result.is_ok()), "an unknown key was accepted");
        if let Err(message) = result {
            prop_assert!(message.contains("[package.metadata.occupancy]"), "{}", message);
            prop_assert!(!message.contains("``"), "empty quote: {}", message);
        }
    }

    #[test]
    fn an_unknown_key_in_a_kernel_table_is_named(name in "[a-z]{1,8}", value in any_value()) {
        prop_assume!(name != "lints");
        let mut kernel = toml::Table::new();
        kernel.insert(name.clone(), value);
        let mut kernels = toml::Table::new();
        kernels.insert("saxpy".into(), toml::Value::Table(kernel));
        let mut occupancy = toml::Table::new();
        occupancy.insert("kernels".into(), toml::Value::Table(kernels));
        let message = load_table(occupancy).expect_err("unknown kernel key");
        prop_assert!(message.contains(&format!("unknown key `{name}`")), "{}", message);
    }
}

fn load_table(occupancy: toml::Table) -> Result<(), String> {
    let dir = scratch();
    std::fs::write(dir.join("Cargo.toml"), manifest(occupancy)).unwrap();
    // cargo wants a target in a package.
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    let result = load(&dir, None, &crate::process::ToolTimeouts::default())
        .map(|_| ())
        .map_err(|error| error.to_string());
    let _ = std::fs::remove_dir_all(&dir);
    result
}
