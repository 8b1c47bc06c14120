//! `herd serve` and `herd lab storm` from the command line: the page is served on loopback,
//! and bad input is one line naming the flag or field, with exit code 2.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use crate::support;

use std::time::Duration;
use support::{fails_with_input_error, herd, stderr, temp};

/// Kills the server when the test ends, pass or fail.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `herd serve ARGS…`; the running server and the first line it printed.
fn serve(args: &[&str]) -> (Running, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_herd"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start herd serve");
    let mut running = Running(child);
    let stdout = running.0.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("a line");
    (running, line)
}

#[test]
fn serve_prints_its_loopback_url_and_serves_the_page() {
    let (_running, line) = serve(&["--port", "0"]);
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no loopback URL in {line:?}"));
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut stream = TcpStream::connect(&addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut page = String::new();
    stream.read_to_string(&mut page).expect("response");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("<title>herd — watch the herd</title>"));
}

#[test]
fn serve_refuses_zero_concurrent_simulations() {
    fails_with_input_error(
        &["serve", "--max-concurrent", "0"],
        "max_concurrent must be in [1, 1024], got 0 (--max-concurrent)",
    );
}

/// Before, a count past tokio's semaphore ceiling panicked.
#[test]
fn serve_refuses_a_count_of_simulations_past_its_range() {
    fails_with_input_error(
        &["serve", "--max-concurrent", "2305843009213693952"],
        "max_concurrent must be in [1, 1024], got 2305843009213693952 (--max-concurrent)",
    );
}

/// Ctrl-C while a simulation runs: the command ends within the server's grace. Before, the
/// port closed but the process waited for the simulation (seconds; for ever on a run that
/// never ended).
#[test]
fn serve_exits_in_time_on_ctrl_c_while_a_simulation_runs() {
    let (mut running, line) = serve(&["--port", "0"]);
    let addr = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .expect("a URL")
        .trim_end_matches('/')
        .to_owned();
    let body = format!(
        r#"{{"fan_out": 10, "requests": {}}}"#,
        herd_lab::serve::hedge::affordable(10)
    );
    let mut stream = TcpStream::connect(&addr).expect("connect");
    write!(
        stream,
        "POST /api/hedge HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("request");
    // Let the simulation start.
    std::thread::sleep(Duration::from_millis(300));
    let pid = running.0.id().to_string();
    let sent = Command::new("kill").args(["-INT", &pid]).status();
    assert!(sent.is_ok_and(|s| s.success()), "kill -INT");
    let started = std::time::Instant::now();
    let limit = herd_lab::serve::SHUTDOWN_GRACE + Duration::from_secs(2);
    let status = loop {
        if let Some(status) = running.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            started.elapsed() < limit,
            "still running {limit:?} after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success() || status.code().is_some(), "{status:?}");
}

#[test]
fn lab_storm_refuses_a_step_shorter_than_a_timer_tick() {
    fails_with_input_error(
        &["lab", "storm", "--time-scale", "0.001"],
        "error: time scale 0.001: a 100 ms step would last",
    );
}

#[test]
fn lab_storm_refuses_what_it_does_not_model_naming_the_field() {
    let path = temp("warmup.toml");
    std::fs::write(&path, "[server]\nwarmup_s = 3\n").expect("write scenario");
    fails_with_input_error(
        &["lab", "storm", path.to_str().expect("utf-8 path")],
        "error: server.warmup_s: lab storm does not model warm-up",
    );
}

#[test]
fn lab_storm_refuses_too_many_clients() {
    fails_with_input_error(
        &["lab", "storm", "--clients", "100000"],
        "clients must be in [1, 5000], got 100000 (--clients)",
    );
}

#[test]
fn serve_binds_a_host_name_such_as_localhost() {
    // Before: --host took only an IP address ("invalid IP address syntax").
    let (_running, line) = serve(&["--host", "localhost", "--port", "0"]);
    assert!(
        line.starts_with("herd serve: http://127.0.0.1:")
            || line.starts_with("herd serve: http://[::1]:"),
        "{line}"
    );
}

#[test]
fn serve_refuses_a_host_that_does_not_resolve() {
    let o = herd(&["serve", "--host", "no-such-host.invalid", "--port", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("does not resolve"), "{}", stderr(&o));
}

/// The address `herd serve --port 0` printed.
fn served_addr(line: &str) -> String {
    line.split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no loopback URL in {line:?}"))
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned()
}

/// POSTs `body` to `/api/{path}` on `addr`; the status and the JSON answer.
fn post(addr: &str, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
    let body = body.to_string();
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    write!(
        stream,
        "POST /api/{path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("response");
    let (head, json) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status in {head:?}"));
    (
        status,
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}")),
    )
}

/// Every `file` in `v` (a run's, and its fix's changes'), which names the pasted text on the
/// page and the path on the command line, set to `file`.
fn with_file(mut v: serde_json::Value, file: &str) -> serde_json::Value {
    if let Some(o) = v.as_object_mut() {
        for (k, x) in o.iter_mut() {
            if k == "file" {
                *x = serde_json::Value::from(file);
            } else {
                *x = with_file(x.take(), file);
            }
        }
    } else if let Some(a) = v.as_array_mut() {
        for x in a.iter_mut() {
            *x = with_file(x.take(), file);
        }
    }
    v
}

/// The page's what-if of a pasted file is `herd check --format json`'s, run for run: the same
/// faults, figures, fix (snippets included) and notes, and the same settings, for the
/// defaults and for the knobs the page offers.
#[test]
fn the_pages_whatif_is_herd_checks() {
    let (_running, line) = serve(&["--port", "0"]);
    let addr = served_addr(&line);
    let path = "scenarios/configs/envoy-route.yaml";
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/configs/envoy-route.yaml"
    ))
    .expect("the example");
    for (flags, knobs) in [
        (vec![], serde_json::json!({})),
        (
            vec!["--rps", "300", "--capacity-rps", "800", "--brownout", "0.4"],
            serde_json::json!({ "rps": 300, "capacity_rps": 800, "brownout": 0.4 }),
        ),
    ] {
        let mut args = vec!["check", "--format", "json", path];
        args.extend(flags.iter().copied());
        let o = herd(&args);
        let cli: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
        let mut body = knobs.clone();
        body["text"] = serde_json::Value::from(text.as_str());
        let (status, page) = post(&addr, "check/whatif", &body);
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["whatif"], cli["whatif"], "{knobs}");
        let cli_runs = cli["runs"].as_array().expect("runs");
        let page_runs = page["runs"].as_array().expect("runs");
        assert_eq!(page_runs.len(), cli_runs.len(), "{knobs}");
        assert!(!cli_runs.is_empty());
        for (shown, printed) in page_runs.iter().zip(cli_runs) {
            let printed = with_file(printed.clone(), "config");
            for (k, v) in printed.as_object().expect("a run") {
                assert_eq!(
                    &shown[k], v,
                    "{knobs} {} {}: {k}",
                    printed["policy"], printed["scenario"]
                );
            }
        }
    }
}
