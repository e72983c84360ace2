//! One module per subcommand.
pub mod arch;
pub mod calc;
pub mod parse;
pub mod sweep;
