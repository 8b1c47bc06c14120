//! One module per subcommand, and the progress bar the long ones share.
pub(crate) mod amplify;
pub(crate) mod args;
pub(crate) mod check;
pub(crate) mod hedge;
pub(crate) mod input_file;
pub(crate) mod interrupt;
pub(crate) mod lab;
pub(crate) mod progress;
pub(crate) mod rules;
pub(crate) mod serve;
pub(crate) mod storm;
pub(crate) mod storm_flags;
pub(crate) mod sweep;
