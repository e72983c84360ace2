//! The exact occupancy calculator. (filled in by the calculator work)
