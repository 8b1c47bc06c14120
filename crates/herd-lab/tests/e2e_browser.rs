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
mod support;

use std::net::TcpListener as StdListener;
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
        let child = Command::new(chromedriver)
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
    check_dots(browser, server).await;
}

async fn check_dots(browser: &Client, server: &PageServer) {
    click(browser, "#tab-dots").await;
    for rule in ["exponential", "full"] {
        click(browser, &format!("#dots-rules button[data-rule={rule}]")).await;
        wait_until(
            browser,
            &format!("document.body.dataset.dotsState === 'ready' && document.body.dataset.dotsRule === '{rule}'"),
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
