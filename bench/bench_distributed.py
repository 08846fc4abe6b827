#!/usr/bin/python3
"""Start-up latency of a distributed job: submit -> every replica running.

A CUSTOM job of 1 master + 8 workers + 3 parameter servers (n1-standard-4, 12 replicas) whose
trainers write their own time.time() to a file as their first Python line; the master then
waits until all 12 have done so and exits 0 (the others are stopped by Trainyard). One job is
run first to build the cached environment; then N timed runs, each from just before the POST:

  RUNNING seen         GET, polled every --poll seconds over one keep-alive connection, shows
                       RUNNING
  first/last replica   the earliest/latest of the 12 trainers' own time.time() at their first
  python               line
  SUCCEEDED seen       GET shows SUCCEEDED (includes the master's wait and the teardown)

(The job's startTime has whole seconds, as the service's, so it cannot time this.)

Target: POST -> RUNNING <= 1 s, and POST -> last replica's first Python line <= 1 s (median).
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

TASK = """import time
STARTED = time.time()
import json
import os
import sys

shared = sys.argv[1]
task = json.loads(os.environ["TF_CONFIG"])["task"]
name = "%s-%s-%d" % (os.environ["CLOUD_ML_JOB_ID"], task["type"], task["index"])
with open(os.path.join(shared, ".%s.tmp" % name), "w") as f:
    f.write("%.6f" % STARTED)
os.replace(os.path.join(shared, ".%s.tmp" % name), os.path.join(shared, "start-" + name))
if task["type"] in ("master", "chief"):
    deadline = time.time() + 120
    prefix = "start-%s-" % os.environ["CLOUD_ML_JOB_ID"]
    while len([n for n in os.listdir(shared) if n.startswith(prefix)]) < int(sys.argv[2]):
        if time.time() > deadline:
            sys.exit("not every replica started")
        time.sleep(0.005)
else:
    while True:
        time.sleep(1)
"""
WORKERS, PS = 8, 3
REPLICAS = 1 + WORKERS + PS
MACHINE = "n1-standard-4"
TARGET_S = 1.0


def job_body(job_id, uri, shared):
    body = common.job_body(job_id, uri, [shared, str(REPLICAS)])
    body["trainingInput"].update({
        "scaleTier": "CUSTOM", "masterType": MACHINE, "workerType": MACHINE,
        "workerCount": str(WORKERS), "parameterServerType": MACHINE,
        "parameterServerCount": str(PS)})
    return body


def run(client, job_id, uri, shared, poll):
    path = "/v1/projects/%s/jobs/%s" % (common.PROJECT, job_id)
    body = job_body(job_id, uri, shared)
    t0 = time.time()
    client.check("POST", "/v1/projects/%s/jobs" % common.PROJECT, body)
    r = {"ack": time.time() - t0}
    deadline = t0 + 120
    while True:
        job = client.check("GET", path)
        state = job["state"]
        if state == "RUNNING" and "running" not in r:
            r["running"] = time.time() - t0
        if state == "SUCCEEDED":
            r["succeeded"] = time.time() - t0
            break
        if state in ("FAILED", "CANCELLED"):
            raise RuntimeError("job %s ended %s: %s" % (job_id, state, job.get("errorMessage")))
        if time.time() > deadline:
            raise RuntimeError("job %s not done after 120 s (state %s, jobPosition %s)" % (
                job_id, state, job.get("jobPosition")))
        time.sleep(poll)
    if "running" not in r:
        raise RuntimeError("job %s: RUNNING was never seen" % job_id)
    starts = []
    for n in os.listdir(shared):
        if n.startswith("start-%s-" % job_id):
            with open(os.path.join(shared, n)) as f:
                starts.append(float(f.read()) - t0)
    if len(starts) != REPLICAS:
        raise RuntimeError("job %s: %d of %d replicas started" % (job_id, len(starts), REPLICAS))
    r["first_python"] = min(starts)
    r["last_python"] = max(starts)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="timed runs (default 5)")
    ap.add_argument("--poll", type=float, default=0.005, help="GET interval in s (0.005)")
    args = ap.parse_args()

    print("bench_distributed: CUSTOM 1 master + %d workers + %d ps (%s), warm environment, "
          "%d runs, poll every %.0f ms" % (WORKERS, PS, MACHINE, args.runs, args.poll * 1000))
    print("machine: %s" % common.machine_description())
    work = tempfile.mkdtemp(prefix="trainyard-bench-distributed-")
    shared = os.path.join(work, "shared")
    os.makedirs(shared)
    # No GPU probing: the job asks for none, and nvidia-smi may be missing or slow.
    with common.Daemon(data_dir=os.path.join(work, "data"), env={"TRAINYARD_GPUS": "none"}) as d:
        c = d.client()
        uri = common.stage_package(c, TASK, "distributed")
        cold = run(c, "dist_cold", uri, shared, args.poll)
        print("cold run (builds the cached environment): RUNNING seen after %.2f s, last "
              "replica's first line after %.2f s" % (cold["running"], cold["last_python"]))
        cpu0 = d.cpu_seconds()
        runs = [run(c, "dist_%d" % i, uri, shared, args.poll) for i in range(args.runs)]
        daemon_cpu = d.cpu_seconds() - cpu0
        c.close()
    shutil.rmtree(work, ignore_errors=True)

    measures = [("ack", "POST acknowledged"),
                ("running", "RUNNING seen by GET"),
                ("first_python", "first replica's first Python line"),
                ("last_python", "last replica's first Python line"),
                ("succeeded", "SUCCEEDED seen by GET")]
    rows = []
    for key, label in measures:
        vals = [r[key] for r in runs]
        rows.append([label, common.ms(common.median(vals)), common.ms(max(vals)),
                     " ".join(common.ms(v) for v in vals)])
    common.table("Distributed start-up, ms after the POST was sent (N=%d, %d replicas)" % (
        args.runs, REPLICAS), ["measure", "median", "max", "runs"], rows)
    print("daemon CPU during the %d runs: %.2f s (%.0f ms per job)" % (
        args.runs, daemon_cpu, daemon_cpu * 1000 / args.runs))
    running = common.median([r["running"] for r in runs])
    last = common.median([r["last_python"] for r in runs])
    print("target: POST -> RUNNING <= %.0f ms median: %.1f ms -> %s" % (
        TARGET_S * 1000, running * 1000, common.verdict(running <= TARGET_S)))
    print("        POST -> last replica's first Python line <= %.0f ms median: %.1f ms -> %s" % (
        TARGET_S * 1000, last * 1000, common.verdict(last <= TARGET_S)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
