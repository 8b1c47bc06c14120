//! The time scale both labs play a scenario at: real seconds per scenario second.

/// The largest time scale: slower than real time shows nothing more, and keeps every real
/// duration far from what `Duration` can hold.
pub const MAX_TIME_SCALE: f64 = 10.0;

/// `time_scale` when it lies in `(0, MAX_TIME_SCALE]`; otherwise the one-line error naming
/// it and its flag.
pub(crate) fn check(time_scale: f64) -> Result<f64, String> {
    if time_scale.is_finite() && time_scale > 0.0 && time_scale <= MAX_TIME_SCALE {
        Ok(time_scale)
    } else {
        Err(format!(
            "time_scale must be in (0, {MAX_TIME_SCALE}], got {time_scale} (--time-scale)"
        ))
    }
}
