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
