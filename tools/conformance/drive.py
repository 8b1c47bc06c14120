#!/usr/bin/env python3
"""Drives a real retry client against a loopback server that fails as told, and prints what
the client did, call by call, as one JSON object.

    PYTHONPATH=.ci/py/botocore-1.44.8 python3 tools/conformance/drive.py botocore \\
        --config FILE --calls N --fail 503|throttle|K [--calls-per-client M]
    PYTHONPATH=.ci/py/grpcio-1.85.3 python3 tools/conformance/drive.py grpcio \\
        --config SERVICE_CONFIG.json --calls N --fail unavailable|K [--concurrency C]

`--fail 503` answers every attempt with HTTP 503 (a transient error), `throttle` with a 400
`Throttling` error, `unavailable` with gRPC UNAVAILABLE, and a number K fails the first K
attempts of each call and answers the next. The server listens on 127.0.0.1 on an ephemeral
port, records the arrival of every attempt (time.monotonic, server side) by call, and stops
with the driver; the whole run is bounded by an alarm (`--limit-s`, 120 s by default).

botocore sleeps between attempts with `time.sleep(delay)` (botocore/endpoint.py
`_needs_retry`): the driver records every delay botocore asks for and sleeps
`delay * --sleep-scale` (0 by default), so a schedule of seconds is measured in
milliseconds. grpcio (gRPC core) sleeps in C: its pauses are measured at the server, as the
gap between an attempt's failure and the next attempt's arrival.

tools/conformance/README.md says how crates/herd-cli/tests/suite/conformance.rs compares this with
`herd check`'s translation of the same file.
"""
import argparse
import http.server
import json
import os
import signal
import sys
import threading
import time


class Recorder:
    """Arrivals by call, and the failure plan the server follows."""

    def __init__(self, fail):
        self.lock = threading.Lock()
        self.fail = fail
        self.calls = {}  # call id -> [(arrival, answered_at, failed)]

    def attempt(self, call):
        """Records an arrival; says whether this attempt fails."""
        now = time.monotonic()
        with self.lock:
            attempts = self.calls.setdefault(call, [])
            if self.fail.isdigit():
                failed = len(attempts) < int(self.fail)
            else:
                failed = True
            attempts.append([now, now, failed])
            return failed, attempts[-1]

    def answered(self, entry):
        with self.lock:
            entry[1] = time.monotonic()


