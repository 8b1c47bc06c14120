//! The page in a real browser: headless Chromium, driven over WebDriver (chromedriver).
//!
//! The test starts the page server in-process on 127.0.0.1:0, starts `chromedriver` on a
//! free loopback port, and uses the page as a person would: clicks, keys and typing, never
//! scripts that set values. It checks that every number the page shows equals the API's
//! answer (which the test fetches itself), that the storm chart is drawn (by reading the
//! canvas's pixels), the headline demo (a refusal that costs work, and nobody served), the
//! rules side by side on one time axis, the error state, the Hedging scene's tail and its
//! crossover under the utilisation slider, a pasted configuration's three faults beside the
//! fix and their charts, the tabs' links and keys, and runs the axe-core
//! accessibility engine on every scene. It saves screenshots to `target/e2e/`.
//!
//! Without `chromium` and `chromedriver` on the PATH the test prints one loud line and
//! passes, except under `CI=true`, where a missing browser is a failure (`.ci/run` installs
//! Debian's `chromium` and `chromium-driver`). axe-core's `axe.min.js` is read from
//! `$HERD_AXE_JS`, or from `.ci/node/node_modules/axe-core/` where `.ci/run` installs it;
//! under `CI=true` a missing axe is a failure too.
#![cfg(unix)]

use crate::support;

use std::net::TcpListener as StdListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use herd_lab::serve::ServeLimits;
use herd_sim::figure::{self, Kind, with_unit};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

use support::PageServer;

/// The whole browser session must finish within this (about 90 s here, in a debug build;
/// each Hedging answer runs five policies of 20 000 user requests).
const TEST_TIMEOUT: Duration = Duration::from_secs(240);
/// One wait for the page to reach a state.
const WAIT: Duration = Duration::from_secs(20);

