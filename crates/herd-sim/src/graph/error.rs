//! Why a graph was rejected: one line naming the service and the field.

use std::fmt;

/// Why a graph file was rejected. Its `Display` is one line naming the service and field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphError(pub String);

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GraphError {}
