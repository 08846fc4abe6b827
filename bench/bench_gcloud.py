#!/usr/bin/python3
"""The same training job submitted and followed to SUCCEEDED with Google's `gcloud` (528, the
preinstalled google-cloud-cli, configured by `trainyard gcloud-config --apply`) and with the
`trainyard` CLI, against one daemon, interleaved, a few repetitions, medians.

The job: examples/sklearn/trainer (`-- --epochs 1`), built from --package-path and staged by the
client in every run, as a user would. Variants, each timed from the client's start to its exit:

  gcloud submit --stream-logs   one gcloud command (its polling interval is the configuration's
                                ml_engine/polling_interval, 1 s)
  gcloud submit + stream-logs   `submit training`, then `stream-logs --polling-interval 1`
  trainyard submit --stream-logs

plus, for every run, how long the job was RUNNING and the time from the job's end to the client's
exit ("tail"), both as seen by a watcher polling the job every 50 ms: gcloud's stream-logs checks
whether the job ended only every 10 s.
`gcloud ai-platform jobs describe` alone shows what one gcloud start costs.

  /usr/bin/python3 bench/bench_gcloud.py [--reps 3] [--markdown]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

SAMPLE = os.path.join(common.REPO, "examples", "sklearn", "trainer")


class Clients:
    def __init__(self, daemon, config_dir):
        self.daemon = daemon
        self.env = dict(os.environ, CLOUDSDK_CONFIG=config_dir, CLOUDSDK_CORE_DISABLE_PROMPTS="1",
                        TRAINYARD_ENDPOINT=daemon.url, TRAINYARD_PROJECT=common.PROJECT)
        for leak in ("BOTO_CONFIG", "CLOUDSDK_ACTIVE_CONFIG_NAME", "CLOUDSDK_CORE_PROJECT"):
            self.env.pop(leak, None)

    def run(self, argv):
        t = time.perf_counter()
        p = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=600)
        elapsed = time.perf_counter() - t
        if p.returncode != 0:
            sys.exit("%s failed (%d):\n%s\n%s" % (" ".join(argv), p.returncode, p.stdout,
                                                  p.stderr))
        return elapsed, time.time()

    def gcloud(self, *args):
        return self.run(["gcloud"] + list(args))

    def trainyard(self, *args):
        return self.run([common.binary("trainyard")] + list(args))


def submit_args(job_id):
    return ["training", job_id, "--package-path", SAMPLE, "--module-name", "trainer.task",
            "--staging-bucket", "gs://" + common.BUCKET, "--job-dir",
            "gs://%s/out/%s" % (common.BUCKET, job_id), "--region", "us-central1", "--",
            "--epochs", "1"]


FINAL = ("SUCCEEDED", "FAILED", "CANCELLED")


class Watcher(threading.Thread):
    """Polls the job every 50 ms over its own connection and records when it was first seen
    RUNNING and first seen in a final state (the job's own times have 1 s resolution)."""

    def __init__(self, daemon, job_id):
        super().__init__(daemon=True)
        self.client = daemon.client()
        self.job_id = job_id
        self.running_at = self.ended_at = None
        self.stop = False

    def run(self):
        path = "/v1/projects/%s/jobs/%s" % (common.PROJECT, self.job_id)
        while not self.stop and self.ended_at is None:
            status, job = self.client.request("GET", path)
            now = time.time()
            if status == 200:
                if self.running_at is None and job["state"] in ("RUNNING",) + FINAL:
                    self.running_at = now
                if job["state"] in FINAL:
                    self.ended_at = now
            time.sleep(0.05)
        self.client.close()


def run_variant(clients, variant, job_id):
    """Returns (client seconds, seconds the job was RUNNING, client exit minus the job's end)."""
    watcher = Watcher(clients.daemon, job_id)
    watcher.start()
    a = submit_args(job_id)
    if variant == "gcloud submit --stream-logs":
        total, end = clients.gcloud("ai-platform", "jobs", "submit", *a[:-3], "--stream-logs",
                                    *a[-3:])
    elif variant == "gcloud submit + stream-logs":
        t1, _ = clients.gcloud("ai-platform", "jobs", "submit", *a)
        t2, end = clients.gcloud("ai-platform", "jobs", "stream-logs", job_id,
                                 "--polling-interval", "1")
        total = t1 + t2
    else:
        total, end = clients.trainyard("jobs", "submit", *a[:-3], "--stream-logs", *a[-3:])
    watcher.join(timeout=30)
    watcher.stop = True
    job = clients.daemon.client().job(job_id)
    if job["state"] != "SUCCEEDED" or watcher.ended_at is None:
        sys.exit("job %s ended %s" % (job_id, job["state"]))
    return total, watcher.ended_at - watcher.running_at, end - watcher.ended_at


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown too")
    args = ap.parse_args()
    if shutil.which("gcloud") is None:
        sys.exit("gcloud is not installed (google-cloud-cli)")

    print("bench_gcloud: %s; %s" % (
        subprocess.run(["gcloud", "--version"], capture_output=True, text=True).stdout.split(
            "\n")[0], common.machine_description()))
    variants = ["gcloud submit --stream-logs", "gcloud submit + stream-logs",
                "trainyard submit --stream-logs"]
    results = {v: [] for v in variants}
    describe_times = []
    config_dir = tempfile.mkdtemp(prefix="trainyard-bench-gcloud-")
    try:
        with common.Daemon() as d:
            d.client().create_bucket()
            clients = Clients(d, config_dir)
            clients.trainyard("gcloud-config", "--apply", "--activate")
            # Warm-up: the first job of each client prepares the Python environment.
            for i, v in enumerate(variants):
                run_variant(clients, v, "warm_%d" % i)
            for rep in range(args.reps):
                for i, v in enumerate(variants):
                    results[v].append(run_variant(clients, v, "rep%d_%d" % (rep, i)))
                describe_times.append(clients.gcloud("ai-platform", "jobs", "describe",
                                                     "rep%d_0" % rep)[0])
    finally:
        shutil.rmtree(config_dir, ignore_errors=True)

    rows = []
    for v in variants:
        total = [r[0] for r in results[v]]
        ran = [r[1] for r in results[v]]
        tail = [r[2] for r in results[v]]
        rows.append([v, "%.2f" % common.median(total), "%.2f" % min(total), "%.2f" % max(total),
                     "%.2f" % common.median(ran), "%.2f" % common.median(tail)])
    rows.append(["gcloud ai-platform jobs describe", "%.2f" % common.median(describe_times),
                 "%.2f" % min(describe_times), "%.2f" % max(describe_times), "", ""])
    header = ["client", "median s", "min s", "max s", "RUNNING s", "tail s"]
    common.table("Submit and follow to SUCCEEDED, %d repetitions (seconds)" % args.reps,
                 header, rows)
    if args.markdown:
        print()
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(c if c else "" for c in r) + " |")


if __name__ == "__main__":
    main()
