#!/usr/bin/python3
"""Start-up overhead of a Trainyard job over running the trainer directly.

A trivial trainer (prints its own time.time() once and exits) is run N times directly
(`/usr/bin/python3 -m trainer.task`) and N times through Trainyard with a warm environment
(one job is run first so the cached environment exists), interleaved. Measured from the spawn
(direct) or from just before the POST that creates the job (Trainyard):

  trainer time   the trainer's own time.time() minus the start: no polling in it
  first line     the line read from the pipe (direct) or seen through the logs API (Trainyard)
  end            the process exited (direct) or GET shows the job SUCCEEDED (Trainyard)

The Trainyard side polls the logs API (until the line is seen) and the job every --poll
seconds over one keep-alive connection, as a client following a job would. A second table
splits the Trainyard time into phases with the timestamps of the job's own service log lines.

Target: overhead (Trainyard - direct) <= 100 ms median.
"""

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

TASK = """import sys
import time

print('trainer-start %.6f' % time.time(), flush=True)
if len(sys.argv) > 1:
    time.sleep(float(sys.argv[1]))
"""
TARGET_MS = 100.0

# Service lines that mark the phases of a job, in order (scheduler and launcher messages).
PHASES = [
    ("queued (create stored)", lambda m: m.startswith("Job ") and m.endswith(" is queued.")),
    ("admitted (PREPARING)", lambda m: m == "Waiting for job to be provisioned."),
    ("launcher spawned", lambda m: m == "Waiting for training program to start."),
    ("environment found", lambda m: m.startswith("Using cached environment")),
    ("python spawned", lambda m: m.startswith("Running command:")),
    ("trainer line read", None),  # the trainer's own line, stamped by the launcher
    ("trainer exited", lambda m: m == "Module completed; cleaning up."),
    ("launcher cleaned up", lambda m: m == "Clean up finished."),
    ("SUCCEEDED stored", lambda m: m == "Job completed successfully."),
]