fn find_on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// chromedriver as a child process on a free loopback port, killed on drop.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start(chromedriver: &Path) -> Self {
        let port = StdListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        // Its own process group, so that the browsers it starts can be ended with it.
        let child = Command::new(chromedriver)
            .process_group(0)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        Self { child, port }
    }

    async fn wait_ready(&self) {
        let deadline = Instant::now() + WAIT;
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .is_err()
        {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // A failed test never closes its session: end chromium with chromedriver, by group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn screenshot_dir() -> PathBuf {
    // CARGO_TARGET_TMPDIR is target/tmp; the screenshots go beside it, in target/e2e.
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.parent().unwrap_or(tmp).join("e2e");
    std::fs::create_dir_all(&dir).expect("create target/e2e");
    dir
}

fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// axe-core's browser build: `$HERD_AXE_JS`, or where `.ci/run` installs it.
fn axe_source() -> Option<String> {
    let path = std::env::var_os("HERD_AXE_JS").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../.ci/node/node_modules/axe-core/axe.min.js")
        },
        PathBuf::from,
    );
    match std::fs::read_to_string(&path) {
        Ok(source) => Some(source),
        Err(e) => {
            assert!(
                !under_ci(),
                "CI=true but axe-core is missing at {} ({e}); .ci/run installs it",
                path.display()
            );
            eprintln!(
                "WARNING: accessibility audit SKIPPED: no axe-core at {} (install it with \
                 `npm install --prefix .ci/node axe-core@4`, or set HERD_AXE_JS)",
                path.display()
            );
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_in_headless_chromium() {
    let chromium = find_on_path(&["chromium", "chromium-browser"]);
    let chromedriver = find_on_path(&["chromedriver"]);
    let (Some(chromium), Some(chromedriver)) = (chromium, chromedriver) else {
        assert!(
            !under_ci(),
            "CI=true but chromium or chromedriver is missing (.ci/run installs them)"
        );
        eprintln!(
            "WARNING: browser test SKIPPED: chromium or chromedriver not on PATH; install them \
             (Debian: `apt-get install chromium chromium-driver`) or run .ci/run"
        );
        return;
    };
    let axe = axe_source();
    let run = async {
        // Room for the test's own API calls beside the page's, which loads the other rules
        // in the background.
        let server = PageServer::start(ServeLimits {
            max_concurrent: 8,
            ..support::unhurried()
        })
        .await;
        let driver = Driver::start(&chromedriver);
        driver.wait_ready().await;
        let profile = Path::new(env!("CARGO_TARGET_TMPDIR")).join("chromium-profile");
        let _ = std::fs::remove_dir_all(&profile);
        let browser = connect(&chromium, &profile, driver.port).await;
        let outcome = drive(&browser, &server, axe.as_deref()).await;
        let _ = browser.close().await;
        drop(driver);
        let _ = std::fs::remove_dir_all(&profile);
        outcome
    };
    match tokio::time::timeout(TEST_TIMEOUT, run).await {
        Ok(()) => {}
        Err(_) => panic!("the browser test took longer than {TEST_TIMEOUT:?}"),
    }
}

async fn connect(chromium: &Path, profile: &Path, port: u16) -> Client {
    let args = [
        "--headless=new".to_owned(),
        "--no-sandbox".to_owned(),
        "--disable-gpu".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-component-update".to_owned(),
        "--disable-sync".to_owned(),
        "--disable-extensions".to_owned(),
        "--disable-default-apps".to_owned(),
        "--no-first-run".to_owned(),
        "--no-default-browser-check".to_owned(),
        "--window-size=1200,1000".to_owned(),
        format!("--user-data-dir={}", profile.display()),
    ];
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".to_owned(),
        json!({ "binary": chromium.display().to_string(), "args": args }),
    );
    ClientBuilder::new(HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a WebDriver session with headless chromium")
}

/// Runs the JavaScript `body` on the page; what it returns.
async fn script(browser: &Client, body: &str) -> Value {
    browser
        .execute(body, vec![])
        .await
        .unwrap_or_else(|e| panic!("script runs: {e}\n{body}"))
}

/// Ticks or clears the storm's "a refusal costs work" box.
async fn set_refusal(browser: &Client, on: bool) {
    let checked = script(
        browser,
        "return document.querySelector('#storm-refusal').checked;",
    )
    .await;
    if checked != Value::Bool(on) {
        click(browser, "#storm-refusal").await;
    }
}

/// Waits until the JavaScript expression `expr` is true on the page.
async fn wait_until(browser: &Client, expr: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let value = script(browser, &format!("return Boolean({expr});")).await;
        if value == Value::Bool(true) {
            return;
        }
        if Instant::now() > deadline {
            let status = text(browser, "#status").await;
            panic!("timed out waiting for `{expr}` (page status: {status:?})");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the scene `scene` is ready showing what its `data-<scene><what>` names
/// (`scene_ready(b, "storm", "Key", "full|0|2000|10")`).
async fn scene_ready(browser: &Client, scene: &str, what: &str, value: &str) {
    wait_until(
        browser,
        &format!(
            "document.body.dataset.{scene}State === 'ready' && document.body.dataset.{scene}{what} === '{value}'"
        ),
    )
    .await;
}

/// The element `css` selects, which must be on the page.
async fn element(browser: &Client, css: &str) -> Element {
    browser
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
}

async fn click(browser: &Client, css: &str) {
    element(browser, css)
        .await
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {css}: {e}"));
}

async fn text(browser: &Client, css: &str) -> String {
    match browser.find(Locator::Css(css)).await {
        Ok(el) => el.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

async fn attr(browser: &Client, css: &str, name: &str) -> String {
    element(browser, css)
        .await
        .attr(name)
        .await
        .unwrap_or_else(|e| panic!("{css}[{name}]: {e}"))
        .unwrap_or_default()
}

async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.expect("screenshot");
    let path = screenshot_dir().join(name);
    std::fs::write(&path, png).expect("write screenshot");
    eprintln!("screenshot: {}", path.display());
}

async fn drive(browser: &Client, server: &PageServer, axe: Option<&str>) {
    browser.goto(&server.url()).await.expect("page loads");
    assert_eq!(
        browser.title().await.expect("title"),
        "herd — watch the herd"
    );
    check_numbers(browser).await;
    check_storm(browser, server).await;
    audit(browser, axe, "storm").await;
    check_storm_demo_and_error(browser, server).await;
    check_six(browser, server).await;
    audit(browser, axe, "six").await;
    check_dots(browser, server).await;
    audit(browser, axe, "dots").await;
    check_layers(browser, server).await;
    audit(browser, axe, "layers").await;
    check_hedge(browser, server, axe).await;
    check_config(browser, server, axe).await;
    check_whatif(browser, server, axe).await;
    check_tabs(browser, server).await;
    audit_on_a_phone(browser, axe).await;
}

/// Every scene again at a phone's width, its figures drawn, as a person on a phone meets it:
/// tables and grids that fit a desktop scroll sideways there.
async fn audit_on_a_phone(browser: &Client, axe: Option<&str>) {
    browser.set_window_size(390, 844).await.expect("resize");
    for scene in ["storm", "six", "dots", "layers", "hedge", "check"] {
        click(browser, &format!("#tab-{scene}")).await;
        wait_until(browser, &format!("location.hash === '#{scene}'")).await;
        audit(browser, axe, &format!("{scene} (phone)")).await;
    }
    browser.set_window_size(1200, 1000).await.expect("resize");
}

/// Runs axe-core on the page as it is (the scene shown) and fails on any violation.
async fn audit(browser: &Client, axe: Option<&str>, scene: &str) {
    let Some(axe) = axe else { return };
    let loaded = browser
        .execute(&format!("{axe}\nreturn typeof window.axe;"), vec![])
        .await
        .expect("axe loads");
    assert_eq!(loaded, "object", "axe-core did not load");
    let violations = browser
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             window.axe.run(document, { resultTypes: ['violations'] }) \
               .then((r) => done(r.violations.map((v) => \
                 `${v.id} (${v.impact}): ${v.help}: ` + \
                 v.nodes.map((n) => n.target.join(' ') + ' ' + (n.failureSummary || '').replace(/\\s+/g, ' ')).join(' | ')))) \
               .catch((e) => done(['axe failed: ' + e]));",
            vec![],
        )
        .await
        .expect("axe runs");
    let violations: Vec<String> = serde_json::from_value(violations).expect("a list");
    assert!(
        violations.is_empty(),
        "axe-core on the {scene} scene:\n{}",
        violations.join("\n")
    );
    eprintln!("axe-core: no violation on the {scene} scene");
}

async fn press(browser: &Client, css: &str, keys: &str) {
    element(browser, css)
        .await
        .send_keys(keys)
        .await
        .unwrap_or_else(|e| panic!("keys to {css}: {e}"));
}

/// Replaces what the box `css` holds with `typed`, as a person would.
async fn retype(browser: &Client, css: &str, typed: &str) {
    let input = element(browser, css).await;
    input.clear().await.expect("clear");
    input.send_keys(typed).await.expect("type");
}

/// A scene in error keeps nothing stale: every one of `figures` is a dash and the chart
/// `#<scene>-chart` is blank (drawn "error", no red pixel); then a screenshot.
async fn nothing_stale(browser: &Client, scene: &str, figures: &[&str]) {
    for id in figures {
        assert_eq!(text(browser, id).await, "–", "{id} keeps no stale figure");
    }
    let chart = format!("#{scene}-chart");
    assert_eq!(attr(browser, &chart, "data-drawn").await, "error");
    let (red, _) = canvas_pixels(browser, &chart).await;
    assert_eq!(red, 0, "no stale chart on {scene}");
    screenshot(browser, &format!("{scene}-error.png")).await;
}

fn key(k: Key) -> String {
    char::from(k).to_string()
}

/// Tabs are links (the URL's hash) and move with the arrow keys.
async fn check_tabs(browser: &Client, server: &PageServer) {
    for scene in ["storm", "six", "dots", "layers", "hedge", "check"] {
        assert_eq!(
            attr(browser, &format!("#tab-{scene}"), "aria-controls").await,
            format!("scene-{scene}")
        );
    }
    click(browser, "#tab-six").await;
    wait_until(browser, "location.hash === '#six'").await;
    press(browser, "#tab-six", &key(Key::Right)).await;
    wait_until(
        browser,
        "location.hash === '#dots' && document.activeElement.id === 'tab-dots' \
         && !document.querySelector('#scene-dots').hidden",
    )
    .await;
    assert_eq!(attr(browser, "#tab-dots", "aria-selected").await, "true");
    press(browser, "#tab-dots", &key(Key::Home)).await;
    wait_until(browser, "location.hash === '#storm'").await;
    press(browser, "#tab-storm", &key(Key::Left)).await;
    wait_until(browser, "location.hash === '#check'").await;
    press(browser, "#tab-check", &key(Key::Left)).await;
    wait_until(browser, "location.hash === '#hedge'").await;
    press(browser, "#tab-hedge", &key(Key::Left)).await;
    wait_until(browser, "location.hash === '#layers'").await;
    press(browser, "#tab-layers", &key(Key::End)).await;
    wait_until(
        browser,
        "location.hash === '#check' && !document.querySelector('#scene-check').hidden",
    )
    .await;
    // A link to a scene opens that scene.
    for scene in ["layers", "hedge"] {
        browser
            .goto(&format!("{}#{scene}", server.url()))
            .await
            .expect("page loads");
        browser.refresh().await.expect("reload");
        wait_until(
            browser,
            &format!(
                "!document.querySelector('#scene-{scene}').hidden && document.querySelector('#scene-storm').hidden"
            ),
        )
        .await;
    }
}

/// Pixels of the storm chart: (the chosen rule's bars, grey lines of the other rules).
async fn chart_pixels(browser: &Client) -> (u64, u64) {
    canvas_pixels(browser, "#storm-chart").await
}

/// Pixels of a canvas: (the chosen variant's red, grey of the others).
async fn canvas_pixels(browser: &Client, canvas: &str) -> (u64, u64) {
    let counts = browser
        .execute(
            "const c = document.querySelector(arguments[0]); \
             const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; \
             let red = 0, grey = 0; \
             for (let i = 0; i < d.length; i += 4) { \
               const [r, g, b] = [d[i], d[i + 1], d[i + 2]]; \
               if (r > 200 && g < 170 && b < 180 && r - g > 60) red++; \
               else if (Math.abs(r - g) < 4 && Math.abs(g - b) < 4 && r > 160 && r < 200) grey++; \
             } \
             return [red, grey];",
            vec![json!(canvas)],
        )
        .await
        .expect("pixels read");
    (
        counts[0].as_u64().expect("count"),
        counts[1].as_u64().expect("count"),
    )
}

/// The headline demo (a refusal that costs a tenth of an answer; nobody served), a slider
/// moved by keys, and the error state when the page cannot follow that many clients.
async fn check_storm_demo_and_error(browser: &Client, server: &PageServer) {
    click(browser, "#tab-storm").await;
    set_refusal(browser, true).await;
    for rule in ["immediate", "constant", "exponential"] {
        click(browser, &format!("#storm-rules button[data-rule={rule}]")).await;
        scene_ready(browser, "storm", "Key", &format!("{rule}|0.1|2000|10")).await;
        let (api, half, all, _) = compare_storm(browser, server, rule, 0.1, 2000, 10).await;
        assert_eq!(api["served"], 0, "{rule}");
        assert_eq!(half, "never");
        assert_eq!(all, "not all served");
        let horizon = api["horizon_s"].as_f64().expect("horizon_s");
        assert_eq!(
            text(browser, "#storm-verdict").await,
            format!(
                "Nobody served in the first {horizon} s: the server spends every answer it could give on refusing the herd."
            ),
            "{rule}"
        );
        assert!(
            text(browser, "#storm-rule-info")
                .await
                .starts_with(&format!("{rule}: pause =")),
            "{rule}: the rule's formula is in the scene"
        );
    }
    wait_until(browser, "document.body.dataset.stormCompare === 'ready'").await;
    wait_until(browser, "document.body.dataset.stormAnimation === 'done'").await;
    let (red, _) = chart_pixels(browser).await;
    assert!(red > 500, "the refusal demo's storm is drawn: {red} pixels");
    screenshot(browser, "storm-refusal.png").await;

    // A slider moved with the keyboard: five steps right, 10 s → 15 s of outage.
    click(browser, "#storm-refusal").await;
    click(browser, "#storm-rules button[data-rule=full]").await;
    let right = key(Key::Right).repeat(5);
    press(browser, "#storm-outage", &right).await;
    assert_eq!(text(browser, "#storm-outage-out").await, "15");
    scene_ready(browser, "storm", "Key", "full|0|2000|15").await;
    compare_storm(browser, server, "full", 0.0, 2000, 15).await;

    // More clients than the page can follow: the server refuses, and the page shows the
    // refusal next to a blank chart and dashes, never the previous figures.
    retype(browser, "#storm-clients-n", "200000").await;
    wait_until(browser, "document.body.dataset.stormState === 'error'").await;
    let error = text(browser, "#storm-error").await;
    assert!(
        error.starts_with("No chart: clients: the page can follow 200000 clients"),
        "{error}"
    );
    nothing_stale(
        browser,
        "storm",
        &["#storm-half", "#storm-all", "#storm-rpc", "#storm-peak"],
    )
    .await;
    retype(browser, "#storm-clients-n", "2000").await;
    press(browser, "#storm-outage", &key(Key::Left).repeat(5)).await;
    scene_ready(browser, "storm", "Key", "full|0|2000|10").await;
    assert!(text(browser, "#storm-error").await.is_empty());
}

async fn check_dots(browser: &Client, server: &PageServer) {
    click(browser, "#tab-dots").await;
    for rule in ["exponential", "full"] {
        click(browser, &format!("#dots-rules button[data-rule={rule}]")).await;
        scene_ready(browser, "dots", "Rule", rule).await;
        let (status, api) = server
            .post(
                "dots",
                &json!({ "rule": rule, "clients": 100, "failures": 6 }),
            )
            .await;
        assert_eq!(status, 200, "{api}");
        let rows = api["rows"].as_array().expect("rows");
        assert_eq!(rows.len(), 6);
        for row in rows {
            let k = &row["failure"];
            let shown = attr(
                browser,
                &format!("#dots-chart .distinct[data-failure='{k}']"),
                "data-value",
            )
            .await;
            assert_eq!(shown, row["distinct"].to_string(), "{rule}, failure {k}");
            let dots = browser
                .find_all(Locator::Css(&format!(
                    "#dots-chart circle[data-failure='{k}']"
                )))
                .await
                .expect("dots");
            assert_eq!(dots.len(), 100, "{rule}: a dot per client");
        }
        if rule == "exponential" {
            assert!(
                rows.iter().all(|r| r["distinct"] == 1),
                "no jitter, one dot a row"
            );
        }
        screenshot(browser, &format!("dots-{rule}.png")).await;
    }
}

/// A time as the page prints it: the precision policy of `herd_sim::figure`, mirrored by
/// the page's `fig`.
fn seconds(s: f64) -> String {
    with_unit(s, Kind::Seconds)
}

fn number(text: &str) -> f64 {
    text.trim()
        .trim_end_matches(" s")
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {text:?}"))
}

/// The page's `fig` prints every figure as `herd_sim::figure` does: ties to even (JavaScript's
/// `toFixed` rounds them up), integers whole, exponent form outside [1e-3, 1e9), no `-0`, a
/// percentage short of 100 never as 100.
async fn check_numbers(browser: &Client) {
    let values = [
        0.0,
        -0.0,
        2000.0,
        12.0,
        120.5,
        785.5,
        12.25,
        0.125,
        9.996,
        29.63,
        1234.5,
        0.001,
        0.000_999_4,
        2.5e-5,
        1.234e10 + 0.5,
        -0.25,
        1e12,
        99.96,
        99.9996,
        99.95,
        0.0004,
        9_007_199_254_740_992.0,
        1.005,
        2.675,
        0.045,
    ];
    let list = values
        .iter()
        .map(|x| format!("{x:e}"))
        .collect::<Vec<_>>()
        .join(",");
    let shown = script(
        browser,
        &format!("return [{list}].map((x) => [fig(x), fig(x, 's'), fig(x, '%')]);"),
    )
    .await;
    let want: Vec<Value> = values
        .iter()
        .map(|&x| {
            json!([
                figure::number(x),
                with_unit(x, Kind::Seconds),
                with_unit(x, Kind::Percent)
            ])
        })
        .collect();
    assert_eq!(shown, Value::Array(want), "fig() against herd_sim::figure");
}

/// Storm: pick rules, toggle the refusal cost, and compare the four figures with the API's.
async fn check_storm(browser: &Client, server: &PageServer) {
    click(browser, "#tab-storm").await;
    wait_until(browser, "document.body.dataset.stormState === 'ready'").await;
    for (rule, refusal) in [
        ("immediate", false),
        ("exponential", false),
        ("full", false),
        ("exponential", true),
        ("full", true),
    ] {
        set_refusal(browser, refusal).await;
        click(browser, &format!("#storm-rules button[data-rule={rule}]")).await;
        let cost = if refusal { 0.1 } else { 0.0 };
        let key = format!("{rule}|{}|2000|10", if refusal { "0.1" } else { "0" });
        scene_ready(browser, "storm", "Key", &key).await;
        let (api, half, all, shown) = compare_storm(browser, server, rule, cost, 2000, 10).await;
        if (rule, refusal) == ("immediate", false) {
            // The default storm's figures, through the page.
            // By the precision policy: whole seconds as integers, three significant figures
            // (120.5 is a tie, rounded to even as herd_sim::figure does).
            assert_eq!(half, "12 s");
            assert_eq!(all, "13.9 s");
            assert_eq!(shown, "120");
        }
        if refusal && rule == "exponential" {
            let served_first_minute: u64 = api["series"]["served"]
                .as_array()
                .expect("series")
                .iter()
                .take(600)
                .filter_map(Value::as_u64)
                .sum();
            assert_eq!(served_first_minute, 0, "no client served in 60 s");
        }
    }
    // The rules side by side: every rule's figures for the same knobs, and the chosen rule
    // (full, over in about 30 s) over the others in grey on its own time axis, not on the
    // 950 s of the three rules that never end with a refusal cost: those are cut at its end,
    // with an arrow and a note saying how far each goes.
    wait_until(browser, "document.body.dataset.stormCompare === 'ready'").await;
    wait_until(browser, "document.body.dataset.stormAnimation === 'done'").await;
    let mut longest = 0.0_f64;
    let mut ends = Vec::new();
    for rule in herd::RuleName::CLASSIC.map(herd::RuleName::as_str) {
        let (_, api) = server
            .post(
                "storm",
                &json!({ "rule": rule, "refusal_cost": 0.1, "clients": 2000, "outage_s": 10, "capacity": 50 }),
            )
            .await;
        let windows = api["series"]["arrivals"].as_array().expect("series").len() as f64;
        let mut end = windows * api["series"]["window_s"].as_f64().expect("window");
        if api["cut_short"] == true {
            end = end.max(api["horizon_s"].as_f64().expect("horizon"));
        }
        longest = longest.max(end);
        ends.push((rule, end));
        let served = text(
            browser,
            &format!("#storm-compare tr[data-rule={rule}] td:nth-child(2)"),
        )
        .await;
        assert_eq!(served, format!("{} of 2000", api["served"]), "{rule}");
    }
    let t_end: f64 = attr(browser, "#storm-chart", "data-t-end")
        .await
        .parse()
        .expect("a number");
    let full_end = ends.iter().find(|(r, _)| *r == "full").expect("full").1;
    assert!(
        full_end <= t_end && t_end <= 1.25 * full_end && t_end < longest / 10.0,
        "the axis fits full ({full_end} s), not the longest rule ({longest} s): {t_end} s"
    );
    assert_eq!(attr(browser, "#storm-chart", "data-others").await, "5");
    let cut: Vec<_> = ends.iter().filter(|(_, end)| *end > t_end).collect();
    assert!(cut.iter().any(|(r, _)| *r == "immediate"), "{ends:?}");
    assert_eq!(
        attr(browser, "#storm-chart", "data-clipped").await,
        cut.iter().map(|(r, _)| *r).collect::<Vec<_>>().join(","),
    );
    let note = text(browser, "#storm-clipped").await;
    let label = attr(browser, "#storm-chart", "aria-label").await;
    for (rule, end) in &cut {
        let says = format!("{rule} goes on to {end:.0} s");
        assert!(note.contains(&says), "{says:?} not in the note {note:?}");
        assert!(label.contains(&says), "{says:?} not in the label {label:?}");
    }
    // The bitmap follows the screen's pixel ratio, so the chart is sharp on HiDPI screens.
    let sharp = script(
        browser,
        "const c = document.querySelector('#storm-chart'); \
         return c.width === Math.round(c.clientWidth * devicePixelRatio);",
    )
    .await;
    assert_eq!(
        sharp,
        Value::Bool(true),
        "canvas bitmap at the device pixel ratio"
    );
    let (red, grey) = chart_pixels(browser).await;
    assert!(red > 50, "the chosen rule's bars are drawn: {red} pixels");
    assert!(
        grey > 200,
        "the other rules are drawn in grey: {grey} pixels"
    );
    screenshot(browser, "storm.png").await;
}

/// Compares the four figures the Storm scene shows with the API's answer for the same knobs.
async fn compare_storm(
    browser: &Client,
    server: &PageServer,
    rule: &str,
    cost: f64,
    clients: u64,
    outage_s: u64,
) -> (Value, String, String, String) {
    let (status, api) = server
            .post(
                "storm",
                &json!({ "rule": rule, "refusal_cost": cost, "clients": clients, "outage_s": outage_s, "capacity": 50 }),
            )
            .await;
    assert_eq!(status, 200, "{api}");
    let context = format!("{rule}, refusal cost {cost}");

    let half = text(browser, "#storm-half").await;
    match api["half_served_s"].as_f64() {
        Some(s) => assert_eq!(half, seconds(s), "{context}: half served"),
        None => assert_eq!(half, "never", "{context}: half served"),
    }
    let all = text(browser, "#storm-all").await;
    match api["all_served_s"].as_f64() {
        Some(s) => assert_eq!(all, seconds(s), "{context}: all served"),
        None => assert_eq!(all, "not all served", "{context}: all served"),
    }
    let rpc = api["requests_per_client"]
        .as_f64()
        .expect("requests_per_client");
    let shown = text(browser, "#storm-rpc").await;
    assert_eq!(
        shown,
        figure::number(rpc),
        "{context}: requests per client, as herd_sim::figure prints it"
    );
    assert_eq!(
        number(&attr(browser, "#storm-rpc", "data-value").await),
        rpc,
        "{context}: requests per client"
    );
    assert_eq!(
        text(browser, "#storm-peak").await,
        api["peak_after_outage"].to_string(),
        "{context}: peak after the outage"
    );
    (api, half, all, shown)
}

async fn six_cell(browser: &Client, client: usize, tick: usize) -> (String, String) {
    let css = format!("#six-grid tr[data-client='{client}'] td[data-tick='{tick}']");
    (
        text(browser, &css).await,
        attr(browser, &css, "class").await,
    )
}

/// Checks the grid's first `upto` ticks against the API's timeline.
async fn check_six_grid(browser: &Client, api: &Value, upto: usize) {
    let rule = &api["rule"];
    for t in 1..=upto {
        for c in 1..=6 {
            let expected = api["rows"][c - 1][t - 1].as_str().expect("cell");
            let (shown, class) = six_cell(browser, c, t).await;
            let mark = match expected {
                "" => "",
                "served" => "✓",
                "refused" => "✗",
                "collapsed" => "↯",
                "down" => "▪",
                other => panic!("unknown outcome {other}"),
            };
            assert_eq!(shown, mark, "{rule}: C{c} at tick {t}");
            if !expected.is_empty() {
                assert!(
                    class.split(' ').any(|k| k == expected),
                    "{rule}: C{c} at tick {t}: {class}"
                );
            }
        }
        let calls = text(browser, &format!("#six-grid tr.calls td[data-tick='{t}']")).await;
        assert_eq!(
            calls,
            api["calls_per_tick"][t - 1].to_string(),
            "{rule}: calls at tick {t}"
        );
    }
}

/// Six clients: Next tick, cell by cell; Reset; Play; and the three demos side by side.
async fn check_six(browser: &Client, server: &PageServer) {
    click(browser, "#tab-six").await;
    scene_ready(browser, "six", "Rule", "immediate").await;
    let (status, api) = server.post("six", &json!({ "rule": "immediate" })).await;
    assert_eq!(status, 200, "{api}");
    assert_eq!(
        (api["served"].as_u64(), api["calls"].as_u64()),
        (Some(0), Some(24))
    );
    for t in 1..=6 {
        click(browser, "#six-next").await;
        assert_eq!(
            attr(browser, "#six-tick", "data-value").await,
            t.to_string()
        );
        check_six_grid(browser, &api, t).await;
        // The future is not shown yet.
        for c in 1..=6 {
            assert_eq!(
                six_cell(browser, c, t + 1).await.0,
                "",
                "tick {} early",
                t + 1
            );
        }
    }
    click(browser, "#six-reset").await;
    assert_eq!(attr(browser, "#six-tick", "data-value").await, "0");
    assert_eq!(six_cell(browser, 1, 1).await.0, "");

    click(browser, "#six-rules button[data-rule=exponential]").await;
    scene_ready(browser, "six", "Rule", "exponential").await;
    let (_, api) = server.post("six", &json!({ "rule": "exponential" })).await;
    let ticks = usize::try_from(api["ticks"].as_u64().expect("ticks")).expect("small");
    for _ in 0..ticks {
        click(browser, "#six-next").await;
    }
    check_six_grid(browser, &api, ticks).await;
    assert_eq!(
        text(browser, "#six-summary").await,
        "exponential: 0 of 6 served, 24 calls, last call at tick 15."
    );

    // Refused, collapsed and down have their own marks, and a legend says which is which.
    let legend = browser
        .find_all(Locator::Css(".six-legend li"))
        .await
        .expect("legend");
    assert_eq!(legend.len(), 4);
    // A demo replaced before its answer arrives does not stall the next one.
    click(browser, "#six-demo-immediate").await;
    click(browser, "#six-demo-exponential").await;
    wait_until(browser, "document.body.dataset.sixRule === 'exponential'").await;
    wait_until(
        browser,
        &format!("document.querySelector('#six-tick').dataset.value === '{ticks}'"),
    )
    .await;

    // The full-jitter demo plays to the end by itself.
    click(browser, "#six-demo-full").await;
    wait_until(browser, "document.body.dataset.sixRule === 'full'").await;
    let (_, api) = server.post("six", &json!({ "rule": "full" })).await;
    let ticks = api["ticks"].as_u64().expect("ticks");
    wait_until(
        browser,
        &format!("document.querySelector('#six-tick').dataset.value === '{ticks}'"),
    )
    .await;
    check_six_grid(browser, &api, usize::try_from(ticks).expect("small")).await;
    screenshot(browser, "six-full.png").await;

    click(browser, "#six-demo-all").await;
    wait_until(browser, "document.body.dataset.sixCompare === 'ready'").await;
    for rule in ["immediate", "exponential", "full"] {
        let (_, api) = server.post("six", &json!({ "rule": rule })).await;
        let row = format!("#six-compare tr[data-rule={rule}]");
        let cells = browser
            .find(Locator::Css(&row))
            .await
            .expect("a row per rule")
            .find_all(Locator::Css("td"))
            .await
            .expect("cells");
        let mut shown = Vec::new();
        for cell in cells {
            shown.push(cell.text().await.expect("text"));
        }
        let last = api["last_call_tick"]
            .as_u64()
            .map_or("–".to_owned(), |t| t.to_string());
        assert_eq!(
            shown,
            [
                rule.to_owned(),
                format!("{} of {}", api["served"], api["clients"]),
                api["calls"].to_string(),
                last,
            ],
            "{rule}"
        );
    }
    screenshot(browser, "six-compare.png").await;
}

async fn check_layer_loads(
    browser: &Client,
    server: &PageServer,
    attempts: &[u32],
    aware: bool,
) -> Vec<f64> {
    let key = format!(
        "{}|{aware}",
        attempts
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    scene_ready(browser, "layers", "Key", &key).await;
    let (status, api) = server
        .post(
            "layers",
            &json!({ "attempts": attempts, "layer_aware": aware }),
        )
        .await;
    assert_eq!(status, 200, "{api}");
    let mut loads = Vec::new();
    for service in api["services"].as_array().expect("services") {
        let name = service["name"].as_str().expect("name");
        let receives = service["predicted"].as_f64().expect("predicted");
        let shown = text(
            browser,
            &format!(".service[data-service='{name}'] .receives"),
        )
        .await;
        assert_eq!(number(&shown), receives, "{key}: {name}");
        loads.push(number(&shown));
    }
    loads
}

/// Layers: the two buttons, the layer-aware option, adding a layer and one attempts control.
async fn check_layers(browser: &Client, server: &PageServer) {
    click(browser, "#tab-layers").await;
    assert_eq!(
        check_layer_loads(browser, server, &[3, 3, 3], false).await,
        [1.0, 3.0, 9.0, 27.0]
    );
    click(browser, "#layers-db-only").await;
    assert_eq!(
        check_layer_loads(browser, server, &[1, 1, 3], false).await,
        [1.0, 1.0, 1.0, 3.0]
    );
    click(browser, "#layers-every").await;
    check_layer_loads(browser, server, &[3, 3, 3], false).await;
    click(browser, "#layers-aware").await;
    assert_eq!(
        check_layer_loads(browser, server, &[3, 3, 3], true).await,
        [1.0, 1.0, 1.0, 3.0]
    );
    screenshot(browser, "layers-aware.png").await;
    click(browser, "#layers-aware").await;
    click(browser, "#layers-add").await;
    check_layer_loads(browser, server, &[3, 3, 3, 1], false).await;
    script(
        browser,
        "const i = document.querySelector(\"input[data-layer='0']\"); \
         i.value = '2'; i.dispatchEvent(new Event('change'));",
    )
    .await;
    assert_eq!(
        check_layer_loads(browser, server, &[2, 3, 3, 1], false).await,
        [1.0, 2.0, 6.0, 18.0, 18.0]
    );
    screenshot(browser, "layers.png").await;
}

/// The figures the Hedging scene shows for `knobs`, against the API's answer for the same.
async fn compare_hedge(browser: &Client, server: &PageServer, knobs: &Value) -> Value {
    let key = format!(
        "{}|{}|{}|{}",
        knobs["policy"].as_str().expect("policy"),
        knobs["delay_ms"],
        knobs["utilisation"],
        knobs["fan_out"]
    );
    scene_ready(browser, "hedge", "Key", &key).await;
    let (status, api) = server.post("hedge", knobs).await;
    assert_eq!(status, 200, "{api}");
    let results = api["results"].as_array().expect("results");
    assert_eq!(results.len(), 5, "{key}: a row per policy");
    let chosen = knobs["policy"].as_str().expect("policy");
    for r in results {
        let policy = r["policy"].as_str().expect("policy");
        for (column, field) in [
            (2, "p50_ms"),
            (3, "p99_ms"),
            (4, "p999_ms"),
            (5, "extra_load_percent"),
        ] {
            let css = format!("#hedge-compare tr[data-policy={policy}] td:nth-child({column})");
            let shown: f64 = attr(browser, &css, "data-value")
                .await
                .parse()
                .expect("a number");
            assert_eq!(
                shown,
                r[field].as_f64().expect("figure"),
                "{key}: {policy} {field}"
            );
            let text = text(browser, &css).await;
            let number: f64 = text
                .trim_end_matches(" ms")
                .trim_end_matches(" %")
                .parse()
                .unwrap_or_else(|_| panic!("{text:?}"));
            assert!(
                (number - shown).abs() <= 0.51,
                "{key}: {policy} {field}: {text} vs {shown}"
            );
        }
        let verdict = text(
            browser,
            &format!("#hedge-compare tr[data-policy={policy}] td:nth-child(7)"),
        )
        .await;
        let expected = match r["pays"].as_bool() {
            None => "–",
            Some(true) => "pays",
            Some(false) => "worse",
        };
        assert_eq!(verdict, expected, "{key}: {policy}");
        // The figures above the chart: the chosen policy's, and those without hedging.
        let mut figures = Vec::new();
        if policy == chosen {
            figures.extend([
                ("#hedge-p99", "p99_ms"),
                ("#hedge-p999", "p999_ms"),
                ("#hedge-extra", "extra_load_percent"),
            ]);
        }
        if policy == "none" {
            figures.extend([
                ("#hedge-p99-none", "p99_ms"),
                ("#hedge-p999-none", "p999_ms"),
            ]);
        }
        for (id, field) in figures {
            let shown: f64 = attr(browser, id, "data-value")
                .await
                .parse()
                .expect("a number");
            assert_eq!(shown, r[field].as_f64().expect("figure"), "{key}: {id}");
        }
    }
    api
}

/// Hedging: the tail drawn (chosen over no hedging), every policy's figures, the utilisation
/// slider moved with keys past the crossover, a policy picked, the error state, a phone's width.
async fn check_hedge(browser: &Client, server: &PageServer, axe: Option<&str>) {
    click(browser, "#tab-hedge").await;
    wait_until(browser, "location.hash === '#hedge'").await;
    let knobs = |policy: &str, utilisation: f64| json!({ "policy": policy, "delay_ms": 10, "utilisation": utilisation, "fan_out": 10 });
    let low = compare_hedge(browser, server, &knobs("delay", 0.3)).await;
    assert_eq!(
        low["results"][1]["pays"], true,
        "a 10 ms hedge pays at 30 %"
    );
    let verdict = text(browser, "#hedge-verdict").await;
    assert!(
        verdict.starts_with("At 30 % utilisation, fixed delay cuts p99.9 from"),
        "{verdict}"
    );
    wait_until(browser, "document.body.dataset.hedgeAnimation === 'done'").await;
    let sharp = script(
        browser,
        "const c = document.querySelector('#hedge-chart'); \
         return c.width === Math.round(c.clientWidth * devicePixelRatio) && c.clientWidth > 300;",
    )
    .await;
    assert_eq!(
        sharp,
        Value::Bool(true),
        "canvas bitmap at the device pixel ratio"
    );
    let (red, grey) = canvas_pixels(browser, "#hedge-chart").await;
    assert!(red > 300, "the chosen policy's tail is drawn: {red} pixels");
    assert!(
        grey > 300,
        "the other policies are drawn in grey: {grey} pixels"
    );
    let described = text(browser, "#hedge-chart-text").await;
    let p999 = low["results"][1]["p999_ms"].as_f64().expect("p999");
    assert!(
        described.contains(&format!("p99.9 {}", with_unit(p999, Kind::Millis)))
            && described.contains("Hedging pays here."),
        "screen-reader text describes the chart: {described}"
    );
    screenshot(browser, "hedge.png").await;
    audit(browser, axe, "hedge").await;

    // The utilisation slider, moved with the keyboard: eight steps of 5 %, 30 % → 70 %.
    press(browser, "#hedge-utilisation", &key(Key::Right).repeat(8)).await;
    assert_eq!(text(browser, "#hedge-utilisation-out").await, "70 %");
    let high = compare_hedge(browser, server, &knobs("delay", 0.7)).await;
    assert_ne!(high["results"][1]["p999_ms"], low["results"][1]["p999_ms"]);
    assert_eq!(high["results"][1]["pays"], false, "past the crossover");
    let verdict = text(browser, "#hedge-verdict").await;
    assert!(
        verdict.starts_with("At 70 % utilisation, fixed delay makes p99.9 worse")
            && verdict.ends_with("Past the crossover, it no longer pays."),
        "{verdict}"
    );
    wait_until(browser, "document.body.dataset.hedgeAnimation === 'done'").await;
    screenshot(browser, "hedge-crossover.png").await;

    // Another policy: the budget caps the copies at 2 % of sub-requests.
    click(browser, "#hedge-policies button[data-policy=budget]").await;
    let budget = compare_hedge(browser, server, &knobs("budget", 0.7)).await;
    assert_eq!(
        attr(browser, "#hedge-compare tr.chosen", "data-policy").await,
        "budget"
    );
    assert_eq!(
        budget["results"][1]["p999_ms"], high["results"][1]["p999_ms"],
        "the same users and pauses: the delay policy's row does not change"
    );
    assert!(
        text(browser, "#hedge-verdict")
            .await
            .starts_with("At 70 % utilisation, delay + 2 % budget"),
        "the verdict names the chosen policy"
    );

    // A delay past the API's range: the refusal next to a blank chart and dashes.
    retype(browser, "#hedge-delay", "5000").await;
    wait_until(browser, "document.body.dataset.hedgeState === 'error'").await;
    let error = text(browser, "#hedge-error").await;
    assert_eq!(
        error,
        "No chart: delay_ms must be between 0 and 1000, got 5000"
    );
    nothing_stale(
        browser,
        "hedge",
        &[
            "#hedge-p99",
            "#hedge-p99-none",
            "#hedge-p999",
            "#hedge-p999-none",
            "#hedge-extra",
        ],
    )
    .await;
    assert_eq!(
        text(
            browser,
            "#hedge-compare tr[data-policy=delay] td:nth-child(4)"
        )
        .await,
        "–"
    );
    assert!(text(browser, "#hedge-verdict").await.is_empty());
    audit(browser, axe, "hedge (error)").await;
    retype(browser, "#hedge-delay", "10").await;
    compare_hedge(browser, server, &knobs("budget", 0.7)).await;
    assert!(text(browser, "#hedge-error").await.is_empty());

    // A phone's width: nothing wider than the screen, the chart still drawn to its width.
    browser.set_window_size(390, 844).await.expect("resize");
    wait_until(
        browser,
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth \
         && document.querySelector('#hedge-chart').width === \
            Math.round(document.querySelector('#hedge-chart').clientWidth * devicePixelRatio)",
    )
    .await;
    screenshot(browser, "hedge-phone.png").await;
    // As a person on a phone meets it: the table now scrolls sideways, so it must be reachable
    // by keyboard (axe's scrollable-region-focusable).
    audit(browser, axe, "hedge (phone)").await;
    browser.set_window_size(1200, 1000).await.expect("resize");
}

/// Your config: an example loaded by its button, the translation, the findings and the storm
/// beside the fix equal to the API's, the chart drawn; a malformed paste, typed as a person
/// would, refused with its line and nothing stale; then the example again.
async fn check_config(browser: &Client, server: &PageServer, axe: Option<&str>) {
    click(browser, "#tab-check").await;
    wait_until(
        browser,
        "location.hash === '#check' && document.body.dataset.checkExamples === 'ready'",
    )
    .await;
    let (name, _, example) = herd_lab::serve::check::EXAMPLES[0];
    click(
        browser,
        &format!("#check-examples button[data-example='{name}']"),
    )
    .await;
    let (status, api) = server.post("check", &json!({ "text": example })).await;
    assert_eq!(status, 200, "{api}");
    let findings = api["findings"].as_array().expect("findings");
    let key = format!(
        "grpc|{}|{}|2000",
        api["policies"].as_array().expect("policies").len(),
        findings.len()
    );
    scene_ready(browser, "check", "Key", &key).await;
    assert_eq!(
        script(
            browser,
            "return document.querySelector('#check-text').value;"
        )
        .await,
        example,
        "the example is in the box"
    );
    // The findings table is the API's, row by row.
    let rows = script(
        browser,
        "return [...document.querySelectorAll('#check-findings tbody tr')] \
           .map((tr) => [...tr.cells].map((c) => c.textContent));",
    )
    .await;
    let expected: Vec<Value> = findings
        .iter()
        .map(|f| json!([f["severity"], f["line"].to_string(), f["message"], f["fix"]]))
        .collect();
    assert_eq!(rows, Value::Array(expected));
    assert!(!findings.is_empty(), "the example has findings");
    // Each field set on its line or defaulted.
    let set = text(browser, "#check-policies li.set[data-field=maxAttempts]").await;
    assert!(set.starts_with("maxAttempts: set, line "), "{set}");
    // The storm beside the fix: the API's figures, as configured and fixed.
    let run = &api["storm"]["runs"][0];
    let cells = script(
        browser,
        "return [...document.querySelectorAll(\".check-storm[data-index='0'] tr[data-row='requests per client'] td\")] \
           .map((c) => c.textContent);",
    )
    .await;
    let rpc = |side: &str| figure::number(run[side]["requests_per_client"].as_f64().expect("rpc"));
    assert_eq!(cells, json!([rpc("config"), rpc("fix")]));
    let served = text(
        browser,
        ".check-storm[data-index='0'] tr[data-row='served'] td",
    )
    .await;
    assert_eq!(
        served,
        format!("{} of {}", run["config"]["served"], api["storm"]["clients"])
    );
    let gave_up = script(
        browser,
        "return [...document.querySelectorAll(\".check-storm[data-index='0'] tr[data-row='gave up'] td\")] \
           .map((c) => c.textContent);",
    )
    .await;
    assert_eq!(
        gave_up,
        json!([
            run["config"]["gave_up"].to_string(),
            run["fix"]["gave_up"].to_string()
        ])
    );
    let (red, _) = canvas_pixels(browser, ".check-chart[data-index='0']").await;
    assert!(red > 100, "the configured storm is drawn: {red} red pixels");
    screenshot(browser, "check.png").await;
    script(
        browser,
        "document.querySelector('#check-findings-wrap').scrollIntoView();",
    )
    .await;
    screenshot(browser, "check-findings.png").await;
    script(
        browser,
        "document.querySelector('.check-storm').scrollIntoView();",
    )
    .await;
    screenshot(browser, "check-storm.png").await;
    audit(browser, axe, "check").await;

    // The storm's knobs, as `herd check --clients --capacity-rps --outage-s` sets them.
    retype(browser, "#check-clients", "500").await;
    retype(browser, "#check-capacity", "20").await;
    retype(browser, "#check-outage", "4").await;
    click(browser, "#check-run").await;
    let knobs = json!({ "text": example, "clients": 500, "capacity": 20, "outage_s": 4 });
    let (status, small) = server.post("check", &knobs).await;
    assert_eq!(status, 200, "{small}");
    assert_eq!(small["storm"]["clients"], 500);
    assert_eq!(small["storm"]["outages"], json!([[0.0, 4.0]]));
    assert_eq!(small["storm"]["runs"][0]["capacity"], 20.0);
    scene_ready(browser, "check", "Key", &key.replace("|2000", "|500")).await;
    let served = text(
        browser,
        ".check-storm[data-index='0'] tr[data-row='served'] td",
    )
    .await;
    let run = &small["storm"]["runs"][0];
    assert_eq!(served, format!("{} of 500", run["config"]["served"]));
    // A knob out of range: the error names it, and its box, not the text's, is marked.
    retype(browser, "#check-clients", "0").await;
    click(browser, "#check-run").await;
    wait_until(browser, "document.body.dataset.checkState === 'error'").await;
    let (status, refused) = server
        .post("check", &json!({ "text": example, "clients": 0 }))
        .await;
    assert_eq!(status, 400);
    let error = text(browser, "#check-error").await;
    assert_eq!(error, refused["error"].as_str().expect("error"));
    assert!(error.starts_with("clients "), "{error}");
    assert_eq!(
        attr(browser, "#check-clients", "aria-invalid").await,
        "true"
    );
    assert_eq!(
        script(
            browser,
            "return document.querySelector('#check-text').hasAttribute('aria-invalid');"
        )
        .await,
        Value::Bool(false)
    );
    audit(browser, axe, "check (a knob out of range)").await;
    retype(browser, "#check-clients", "2000").await;
    retype(browser, "#check-capacity", "50").await;
    retype(browser, "#check-outage", "10").await;

    // A malformed YAML, typed into the box: the error names the text's line, nothing stale.
    let malformed = "apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec:\n  http:\n  - retries: {attempts: 3\n    route: x\n";
    retype(browser, "#check-text", malformed).await;
    click(browser, "#check-run").await;
    wait_until(browser, "document.body.dataset.checkState === 'error'").await;
    let (status, refused) = server.post("check", &json!({ "text": malformed })).await;
    assert_eq!(status, 400);
    let error = text(browser, "#check-error").await;
    assert_eq!(error, refused["error"].as_str().expect("error"));
    assert!(error.starts_with("text: line "), "{error}");
    assert_eq!(attr(browser, "#check-text", "aria-invalid").await, "true");
    assert!(text(browser, "#check-summary").await.is_empty());
    assert!(text(browser, "#check-storms").await.is_empty());
    assert_eq!(
        script(
            browser,
            "return document.querySelector('#check-whatif').hidden;"
        )
        .await,
        Value::Bool(true),
        "no stale what-if"
    );
    assert_eq!(
        script(
            browser,
            "return document.querySelector('#check-findings-wrap').hidden;"
        )
        .await,
        Value::Bool(true)
    );
    screenshot(browser, "check-error.png").await;
    audit(browser, axe, "check (error)").await;

    // The example again, then a phone's width: nothing wider than the screen.
    click(
        browser,
        &format!("#check-examples button[data-example='{name}']"),
    )
    .await;
    scene_ready(browser, "check", "Key", &key).await;
    browser.set_window_size(390, 844).await.expect("resize");
    wait_until(
        browser,
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth",
    )
    .await;
    screenshot(browser, "check-phone.png").await;
    browser.set_window_size(1200, 1000).await.expect("resize");
}

/// Istio's defaults, typed into the box: two retries on `unavailable` among others.
const PASTED: &str = "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: reviews}\nspec:\n  hosts: [reviews]\n  http:\n  - route:\n    - destination: {host: reviews}\n";

/// The what-if's table on the page, per fault: each figure's row, as set and with the fix.
async fn whatif_cells(browser: &Client, fault: &str) -> Value {
    script(
        browser,
        &format!(
            "return [...document.querySelectorAll(\".whatif-policy[data-index='0'] tbody[data-fault='{fault}'] tr\")] \
               .map((tr) => [tr.dataset.row, ...[...tr.cells].filter((c) => c.tagName === 'TD').map((c) => c.textContent)]);"
        ),
    )
    .await
}

/// The figures the page must show for one run of the API's answer, as `herd check` prints
/// them (herd-sim's figure rules).
fn whatif_expected(run: &Value) -> Value {
    let side = |f: &Value| {
        let recovered = f["recovered_s"]
            .as_f64()
            .map_or_else(|| "never".to_owned(), |v| with_unit(v, Kind::Seconds));
        [
            with_unit(
                f["goodput"].as_f64().expect("goodput") * 100.0,
                Kind::Percent,
            ),
            figure::number(f["amplification"].as_f64().expect("amplification")),
            figure::number(f["peak_load"].as_f64().expect("peak")),
            recovered,
        ]
    };
    let (set, fix) = (side(&run["as_set"]), side(&run["fix"]));
    let rows = ["goodput", "amplification", "peak load", "recovered"];
    Value::Array(
        rows.iter()
            .enumerate()
            .map(|(k, name)| json!([name, set[k], fix[k]]))
            .collect(),
    )
}

/// Every run of `api` is on the page: its figures as set beside the fix, and its chart drawn
/// (red: as set), with a table of the same load.
async fn whatif_shown(browser: &Client, api: &Value) {
    let runs = api["runs"].as_array().expect("runs");
    let faults: Vec<&str> = runs
        .iter()
        .map(|r| r["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(
        faults,
        ["brownout", "overload", "outage"],
        "the three faults"
    );
    for (k, run) in runs.iter().enumerate() {
        let fault = run["scenario"].as_str().unwrap();
        assert_eq!(
            whatif_cells(browser, fault).await,
            whatif_expected(run),
            "{fault}"
        );
        let canvas = format!(".whatif-chart[data-run='{k}']");
        assert_eq!(attr(browser, &canvas, "data-drawn").await, "chart");
        let label = attr(browser, &canvas, "aria-label").await;
        assert!(label.contains(&format!("during the {fault}")), "{label}");
        let (red, _) = canvas_pixels(browser, &canvas).await;
        assert!(
            red > 100,
            "{fault}: the load as set is drawn: {red} red pixels"
        );
        let rows = script(
            browser,
            &format!(
                "return document.querySelectorAll(\".whatif-chart-wrap[data-fault='{fault}'] .whatif-load tbody tr\").length;"
            ),
        )
        .await;
        assert!(
            rows.as_u64().expect("rows") > 10,
            "{fault}: the load as a table"
        );
    }
}

/// A configuration typed into the box: the three faults as set beside the fix, the fix's
/// snippet and a chart per fault; the what-if's knobs; a knob out of range named.
async fn check_whatif(browser: &Client, server: &PageServer, axe: Option<&str>) {
    click(browser, "#tab-check").await;
    retype(browser, "#check-text", PASTED).await;
    click(browser, "#check-run").await;
    wait_until(
        browser,
        "document.body.dataset.whatifState === 'ready' && document.body.dataset.whatifKey === '3|500|1000|0.3'",
    )
    .await;
    let (status, api) = server
        .post("check/whatif", &json!({ "text": PASTED }))
        .await;
    assert_eq!(status, 200, "{api}");
    assert_eq!(api["system"], "istio");
    whatif_shown(browser, &api).await;
    // The fix's snippet, to paste, or why there is none.
    let changes = api["runs"][0]["fix_changes"].as_array().expect("changes");
    let snippets = script(
        browser,
        "return [...document.querySelectorAll(\".whatif-policy[data-index='0'] .snippet\")].map((p) => p.textContent);",
    )
    .await;
    assert_eq!(
        snippets,
        Value::Array(changes.iter().map(|c| c["snippet"].clone()).collect())
    );
    if changes.is_empty() {
        let why = text(browser, ".whatif-policy[data-index='0'] .whatif-fix").await;
        assert!(why.contains("as set"), "{why}");
    }
    script(
        browser,
        "document.querySelector('#check-whatif').scrollIntoView();",
    )
    .await;
    screenshot(browser, "check-whatif.png").await;
    script(
        browser,
        "document.querySelector('.whatif-chart-wrap').scrollIntoView();",
    )
    .await;
    screenshot(browser, "check-whatif-chart.png").await;
    audit(browser, axe, "check (what-if)").await;

    // The knobs, as `herd check --rps --brownout` set them.
    retype(browser, "#whatif-rps", "200").await;
    retype(browser, "#whatif-brownout", "0.5").await;
    click(browser, "#check-run").await;
    wait_until(
        browser,
        "document.body.dataset.whatifState === 'ready' && document.body.dataset.whatifKey === '3|200|1000|0.5'",
    )
    .await;
    let (status, knobs) = server
        .post(
            "check/whatif",
            &json!({ "text": PASTED, "rps": 200, "brownout": 0.5 }),
        )
        .await;
    assert_eq!(status, 200, "{knobs}");
    whatif_shown(browser, &knobs).await;
    assert_ne!(knobs["runs"][0]["as_set"], api["runs"][0]["as_set"]);

    // A knob out of range: the error names it, its box is marked, nothing stale is left.
    retype(browser, "#whatif-brownout", "2").await;
    click(browser, "#check-run").await;
    wait_until(browser, "document.body.dataset.whatifState === 'error'").await;
    let (status, refused) = server
        .post(
            "check/whatif",
            &json!({ "text": PASTED, "rps": 200, "brownout": 2 }),
        )
        .await;
    assert_eq!(status, 400);
    let error = text(browser, "#whatif-error").await;
    assert_eq!(error, refused["error"].as_str().expect("error"));
    assert!(error.starts_with("brownout: "), "{error}");
    assert_eq!(
        attr(browser, "#whatif-brownout", "aria-invalid").await,
        "true"
    );
    assert!(text(browser, "#whatif-runs").await.is_empty());
    audit(browser, axe, "check (what-if knob out of range)").await;
    retype(browser, "#whatif-brownout", "0.3").await;
    retype(browser, "#whatif-rps", "").await;
    click(browser, "#check-run").await;
    wait_until(
        browser,
        "document.body.dataset.whatifState === 'ready' && document.body.dataset.whatifKey === '3|500|1000|0.3'",
    )
    .await;

    // A phone's width: the tables scroll in their own boxes, nothing is wider than the screen.
    browser.set_window_size(390, 844).await.expect("resize");
    wait_until(
        browser,
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth",
    )
    .await;
    script(
        browser,
        "document.querySelector('#check-whatif').scrollIntoView();",
    )
    .await;
    screenshot(browser, "check-whatif-phone.png").await;
    audit(browser, axe, "check (what-if, phone)").await;
    browser.set_window_size(1200, 1000).await.expect("resize");
}
