//! One module per subcommand.
pub(crate) mod rules;
pub(crate) mod serve;
pub(crate) mod storm;
