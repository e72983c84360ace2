//! One module per subcommand.
pub mod calc;
