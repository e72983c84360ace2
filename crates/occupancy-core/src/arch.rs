//! Per-compute-capability hardware facts. (filled in by the calculator work)