def parse_ts(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def run_direct(root, args):
    t0_wall = time.time()
    t0 = time.perf_counter()
    p = subprocess.Popen([common.PYTHON, "-m", "trainer.task"] + args, cwd=root,
                         stdout=subprocess.PIPE, env=common.trainer_env())
    line = p.stdout.readline()
    t_line = time.perf_counter()
    p.stdout.read()
    rc = p.wait()
    t_end = time.perf_counter()
    if rc != 0 or not line.startswith(b"trainer-start "):
        raise RuntimeError("direct run failed: rc %d, %r" % (rc, line))
    return {"trainer": float(line.split()[1]) - t0_wall, "line": t_line - t0, "end": t_end - t0}


def run_trainyard(client, job_id, uri, poll, args):
    logs_path = "/v1/projects/%s/jobs/%s/logs?afterInsertId=" % (common.PROJECT, job_id)
    job_path = "/v1/projects/%s/jobs/%s" % (common.PROJECT, job_id)
    body = common.job_body(job_id, uri, args)
    t0_wall = time.time()
    t0 = time.perf_counter()
    client.check("POST", "/v1/projects/%s/jobs" % common.PROJECT, body)
    r = {"ack": time.perf_counter() - t0}
    after = 0
    printed = None
    deadline = t0 + 60
    while True:
        if printed is None:
            out = client.check("GET", logs_path + str(after))
            for e in out.get("entries", []):
                msg = e["jsonPayload"]["message"]
                if e["resource"]["labels"]["task_name"] != "service" and \
                        msg.startswith("trainer-start "):
                    printed = float(msg.split()[1])
                    r["line"] = time.perf_counter() - t0
            after = int(out.get("nextAfterInsertId", after))
        state = client.check("GET", job_path)["state"]
        if state == "SUCCEEDED" and printed is not None:
            r["end"] = time.perf_counter() - t0
            break
        if state in ("FAILED", "CANCELLED"):
            raise RuntimeError("job %s ended %s" % (job_id, state))
        if time.perf_counter() > deadline:
            raise RuntimeError("job %s did not finish in 60 s" % job_id)
        if state != "SUCCEEDED":
            time.sleep(poll)
    r["trainer"] = printed - t0_wall
    # Where the time went, from the job's log timestamps (stamped by the daemon and launcher).
    entries = client.logs(job_id)["entries"]
    marks = {}
    for e in entries:
        msg = e["jsonPayload"]["message"]
        ts = parse_ts(e["timestamp"]) - t0_wall
        if e["resource"]["labels"]["task_name"] != "service":
            if msg.startswith("trainer-start "):
                marks.setdefault("trainer line read", ts)
            continue
        for name, match in PHASES:
            if match is not None and match(msg):
                marks.setdefault(name, ts)
    r["phases"] = marks
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="runs of each kind (default 20)")
    ap.add_argument("--poll", type=float, default=0.002, help="poll interval in s (0.002)")
    ap.add_argument("--linger", type=float, default=0.0,
                    help="seconds the trainer sleeps after its line (default 0: it exits); "
                    "shows how soon a line of a still-running trainer is visible")
    args = ap.parse_args()
    targs = ["%g" % args.linger] if args.linger > 0 else []

    print("bench_overhead: %d direct and %d Trainyard runs of a trivial trainer (warm env), "
          "poll every %.0f ms%s" % (args.runs, args.runs, args.poll * 1000,
                                    ", trainer lingers %g s" % args.linger if targs else ""))
    print("machine: %s" % common.machine_description())
    work = tempfile.mkdtemp(prefix="trainyard-bench-overhead-")
    root = common.write_package(os.path.join(work, "src"), TASK)
    with common.Daemon(data_dir=os.path.join(work, "data")) as d:
        c = d.client()
        uri = common.stage_package(c, TASK, "overhead")
        t = time.perf_counter()
        common.run_job(c, "overhead_cold", uri)
        cold = time.perf_counter() - t
        print("cold run (builds the cached environment): %.2f s" % cold)
        run_direct(root, targs)
        run_trainyard(c, "overhead_warmup", uri, args.poll, targs)

        direct, ty = [], []
        cpu0 = d.cpu_seconds()
        for i in range(args.runs):
            if i % 2 == 0:
                direct.append(run_direct(root, targs))
                ty.append(run_trainyard(c, "overhead_%d" % i, uri, args.poll, targs))
            else:
                ty.append(run_trainyard(c, "overhead_%d" % i, uri, args.poll, targs))
                direct.append(run_direct(root, targs))
        daemon_cpu = d.cpu_seconds() - cpu0
        c.close()
    shutil.rmtree(work, ignore_errors=True)

    def col(rs, key):
        return [r[key] for r in rs]

    rows = []
    results = {}
    for key, label in [("trainer", "start -> trainer's time.time()"),
                       ("line", "start -> first line visible"),
                       ("end", "start -> exit / SUCCEEDED seen")]:
        dv, tv = col(direct, key), col(ty, key)
        over = common.median(tv) - common.median(dv)
        paired = common.median([b - a for a, b in zip(dv, tv)])
        results[key] = over
        rows.append([label, common.ms(common.median(dv)), common.ms(common.percentile(dv, 90)),
                     common.ms(common.median(tv)), common.ms(common.percentile(tv, 90)),
                     common.ms(over), common.ms(paired)])
    acks = col(ty, "ack")
    rows.append(["POST acknowledged", "", "", common.ms(common.median(acks)),
                 common.ms(common.percentile(acks, 90)), "", ""])
    common.table("Start-up overhead, ms (N=%d each; overhead = Trainyard median - direct median; "
                 "paired = median of per-pair differences)" % args.runs,
                 ["measure", "direct p50", "direct p90", "trainyard p50", "trainyard p90",
                  "overhead", "paired"], rows)

    prows = []
    prev = 0.0
    for name, _ in PHASES:
        vals = [r["phases"][name] for r in ty if name in r["phases"]]
        if not vals:
            continue
        med = common.median(vals)
        prows.append([name, common.ms(med), common.ms(common.percentile(vals, 90)),
                      common.ms(med - prev)])
        prev = med
    common.table("Trainyard phases from the job's log timestamps (ms after the POST was sent)",
                 ["phase", "p50", "p90", "step (p50)"], prows)
    print("daemon CPU during the %d Trainyard runs: %.2f s (%.1f ms per job)" % (
        args.runs, daemon_cpu, daemon_cpu * 1000 / args.runs))
    ok = results["end"] * 1000 <= TARGET_MS
    print("target: overhead to the end <= %.0f ms median: %.1f ms -> %s" % (
        TARGET_MS, results["end"] * 1000, common.verdict(ok)))
    print("        overhead to the first line visible: %.1f ms -> %s; by the trainer's own "
          "clock: %.1f ms -> %s" % (
              results["line"] * 1000, common.verdict(results["line"] * 1000 <= TARGET_MS),
              results["trainer"] * 1000, common.verdict(results["trainer"] * 1000 <= TARGET_MS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
