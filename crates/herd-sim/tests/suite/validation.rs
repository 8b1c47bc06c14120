//! One validation stack: the same bad value gets the same error, naming the same field, in
//! every model's scenario file, through the one dispatch (`herd_sim::registry::check_text`).
use herd_sim::Limits;
use herd_sim::registry;

/// The error `text` gets as a scenario of each model, without the `model = …` line's prefix.
fn errors(body: &str) -> Vec<(String, String)> {
    registry::MODELS
        .iter()
        .map(|m| {
            let text = format!("model = \"{}\"\n{body}", m.name);
            let err = registry::check_text(&text, &Limits::default())
                .map(|_| ())
                .expect_err(&text);
            (m.name.to_owned(), err.to_string())
        })
        .collect()
}

fn all_alike(body: &str, models: &[&str], want: &str) {
    for (name, err) in errors(body) {
        if models.contains(&name.as_str()) {
            assert_eq!(err, want, "model {name}, scenario {body:?}");
        }
    }
}

#[test]
fn retry_times_are_read_alike_by_every_model() {
    let every = ["storm", "metastable", "contention"];
    all_alike(
        "[retry]\nbase_ms = 100\ncap_ms = 50\n",
        &every,
        "retry.cap_ms (line 4): must be at least base_ms (100), got 50",
    );
    all_alike(
        "[retry]\npause_ms = -1\n",
        &every,
        "retry.pause_ms (line 3): must be a finite number of milliseconds between 0 and 10^12, got -1",
    );
}

#[test]
fn outages_are_checked_alike_by_the_models_that_have_them() {
    let with_outages = ["storm", "metastable"];
    all_alike(
        "[server]\noutages = [[10, 20], [15, 30]]\n",
        &with_outages,
        "server.outages (line 3): [10, 20] and [15, 30] overlap",
    );
    all_alike(
        "[server]\noutages = [[5, 5]]\n",
        &with_outages,
        "server.outages (line 3): [5, 5] must end after it starts",
    );
    all_alike(
        "horizon_s = 60\n[server]\noutages = [[60, 70]]\n",
        &with_outages,
        "server.outages (line 4): [60, 70] starts at or after the horizon (60 s)",
    );
}

#[test]
fn a_wrong_type_or_an_unknown_field_is_named_with_its_line() {
    for (name, err) in errors("seed = \"one\"\n") {
        assert!(
            err.starts_with("seed (line 2): invalid type"),
            "{name}: {err}"
        );
    }
    for (name, err) in errors("speed = 2\n") {
        assert!(
            err.starts_with("line 2: unknown field `speed`"),
            "{name}: {err}"
        );
    }
}