def drive_botocore(args):
    import botocore
    import botocore.config
    import botocore.exceptions
    import botocore.session

    rec = Recorder(args.fail)
    current = {"call": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            self.rfile.read(length)
            failed, entry = rec.attempt(current["call"])
            if failed and args.fail == "throttle":
                body = (
                    b"<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code>"
                    b"<Message>Rate exceeded</Message></Error><RequestId>1</RequestId>"
                    b"</ErrorResponse>"
                )
                status = 400
            elif failed:
                body, status = b"", 503
            else:
                body = (
                    b'<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/'
                    b'2011-06-15/"><GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:'
                    b"user/x</Arn><UserId>X</UserId><Account>123456789012</Account>"
                    b"</GetCallerIdentityResult><ResponseMetadata><RequestId>1</RequestId>"
                    b"</ResponseMetadata></GetCallerIdentityResponse>"
                )
                status = 200
            self.send_response(status)
            self.send_header("Content-Type", "text/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            rec.answered(entry)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d" % server.server_address[1]

    sleeps = {}
    real_sleep = time.sleep

    def sleep(delay):
        sleeps.setdefault(current["call"], []).append(delay)
        if args.sleep_scale > 0:
            real_sleep(delay * args.sleep_scale)

    time.sleep = sleep
    os.environ["AWS_CONFIG_FILE"] = args.config
    for var in ("AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", "AWS_NEW_RETRIES_2026"):
        os.environ.pop(var, None)
    config = botocore.config.Config(connect_timeout=2, read_timeout=2)
    calls = []
    client = None
    # One session (it caches the service model); a client per --calls-per-client calls, each
    # with its own retry quota.
    session = botocore.session.Session(profile=args.profile)
    for i in range(args.calls):
        if client is None or i % args.calls_per_client == 0:
            client = session.create_client(
                args.service,
                region_name="us-east-1",
                endpoint_url=url,
                aws_access_key_id="conformance",
                aws_secret_access_key="conformance",
                config=config,
            )
        current["call"] = i
        ok = True
        try:
            client.get_caller_identity()
        except botocore.exceptions.ClientError:
            ok = False
        arrivals = rec.calls.get(i, [])
        calls.append(
            {
                "attempts": len(arrivals),
                "ok": ok,
                "client": i // args.calls_per_client,
                "sleeps": sleeps.get(i, []),
                "arrivals": [a[0] for a in arrivals],
            }
        )
    server.shutdown()
    return {"client": "botocore", "version": botocore.__version__, "calls": calls}


def drive_grpcio(args):
    import concurrent.futures

    import grpc

    rec = Recorder(args.fail)

    def handle(request, context):
        call = dict(context.invocation_metadata()).get("call-id", "?")
        if call == "warm-up":
            return b"ok"
        failed, entry = rec.attempt(call)
        if args.hold_ms:
            time.sleep(args.hold_ms / 1000.0)
        rec.answered(entry)
        if failed:
            context.abort(grpc.StatusCode.UNAVAILABLE, "conformance: failing as told")
        return b"ok"

    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "conformance.Echo", {"Call": grpc.unary_unary_rpc_method_handler(handle)}
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    with open(args.config) as f:
        service_config = f.read()
    channel = grpc.insecure_channel(
        "127.0.0.1:%d" % port,
        options=[
            ("grpc.service_config", service_config),
            ("grpc.enable_retries", 1),
        ],
    )
    grpc.channel_ready_future(channel).result(timeout=10)
    stub = channel.unary_unary("/conformance.Echo/Call")
    # One answered call first, so that no measured call waits for the connection.
    stub(b"x", metadata=(("call-id", "warm-up"),), timeout=10)

    def one(i):
        try:
            stub(b"x", metadata=(("call-id", str(i)),), timeout=10)
            return True
        except grpc.RpcError:
            return False

    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.concurrency)) as pool:
        for i, ok in zip(range(args.calls), pool.map(one, range(args.calls))):
            results[i] = ok
    calls = []
    for i in range(args.calls):
        attempts = rec.calls.get(str(i), [])
        calls.append(
            {
                "attempts": len(attempts),
                "ok": results[i],
                "arrivals": [a[0] for a in attempts],
                # The pause before retry n: its arrival less the failure before it.
                "gaps": [b[0] - a[1] for a, b in zip(attempts, attempts[1:])],
                # Arrival to arrival: hedged copies go out on a timer, not after a failure.
                "spacing": [b[0] - a[0] for a, b in zip(attempts, attempts[1:])],
            }
        )
    channel.close()
    server.stop(0)
    return {"client": "grpcio", "version": grpc.__version__, "calls": calls}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("client", choices=["botocore", "grpcio"])
    p.add_argument("--config", required=True)
    p.add_argument("--calls", type=int, default=100)
    p.add_argument("--fail", default="503")
    p.add_argument("--profile", default="default")
    p.add_argument("--service", default="sts")
    p.add_argument("--calls-per-client", type=int, default=1)
    p.add_argument("--sleep-scale", type=float, default=0.0)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--hold-ms", type=int, default=0, help="grpcio: answer each attempt after")
    p.add_argument("--limit-s", type=int, default=120)
    args = p.parse_args()
    if not 1 <= args.calls <= 5000:
        p.error("--calls must be in [1, 5000]")
    signal.alarm(args.limit_s)
    out = drive_botocore(args) if args.client == "botocore" else drive_grpcio(args)
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
