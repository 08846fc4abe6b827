#!/usr/bin/python3
"""The cost of authentication: durable creates/s and list latency with auth off and on, in one
run (bench_creates' and bench_list's measurements, docs/security.md).

Two daemons on fresh data dirs, one with auth: false and one with auth: true, measured in
turns (off, on, off, on, ... --rounds times) so that load from elsewhere on the machine falls on
both alike. With auth on, the requests come from a non-administrator (roles/ml.developer and
roles/storage.objectAdmin on the project), so every request is authenticated (token hash, cache
lookup) and authorized (policy evaluation), every create also writes the creator's job policy,
and every create is audited (one more SQLite commit). Creates: C keep-alive clients (default 8)
with admission paused for --duration seconds. Lists: --requests GET jobs?pageSize=100 over 2
keep-alive clients once the creates are stored.

Target: auth on costs at most 5% of creates/s and of list p50.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

DEV = "bench-dev@example.com"


def setup(d, auth):
    """Returns (token, package URI); token "" with auth off."""
    admin = ""
    if auth:
        with open(os.path.join(d.data_dir, "admin-token")) as f:
            admin = f.read().strip()
    c = common.Client(d.host, d.port, token=admin)
    token = ""
    if auth:
        c.check("POST", "/v1/admin/principals", {"email": DEV})
        token = c.check("POST", "/v1/admin/principals/%s/tokens" % DEV, {})["token"]
        c.check("POST", "/v1/projects/%s:setIamPolicy" % common.PROJECT, {"policy": {"bindings": [
            {"role": "roles/ml.developer", "members": ["user:" + DEV]},
            {"role": "roles/storage.objectAdmin", "members": ["user:" + DEV]}]}})
    uri = common.stage_package(c, "print('hello')\n", "auth")
    c.close()
    return token, uri


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print("bench_auth: %d keep-alive clients, admission paused, %.0f s of creates and %d lists "
          "per round, %d rounds" % (args.connections, args.duration, args.requests, args.rounds))
    print("machine: %s" % common.machine_description())
    daemons, setups = {}, {}
    for mode in ("off", "on"):
        cfg_env = {"TRAINYARD_AUTH": "true" if mode == "on" else "false"}
        daemons[mode] = common.Daemon(extra_args=["--admission-paused"], env=cfg_env).start()
        setups[mode] = setup(daemons[mode], mode == "on")
    results = {"off": [], "on": []}
    try:
        for r in range(args.rounds):
            for mode in ("off", "on"):
                d = daemons[mode]
                token, uri = setups[mode]
                headers = ["Authorization: Bearer " + token] if token else []
                body = json.dumps(common.job_body("job_{i}", uri), separators=(",", ":"))
                cpu0 = d.cpu_seconds()
                c = common.loadgen(d.port, "POST", "/v1/projects/%s/jobs" % common.PROJECT, body,
                                   args.connections, args.duration, 0, (r + 1) * 10_000_000,
                                   headers=headers)
                cpu = d.cpu_seconds() - cpu0
                bad = {k: v for k, v in c["status"].items() if k != "200"}
                if bad:
                    sys.exit("non-200 creates with auth %s: %s" % (mode, bad))
                lst = common.loadgen(d.port, "GET", "/v1/projects/%s/jobs?pageSize=100" %
                                     common.PROJECT, "", 2, 60.0, args.requests, 0,
                                     headers=headers)
                bad = {k: v for k, v in lst["status"].items() if k != "200"}
                if bad:
                    sys.exit("non-200 lists with auth %s: %s" % (mode, bad))
                results[mode].append((c["ok_per_s"], c["latency_ms"]["p50"],
                                      c["latency_ms"]["p99"], cpu * 1e6 / max(c["ok"], 1),
                                      lst["latency_ms"]["p50"], lst["latency_ms"]["p99"]))
    finally:
        for d in daemons.values():
            d.stop()
    rows = []
    for mode in ("off", "on"):
        for i, v in enumerate(results[mode]):
            rows.append([mode, i + 1, "%.0f" % v[0], "%.2f" % v[1], "%.2f" % v[2], "%.0f" % v[3],
                         "%.2f" % v[4], "%.2f" % v[5]])
    common.table("Auth off vs on (creates: %d clients; lists: pageSize=100, 2 clients; ms)" %
                 args.connections,
                 ["auth", "round", "creates/s", "create p50", "create p99",
                  "server CPU us/create", "list p50", "list p99"], rows)
    med = {m: [common.median([v[k] for v in results[m]]) for k in range(6)] for m in results}
    create_cost = 1 - med["on"][0] / med["off"][0]
    list_cost = med["on"][4] / med["off"][4] - 1
    cpu_cost = med["on"][3] / med["off"][3] - 1
    print("median creates/s: off %.0f, on %.0f (%+.1f%%); server CPU per create %+.1f%%" % (
        med["off"][0], med["on"][0], -100 * create_cost, 100 * cpu_cost))
    print("median list p50: off %.2f ms, on %.2f ms (%+.1f%%)" % (
        med["off"][4], med["on"][4], 100 * list_cost))
    print("target (<= 5%% cost): creates %s, lists %s" % (
        common.verdict(create_cost <= 0.05), common.verdict(list_cost <= 0.05)))


if __name__ == "__main__":
    main()
