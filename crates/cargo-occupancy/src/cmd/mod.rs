//! One module per subcommand.
pub mod arch;
pub mod calc;
pub mod sweep;
pub mod parse;
