#!/usr/bin/python3
"""Durable job creates per second.

With admission paused (jobs stay QUEUED, nothing is launched), C concurrent clients (default
8), each on one keep-alive HTTP connection, POST jobs back to back for --duration seconds or
--requests creates, whichever comes first. Every create is acknowledged only after its SQLite
commit, so each 200 is a durable job. The client is ty_loadgen (C++, bench/loadgen.cc) so that
client overhead stays far below the server's; its CPU time is reported beside the daemon's.
Afterwards the jobs table is counted to check that every acknowledged create is stored.

Target: >= 2,000 durable creates/s.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

TARGET = 2000.0


def create(port, body, connections, duration, requests, start, close=False):
    return common.loadgen(port, "POST", "/v1/projects/%s/jobs" % common.PROJECT, body,
                          connections, duration, requests, start, close)


def count_jobs(data_dir):
    return common.count_rows(data_dir, "SELECT count(*) FROM jobs")[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--requests", type=int, default=20000)
    args = ap.parse_args()

    print("bench_creates: %d keep-alive clients, admission paused, %.0f s or %d creates" % (
        args.connections, args.duration, args.requests))
    print("machine: %s" % common.machine_description())
    rows = []
    with common.Daemon(extra_args=["--admission-paused"]) as d:
        c = d.client()
        uri = common.stage_package(c, "print('hello')\n", "creates")
        c.close()
        body = json.dumps(common.job_body("job_{i}", uri), separators=(",", ":"))
        # Warm-up: a few hundred creates on fresh connections (not counted).
        create(d.port, body, 2, 2.0, 200, 10_000_000, close=True)
        runs = [("keep-alive (the target)", False, 0),
                ("new connection per request", True, 1_000_000)]
        for label, close, start in runs:
            before = count_jobs(d.data_dir)
            cpu0 = d.cpu_seconds()
            r = create(d.port, body, args.connections, args.duration, args.requests, start,
                        close=close)
            server_cpu = d.cpu_seconds() - cpu0
            stored = count_jobs(d.data_dir) - before
            lat = r["latency_ms"]
            rows.append([label, r["ok"], "%.2f" % r["elapsed_s"], "%.0f" % r["ok_per_s"],
                         "%.3f" % lat["p50"], "%.3f" % lat["p99"], "%.3f" % lat["max"],
                         "%.2f" % server_cpu, "%.2f" % r["client_cpu_s"],
                         "%.0f" % (server_cpu * 1e6 / max(r["ok"], 1)),
                         "yes" if stored == r["ok"] else "NO (%d stored)" % stored])
            errors = {k: v for k, v in r["status"].items() if k != "200"}
            if errors:
                print("non-200 answers (%s): %s" % (label, errors))
            if label.startswith("keep-alive"):
                keep = r
                keep_cpu = [server_cpu]
        rss = d.rss_kb()
    common.table("Creates (%d clients, admission paused; latency in ms, CPU in s)" %
                 args.connections,
                 ["connections", "creates", "secs", "creates/s", "p50", "p99", "max",
                  "server CPU", "client CPU", "server CPU us/create", "all stored"], rows)
    print("daemon RSS after the run: %.1f MB" % (rss / 1024.0))
    busy = (keep_cpu[0] + keep["client_cpu_s"]) / keep["elapsed_s"]
    print("keep-alive run: daemon %.2f cores, client %.2f cores busy of %d" % (
        keep_cpu[0] / keep["elapsed_s"], keep["client_cpu_s"] / keep["elapsed_s"],
        os.cpu_count()))
    if busy < 0.5 * os.cpu_count():
        print("  -> neither side is CPU-bound: requests wait (p50 %.1f ms per create)" %
              keep["latency_ms"]["p50"])
    ok = keep["ok_per_s"] >= TARGET
    print("target: >= %.0f durable creates/s on keep-alive connections: %.0f/s -> %s" % (
        TARGET, keep["ok_per_s"], common.verdict(ok)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
