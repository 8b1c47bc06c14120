//! Helpers shared by the integration tests: a page server on loopback and a JSON client.
#![allow(dead_code, unreachable_pub)]

use std::io;
use std::net::SocketAddr;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use herd_lab::serve::{self, ServeLimits};

/// The page's limits, except that no run is stopped by the wall clock: a test of what a run
/// answers must not depend on how busy the machine is (a debug build on two loaded cores can
/// take longer than the page's 10 s for its largest runs). The time limit has its own tests.
pub fn unhurried() -> ServeLimits {
    ServeLimits {
        max_run_time: std::time::Duration::from_secs(600),
        ..ServeLimits::default()
    }
}

/// A page server on 127.0.0.1, stopped when dropped.
pub struct PageServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl PageServer {
    pub async fn start(limits: ServeLimits) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve::serve(listener, limits, async {
            let _ = stopped.await;
        }));
        Self {
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Asks the server to shut down, as Ctrl-C does; its task, which ends when serving has.
    pub fn shut_down(mut self) -> JoinHandle<io::Result<()>> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.take().expect("a started server has its task")
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// POSTs `body` to `/api/{path}` and returns the status and the JSON answer.
    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        post_json(self.addr, path, body).await
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// POSTs JSON to `http://addr/api/{path}`.
pub async fn post_json(addr: SocketAddr, path: &str, body: &Value) -> (u16, Value) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = hyper::Request::post(format!("http://{addr}/api/{path}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    let response = client.request(request).await.expect("API answers");
    let status = response.status().as_u16();
    let value = json_body(response.into_body()).await.expect("JSON body");
    (status, value)
}

/// An HTTP body read to its end, as JSON; `None` when it is not JSON.
pub async fn json_body<B>(body: B) -> Option<Value>
where
    B: hyper::body::Body,
    B::Error: std::fmt::Debug,
{
    let bytes = body.collect().await.expect("body").to_bytes();
    serde_json::from_slice(&bytes).ok()
}
