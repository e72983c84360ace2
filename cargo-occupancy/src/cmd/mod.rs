//! One module per subcommand.
pub mod arch;
pub mod batch;
pub mod build;
pub mod calc;
pub mod check;
pub mod explain;
pub mod lock;
pub mod log_input;
pub mod parse;
pub mod ptxas_reports;
pub mod report;
pub mod stream;
pub mod sweep;
pub mod tune;
