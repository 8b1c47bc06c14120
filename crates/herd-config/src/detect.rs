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
    let trimmed = text.trim_start();
    let has = |word: &str| text.contains(word);
    let system = if trimmed.starts_with('{') {
        if has("\"methodConfig\"") || has("\"retryThrottling\"") {
            Some(System::Grpc)
        } else if has("virtual_hosts") || has("retry_policy") || has("static_resources") {
            Some(System::Envoy)
        } else {
            None
        }
    } else if is_ini(text) {
        Some(System::Aws)
    } else if text.lines().any(|l| {
        l.trim_end() == "resilience4j:" || l.trim_start().starts_with("resilience4j.retry.")
    }) {
        Some(System::Resilience4j)
    } else if has("networking.istio.io") {
        Some(System::Istio)
    } else if has("linkerd.io") {
        Some(System::Linkerd)
    } else if has("virtual_hosts") || has("static_resources") || has("retry_policy") {
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
                && !l.contains(',')
                && !l.contains('"')
                && !l.contains('{')
        })
}
