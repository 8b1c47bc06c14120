//! `herd serve` and `herd lab storm` from the command line: the page is served on loopback,
//! and bad input is one line naming the flag or field, with exit code 2.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

mod support;

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
        "--max-concurrent must be at least 1",
    );
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
