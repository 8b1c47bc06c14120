//! The layers of a call path: what both the `multiple-layers` analyzer and the storm of
//! every layer together group policies by. Kept below both, so that neither imports the
//! other.
use super::{System, Translation};

/// A layer: one file, or one Kubernetes object (a `VirtualService`, a profile) of a file.
pub(crate) fn layer_of(t: &Translation) -> String {
    match t.system {
        System::Istio | System::Linkerd => {
            let object = t.name.split('/').next().unwrap_or(&t.name);
            format!("{} {object}", t.file)
        }
        _ => t.file.clone(),
    }
}

/// The retrying layers of `configs` in the order given (the caller first): a layer is a file,
/// or one Kubernetes object of a file (a `VirtualService`, a `ServiceProfile`).
#[must_use]
pub fn layers(configs: &[Translation]) -> Vec<Vec<&Translation>> {
    let mut out: Vec<(String, Vec<&Translation>)> = Vec::new();
    for t in configs.iter().filter(|t| t.retries()) {
        let key = layer_of(t);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, ts)) => ts.push(t),
            None => out.push((key, vec![t])),
        }
    }
    out.into_iter().map(|(_, ts)| ts).collect()
}
