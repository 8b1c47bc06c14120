//! The Python port in `tools/herd_rules.py` must reproduce `herd rules` bit for bit, for every
//! rule, several seeds and parameter sets, including failure counts deep into the cap.
use crate::support;

use support::ports;

#[test]
fn python_port_matches_herd_rules_bit_for_bit() {
    let Some(py) = ["python3", "python"]
        .into_iter()
        .find(|p| ports::available(p, "--version"))
    else {
        return ports::require("python3");
    };
    let script = ports::repo_root().join("tools/herd_rules.py");
    ports::matches_herd_rules(py, &[script.to_str().expect("utf-8 path")]);
}
