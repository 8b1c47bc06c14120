//! The page in a real browser: headless Chromium, driven over WebDriver (chromedriver).
//!
//! The test starts the page server in-process on 127.0.0.1:0, starts `chromedriver` on a
//! free loopback port, and clicks through the four scenes, checking that every number the
//! page shows equals the API's answer, which the test fetches itself. It saves screenshots
//! to `target/e2e/`.
//!
//! Without `chromium` and `chromedriver` on the PATH the test prints "skipped: …" and
//! passes, except under `CI=true`, where a missing browser is a failure (`.ci/run` installs
//! Debian's `chromium` and `chromium-driver`).
#![cfg(unix)]

mod support;

use std::net::TcpListener as StdListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use herd_lab::serve::ServeLimits;
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

use support::PageServer;

/// The whole browser session must finish within this.
const TEST_TIMEOUT: Duration = Duration::from_secs(180);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_in_headless_chromium() {
    let chromium = find_on_path(&["chromium", "chromium-browser"]);
    let chromedriver = find_on_path(&["chromedriver"]);
    let (Some(chromium), Some(chromedriver)) = (chromium, chromedriver) else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !ci,
            "CI=true but chromium or chromedriver is missing (.ci/run installs them)"
        );
        eprintln!("skipped: chromium or chromedriver not found on PATH");
        return;
    };
    let run = async {
        let server = PageServer::start(ServeLimits::default()).await;
        let driver = Driver::start(&chromedriver);
        driver.wait_ready().await;
        let profile = Path::new(env!("CARGO_TARGET_TMPDIR")).join("chromium-profile");
        let _ = std::fs::remove_dir_all(&profile);
        let browser = connect(&chromium, &profile, driver.port).await;
        let outcome = drive(&browser, &server).await;
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

/// Waits until the JavaScript expression `expr` is true on the page.
async fn wait_until(browser: &Client, expr: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let value = browser
            .execute(&format!("return Boolean({expr});"), vec![])
            .await
            .expect("script runs");
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

async fn click(browser: &Client, css: &str) {
    browser
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
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
    browser
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
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

async fn drive(browser: &Client, server: &PageServer) {
    browser.goto(&server.url()).await.expect("page loads");
    assert_eq!(
        browser.title().await.expect("title"),
        "herd — watch the herd"
    );
    check_storm(browser, server).await;
    check_six(browser, server).await;
    check_dots(browser, server).await;
    check_layers(browser, server).await;
}

async fn check_dots(browser: &Client, server: &PageServer) {
    click(browser, "#tab-dots").await;
    for rule in ["exponential", "full"] {
        click(browser, &format!("#dots-rules button[data-rule={rule}]")).await;
        wait_until(
            browser,
            &format!(
                "document.body.dataset.dotsState === 'ready' && document.body.dataset.dotsRule === '{rule}'"
            ),
        )
        .await;
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

fn number(text: &str) -> f64 {
    text.trim()
        .trim_end_matches(" s")
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {text:?}"))
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
        let checked = browser
            .execute(
                "return document.querySelector('#storm-refusal').checked;",
                vec![],
            )
            .await
            .expect("script runs");
        if checked != Value::Bool(refusal) {
            click(browser, "#storm-refusal").await;
        }
        click(browser, &format!("#storm-rules button[data-rule={rule}]")).await;
        let cost = if refusal { 0.1 } else { 0.0 };
        let key = format!("{rule}|{}|2000", if refusal { "0.1" } else { "0" });
        wait_until(
            browser,
            &format!(
                "document.body.dataset.stormState === 'ready' && document.body.dataset.stormKey === '{key}'"
            ),
        )
        .await;
        let (api, half, all, shown) = compare_storm(browser, server, rule, cost, 2000).await;
        if (rule, refusal) == ("immediate", false) {
            // the storm's figures (docs/model.md), through the page.
            assert_eq!(half, "12.0 s");
            assert_eq!(all, "13.9 s");
            assert_eq!(shown, "120.50");
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
    // The clients slider (the last rule picked, full with the refusal cost, stays on).
    browser
        .execute(
            "const s = document.querySelector('#storm-clients'); \
             s.value = '500'; s.dispatchEvent(new Event('input'));",
            vec![],
        )
        .await
        .expect("script runs");
    wait_until(
        browser,
        "document.body.dataset.stormState === 'ready' && document.body.dataset.stormKey === 'full|0.1|500'",
    )
    .await;
    compare_storm(browser, server, "full", 0.1, 500).await;
    wait_until(browser, "document.body.dataset.stormAnimation === 'done'").await;
    screenshot(browser, "storm.png").await;
}

/// Compares the four figures the Storm scene shows with the API's answer for the same knobs.
async fn compare_storm(
    browser: &Client,
    server: &PageServer,
    rule: &str,
    cost: f64,
    clients: u64,
) -> (Value, String, String, String) {
    let (status, api) = server
            .post(
                "storm",
                &json!({ "rule": rule, "refusal_cost": cost, "clients": clients, "outage_s": 10, "capacity": 50 }),
            )
            .await;
    assert_eq!(status, 200, "{api}");
    let context = format!("{rule}, refusal cost {cost}");

    let half = text(browser, "#storm-half").await;
    match api["half_served_s"].as_f64() {
        Some(s) => assert_eq!(half, format!("{s:.1} s"), "{context}: half served"),
        None => assert_eq!(half, "never", "{context}: half served"),
    }
    let all = text(browser, "#storm-all").await;
    match api["all_served_s"].as_f64() {
        Some(s) => assert_eq!(all, format!("{s:.1} s"), "{context}: all served"),
        None => assert_eq!(all, "not all served", "{context}: all served"),
    }
    let rpc = api["requests_per_client"]
        .as_f64()
        .expect("requests_per_client");
    let shown = text(browser, "#storm-rpc").await;
    assert!(
        (number(&shown) - rpc).abs() <= 0.0051,
        "{context}: requests per client {shown} vs {rpc}"
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
                _ => "✗",
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
    wait_until(
        browser,
        "document.body.dataset.sixState === 'ready' && document.body.dataset.sixRule === 'immediate'",
    )
    .await;
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
    wait_until(
        browser,
        "document.body.dataset.sixState === 'ready' && document.body.dataset.sixRule === 'exponential'",
    )
    .await;
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
    wait_until(
        browser,
        &format!(
            "document.body.dataset.layersState === 'ready' && document.body.dataset.layersKey === '{key}'"
        ),
    )
    .await;
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
        let receives = service["receives"].as_f64().expect("receives");
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
    browser
        .execute(
            "const i = document.querySelector(\"input[data-layer='0']\"); \
             i.value = '2'; i.dispatchEvent(new Event('change'));",
            vec![],
        )
        .await
        .expect("script runs");
    assert_eq!(
        check_layer_loads(browser, server, &[2, 3, 3, 1], false).await,
        [1.0, 2.0, 6.0, 18.0, 18.0]
    );
    screenshot(browser, "layers.png").await;
}
