#!/usr/bin/python3
"""API latency while many connections are held (issue 17): --idle keep-alive connections that
made one request and stay open (default 256), --silent connections that never send a byte
(default 64) and --followers log followers (default 100) polling a job's logs every --interval
seconds (default 0.2; 0 = back to back) on their own keep-alive connections. Meanwhile ty_loadgen sends GET jobs/{id} on 8 keep-alive
connections for --duration seconds. Reports the API's p50/p99 and errors, the followers' polls,
and the daemon's threads, RSS and CPU.

Targets: 0 errors; API p99 <= 100 ms; daemon threads < 100 (idle connections hold no thread;
with --interval 0 every follower is a busy client and the pool grows to match).
"""

import argparse
import http.client
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

TASK = "print('hello')\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--idle", type=int, default=256)
    ap.add_argument("--silent", type=int, default=64)
    ap.add_argument("--followers", type=int, default=100)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--interval", type=float, default=0.2)
    args = ap.parse_args()

    with common.Daemon() as d:
        c = d.client()
        uri = common.stage_package(c, TASK, "conn")
        c.check("POST", "/v1/projects/%s/jobs" % common.PROJECT, common.job_body("held_1", uri))
        held = []
        for _ in range(args.idle):
            h = http.client.HTTPConnection(d.host, d.port, timeout=60)
            h.request("GET", "/healthz")
            h.getresponse().read()
            held.append(h)
        for _ in range(args.silent):
            held.append(socket.create_connection((d.host, d.port), timeout=60))
        stop = threading.Event()
        polls, errors = [0], [0]

        def follow():
            h = http.client.HTTPConnection(d.host, d.port, timeout=60)
            after = 0
            while not stop.is_set():
                try:
                    h.request("GET", "/v1/projects/%s/jobs/held_1/logs?afterInsertId=%d" % (
                        common.PROJECT, after))
                    r = h.getresponse()
                    body = json.loads(r.read())
                    if r.status != 200:
                        errors[0] += 1
                        continue
                    after = int(body["nextAfterInsertId"])
                    polls[0] += 1
                    stop.wait(args.interval)
                except (OSError, http.client.HTTPException, ValueError):
                    errors[0] += 1
                    h.close()
                    h = http.client.HTTPConnection(d.host, d.port, timeout=60)
            h.close()

        threads = [threading.Thread(target=follow) for _ in range(args.followers)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        cpu0 = d.cpu_seconds()
        report = common.loadgen(d.port, "GET", "/v1/projects/%s/jobs/held_1" % common.PROJECT,
                                connections=8, duration=args.duration)
        cpu = d.cpu_seconds() - cpu0
        daemon_threads = common.proc_status_kb(d.pid, "Threads")
        rss_mb = d.rss_kb() / 1024.0
        stop.set()
        for t in threads:
            t.join()
        for h in held:
            h.close()

    lat = report["latency_ms"]
    api_errors = report["requests"] - report["ok"]
    common.table(
        "API while %d idle + %d silent connections and %d followers are held (%.0f s)" % (
            args.idle, args.silent, args.followers, args.duration),
        ["measure", "value", "target"],
        [["API requests answered", "%d (%.0f/s)" % (report["ok"], report["ok_per_s"]), ""],
         ["API p50 / p99", "%.2f / %.2f ms" % (lat["p50"], lat["p99"]), "p99 <= 100 ms"],
         ["API errors", str(api_errors), "0"],
         ["follower polls (errors)", "%d (%d)" % (polls[0], errors[0]), "0 errors"],
         ["daemon threads", str(daemon_threads), "< 100"],
         ["daemon RSS / CPU", "%.0f MB / %.1f s" % (rss_mb, cpu), ""]])
    ok = api_errors == 0 and errors[0] == 0 and lat["p99"] <= 100 and daemon_threads < 100
    print(common.verdict(ok))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
