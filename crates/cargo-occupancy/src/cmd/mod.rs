//! One module per subcommand.
pub mod calc;
pub mod parse;
