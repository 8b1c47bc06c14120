//! Which system a file configures, from its text: each system has words the others never
//! write (`methodConfig`, `networking.istio.io`, `linkerd.io`, `virtual_hosts`,
//! `resilience4j:`, an INI `[profile …]` header).
use super::{CheckError, System};

/// The system `text` configures.
///
/// # Errors
///
/// When the text shows none of the systems' marks: the caller should name the system.
///
/// # Examples
///
/// ```
/// use herd_config::{detect, System};
/// assert_eq!(detect("c", "[profile prod]\nretry_mode = standard\n")?, System::Aws);
/// assert_eq!(detect("c", "apiVersion: networking.istio.io/v1\nkind: VirtualService\n")?, System::Istio);
/// assert!(detect("c", "hello: world\n").is_err());
/// # Ok::<(), herd_config::CheckError>(())
/// ```
pub fn detect(file: &str, text: &str) -> Result<System, CheckError> {
    let text = super::tree::strip_bom(text);
    let trimmed = text.trim_start();
    let has = |word: &str| text.contains(word);
    // Envoy in either protobuf JSON spelling, or an Envoy resource named by its type URL
    // (an xDS or admin dump, an `istioctl proxy-config` output).
    let envoy = || {
        [
            "virtual_hosts",
            "virtualHosts",
            "retry_policy",
            "retryPolicy\"",
            "retryPolicy:",
            "static_resources",
            "staticResources",
            "type.googleapis.com/envoy.",
        ]
        .iter()
        .any(|w| has(w))
    };
    let system = if is_ini(text) {
        Some(System::Aws)
    } else if trimmed.starts_with('{') || trimmed.starts_with('[') {
        if has("\"methodConfig\"") || has("\"retryThrottling\"") {
            Some(System::Grpc)
        } else if envoy() {
            Some(System::Envoy)
        } else {
            None
        }
    } else if text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("resilience4j.retry") || l.trim_end() == "resilience4j:"
    }) {
        Some(System::Resilience4j)
    } else if has("networking.istio.io") {
        Some(System::Istio)
    } else if has("linkerd.io") {
        Some(System::Linkerd)
    } else if envoy() {
        Some(System::Envoy)
    } else {
        None
    };
    system.ok_or_else(|| {
        CheckError::new(
            file,
            0,
            "",
            "cannot tell which system this configures (grpc, envoy, istio, linkerd, aws, resilience4j); name it with --format-in",
        )
    })
}

/// An INI file: its first line that is not blank or a comment is a `[section]` header.
fn is_ini(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
        .is_some_and(|l| {
            l.starts_with('[')
                && l.ends_with(']')
                // A section names a profile; `[[[…]]]` is a JSON array, not a header.
                && !l[1..l.len() - 1].contains(['[', ']'])
                && !l.contains(',')
                && !l.contains('"')
                && !l.contains('{')
        })
}
