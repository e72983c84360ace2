// Bounds left to the build: the const says so, and prints the declaration back.
#![deny(warnings)]

#[occupancy::kernel(block = 256, min_blocks_per_sm = "auto")]
fn chosen_minimum();

#[occupancy::kernel(block = 128, max_registers = "auto", max_spill_bytes = 16)]
fn chosen_cap();

fn main() {
    assert_eq!(
        CHOSEN_MINIMUM_OCCUPANCY.spec.min_blocks_per_sm,
        Some(occupancy::Tunable::Auto)
    );
    assert!(CHOSEN_MINIMUM_OCCUPANCY.spec.min_blocks_per_sm.unwrap().is_auto());
    assert_eq!(CHOSEN_CAP_OCCUPANCY.spec.max_registers, Some(occupancy::Tunable::Auto));
    assert_eq!(CHOSEN_CAP_OCCUPANCY.spec.max_registers.unwrap().fixed(), None);
    assert_eq!(
        CHOSEN_MINIMUM_OCCUPANCY.spec.to_string(),
        "block = 256, min_blocks_per_sm = \"auto\""
    );
}
