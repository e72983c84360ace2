//! One module per subcommand.
pub mod calc;
pub mod check;
pub mod explain;
pub mod report;
