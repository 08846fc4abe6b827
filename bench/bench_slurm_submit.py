#!/usr/bin/python3
"""Slurm start-up latency: submit -> every task running, bare sbatch vs Trainyard on Slurm.

Runs on the development cluster of scripts/slurm-dev-cluster.sh: a private one started in a
temporary directory (stopped at the end), or the one SLURM_CONF names with --use-cluster.
Three allocation shapes, each run --runs times on an idle cluster, one job at a time:

  one    1 task, 1 CPU
  four   4 tasks of one shape, 2 CPUs each (spans at least two of the 4-CPU nodes)
  het2   a 2-component heterogeneous job: 1 task with 2 CPUs and a fake GPU, plus 2 tasks of
         1 CPU (what a master with a GPU and two CPU parameter servers become, hetjob rule D2)

Measures, in ms from just before the submit command is started:

  submitted        sbatch --parsable returned the job id
  RUNNING seen     squeue, polled every --poll seconds, shows every component RUNNING
  last task        the latest of the tasks' own clock readings ($EPOCHREALTIME, their first
                   command), read from files they write in a shared directory

Side `sbatch`: the batch script starts the tasks itself, either as one srun step per
component (--steps single, what a hand-written script does) or one `srun -n1 --exact` step per
task (--steps per-task, what Trainyard's slurm-driver does, design D6). Side `trainyard`: the
same shapes submitted as AI Platform jobs through Trainyard's REST API to a trainyardd with
`executor: slurm` on the same cluster, until the job is RUNNING and every trainer has written its
first clock reading. `--side both` (the default) interleaves the two sides run by run.

--queries counts slurmctld RPCs per minute by message type and by user (the difference of two
`sdiag` readings) while --loop CMD runs in a shell loop, or while something else (a trainyardd
using the cluster) runs, for --duration seconds. With --trainyard-jobs N it first starts a
trainyardd (executor: slurm, the default poll_interval) and submits N jobs whose trainers sleep:
as many run as the cluster holds (12 on the dev cluster), the rest wait in Slurm's queue, and
the count is taken once all N are in Slurm and the daemon is in its steady state.

--log-lines L times log ingestion: one job of 8 replicas placed on the 3 nodes (3+3+2: each
replica asks for a third of a node's memory) whose trainers print L lines each as fast as they
can; lines per second from the first trainer's start until all 8 x L lines are in the store.
"""

import argparse
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

SCRIPT = os.path.join(common.REPO, "scripts", "slurm-dev-cluster.sh")

# Each shape is a list of components: (tasks, cpus per task, fake GPUs per task).
SHAPES = {
    "one": [(1, 1, 0)],
    "four": [(4, 2, 0)],
    "het2": [(1, 2, 1), (2, 1, 0)],
}


class Cluster:
    """The dev cluster: started here in a temporary directory, or an existing one."""

    def __init__(self, use_existing):
        self.own = not use_existing
        self.env = dict(os.environ)
        self.base = None
        if self.own:
            self.base = tempfile.mkdtemp(prefix="trainyard-bench-slurm-")
            self.dir = os.path.join(self.base, "cluster")
            self.env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
            self.env["SLURM_CONF"] = os.path.join(self.dir, "slurm.conf")
        elif "SLURM_CONF" not in self.env:
            sys.exit("--use-cluster needs SLURM_CONF (scripts/slurm-dev-cluster.sh start prints "
                     "it)")

    def __enter__(self):
        if self.own:
            t = time.perf_counter()
            self.script("start")
            print("dev cluster started in %.2f s (%s)" % (time.perf_counter() - t, self.dir))
        return self

    def __exit__(self, *exc):
        if self.own:
            t = time.perf_counter()
            self.script("stop")
            print("dev cluster stopped in %.2f s" % (time.perf_counter() - t))
            shutil.rmtree(self.base, ignore_errors=True)

    def script(self, verb):
        p = subprocess.run([SCRIPT, verb, self.dir], env=self.env, capture_output=True,
                           text=True)
        if p.returncode != 0:
            sys.exit("slurm-dev-cluster.sh %s failed:\n%s%s" % (verb, p.stdout, p.stderr))
        return p.stdout

    def run(self, *args, input=None, check=True):
        p = subprocess.run(list(args), env=self.env, capture_output=True, text=True,
                           input=input)
        if check and p.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(args), p.returncode, p.stderr))
        return p.stdout

    def states(self, job):
        return self.run("squeue", "-h", "-t", "all", "-j", job, "-o", "%T", check=False).split()

    def wait_gone(self, job, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.run("squeue", "-h", "-j", job, check=False).strip():
                return
            time.sleep(0.05)
        raise RuntimeError("job %s did not end" % job)

    def sdiag_counts(self):
        """({message type: count}, {user: count}) from sdiag's RPC statistics."""
        out = self.run("sdiag")
        by_type, by_user, section = {}, {}, None
        for line in out.splitlines():
            if line.startswith("Remote Procedure Call statistics by message type"):
                section = by_type
            elif line.startswith("Remote Procedure Call statistics by user"):
                section = by_user
            elif line and not line[0].isspace():
                section = None
            elif section is not None:
                m = re.match(r"\s+(\S+)\s+\(\s*\d+\)\s+count:(\d+)", line)
                if m:
                    section[m.group(1)] = int(m.group(2))
        return by_type, by_user


# ------------------------------------------------------------------------------------------
# Side "sbatch": a bare allocation whose batch script starts the tasks


# --task python: each task is a Python interpreter (what a trainer is) instead of a shell.
PY_TASK = """import json, os, sys, time
t = time.time()
d = sys.argv[1]
n = "%s.%s.%s.%s" % (os.environ["SLURM_JOB_ID"], os.environ["C"], os.environ["SLURM_PROCID"],
                     os.environ["SLURM_STEP_ID"])
with open(os.path.join(d, "." + n), "w") as f:
    f.write(repr(t))
os.rename(os.path.join(d, "." + n), os.path.join(d, n))
time.sleep(3600)
"""


def batch_script(shape, shared, steps, task_kind="shell"):
    """The batch script: #SBATCH lines per component, then the task launches. Each task writes
    its first clock reading to shared/<job>.<component>.<task>, then sleeps until cancelled."""
    lines = ["#!/bin/bash"]
    for i, (tasks, cpus, gpus) in enumerate(shape):
        if i:
            lines.append("#SBATCH hetjob")
        opts = "--ntasks=%d --cpus-per-task=%d --mem-per-cpu=256M" % (tasks, cpus)
        if gpus:
            opts += " --gpus-per-task=fake:%d" % gpus
        lines.append("#SBATCH %s" % opts)
    het = len(shape) > 1
    task = ("t=$EPOCHREALTIME; echo $t > %s/.$SLURM_JOB_ID.$C.$SLURM_PROCID.$SLURM_STEP_ID && "
            "mv %s/.$SLURM_JOB_ID.$C.$SLURM_PROCID.$SLURM_STEP_ID "
            "%s/$SLURM_JOB_ID.$C.$SLURM_PROCID.$SLURM_STEP_ID; exec sleep 3600") % (
                shared, shared, shared)
    if task_kind == "python":
        path = os.path.join(shared, "task.py")
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(PY_TASK)
        task = "exec /usr/bin/python3 %s %s" % (path, shared)
    for i, (tasks, cpus, gpus) in enumerate(shape):
        group = "--het-group=%d " % i if het else ""
        res = "--cpus-per-task=%d --mem-per-cpu=256M %s" % (
            cpus, "--gpus=fake:%d" % gpus if gpus else "--gres=none")
        if steps == "single":
            lines.append("C=%d srun %s-n%d %s bash -c '%s' &" % (i, group, tasks, res, task))
        else:
            for _ in range(tasks):
                lines.append("C=%d srun %s-n1 -N1 --exact %s bash -c '%s' &" % (
                    i, group, res, task))
    lines.append("wait")
    return "\n".join(lines) + "\n"


def submit_sbatch(cluster, shape, shared, poll, steps, task_kind="shell"):
    script = batch_script(shape, shared, steps, task_kind)
    ntasks = sum(t for t, _, _ in shape)
    t0 = time.time()
    job = cluster.run("sbatch", "--parsable", "--no-requeue", "-o", "/dev/null",
                      input=script).strip().split(";")[0]
    r = {"submitted": time.time() - t0}
    deadline = t0 + 120
    starts = []
    while True:
        now = time.time()
        if "running" not in r:
            st = cluster.states(job)
            if st and all(s == "RUNNING" for s in st):
                r["running"] = time.time() - t0
            elif any(s not in ("PENDING", "CONFIGURING", "RUNNING") for s in st):
                raise RuntimeError("job %s ended early: %s" % (job, st))
        names = [n for n in os.listdir(shared) if n.startswith(job + ".")]
        if len(names) >= ntasks and "running" in r:
            for n in names:
                with open(os.path.join(shared, n)) as f:
                    starts.append(float(f.read()))
            break
        if now > deadline:
            raise RuntimeError("job %s: %d of %d tasks started in 120 s (states %s)" % (
                job, len(names), ntasks, cluster.states(job)))
        time.sleep(poll)
    r["last_task"] = max(starts) - t0
    r["first_task"] = min(starts) - t0
    cluster.run("scancel", job)
    cluster.wait_gone(job)
    return r


# ------------------------------------------------------------------------------------------
# Side "trainyard": the same shapes as AI Platform jobs through Trainyard's REST API

# The trainer: its first clock reading into <shared>/<job>.<task>, then sleep until cancelled.
TRAINER = """
import json, os, sys, time
t = time.time()
tf = json.loads(os.environ["TF_CONFIG"])
out = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--out=")][0]
name = "%s.%s-%d" % (os.environ["CLOUD_ML_JOB_ID"], tf["task"]["type"], tf["task"]["index"])
with open(os.path.join(out, "." + name), "w") as f:
    f.write(repr(t))
os.rename(os.path.join(out, "." + name), os.path.join(out, name))
time.sleep(3600)
"""

# The shapes as TrainingInput, with cpu_scale 0.25 (a vCPU is a quarter of a dev-node CPU):
# n1-standard-4 is 1 CPU, n1-standard-8 2 CPUs. het2 is a master with a GPU and two CPU
# parameter servers, which this Trainyard runs as one plain job of the largest shape.
TRAINING = {
    "one": {"scaleTier": "CUSTOM", "masterType": "n1-standard-4"},
    "four": {"scaleTier": "CUSTOM", "masterType": "n1-standard-8", "workerType": "n1-standard-8",
             "workerCount": 3},
    "het2": {"scaleTier": "CUSTOM", "masterType": "n1-standard-8",
             "masterConfig": {"acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": 1}},
             "parameterServerType": "n1-standard-4", "parameterServerCount": 2},
}

DAEMON_CONFIG = """executor: slurm
slurm:
  shared_dir: {shared}
  cpu_scale: 0.25
  memory_scale: 0.01
  gpu_types: {{NVIDIA_TESLA_T4: fake}}
"""


class Trainyard:
    """trainyardd with executor: slurm on the cluster, and the trainer package uploaded."""

    def __init__(self, cluster):
        self.shared = tempfile.mkdtemp(prefix="trainyard-bench-slurm-ty-")
        self.config = os.path.join(self.shared, "config.yaml")
        with open(self.config, "w") as f:
            f.write(DAEMON_CONFIG.format(shared=self.shared))
        self.daemon = common.Daemon(extra_args=["--config", self.config], env=cluster.env)
        self.daemon.start()
        self.client = self.daemon.client()
        self.uri = common.stage_package(self.client, TRAINER, "bench-slurm")
        self.n = 0

    def close(self):
        self.client.close()
        self.daemon.stop()
        shutil.rmtree(self.shared, ignore_errors=True)


def submit_trainyard(cluster, shape, shared, poll, steps, ty=None):
    """Submits `shape` as an AI Platform job to trainyardd (executor: slurm) and returns the
    same measures as submit_sbatch: "submitted" (POST answered), "running" (GET shows RUNNING:
    every replica's trainer started) and "first_task"/"last_task" (the trainers' own first
    clock readings)."""
    name = [k for k, v in SHAPES.items() if v == shape][0]
    ty.n += 1
    job_id = "bench_%s_%d" % (name, ty.n)
    ntasks = sum(t for t, _, _ in shape)
    ti = dict(TRAINING[name], packageUris=[ty.uri], pythonModule="trainer.task",
              region="us-central1", args=["--out=" + shared])
    t0 = time.time()
    ty.client.check("POST", "/v1/projects/%s/jobs" % common.PROJECT,
                    {"jobId": job_id, "trainingInput": ti})
    r = {"submitted": time.time() - t0}
    deadline = t0 + 300
    starts = []
    while True:
        if "running" not in r:
            state = ty.client.job(job_id)["state"]
            if state == "RUNNING":
                r["running"] = time.time() - t0
            elif state not in ("QUEUED", "PREPARING"):
                raise RuntimeError("job %s ended early: %s" % (job_id, ty.client.job(job_id)))
        names = [n for n in os.listdir(shared) if n.startswith(job_id + ".")]
        if len(names) >= ntasks and "running" in r:
            for n in names:
                with open(os.path.join(shared, n)) as f:
                    starts.append(float(f.read()))
            break
        if time.time() > deadline:
            raise RuntimeError("job %s: %d of %d replicas started in 300 s" % (
                job_id, len(names), ntasks))
        time.sleep(poll)
    r["last_task"] = max(starts) - t0
    r["first_task"] = min(starts) - t0
    ty.client.check("POST", "/v1/projects/%s/jobs/%s:cancel" % (common.PROJECT, job_id), {})
    deadline = time.time() + 120
    while ty.client.job(job_id)["state"] != "CANCELLED" or any(
            "ty-" in line for line in cluster.run("squeue", "-h", "-o", "%j").splitlines()):
        if time.time() > deadline:
            raise RuntimeError("job %s did not end within 120 s of its cancel" % job_id)
        time.sleep(0.1)
    return r


SIDES = {"sbatch": submit_sbatch, "trainyard": submit_trainyard}
BOTH = ("sbatch", "trainyard")


def bench_latency(args, cluster):
    shared = tempfile.mkdtemp(prefix="trainyard-bench-slurm-shared-")
    sides = BOTH if args.side == "both" else (args.side,)
    ty = Trainyard(cluster) if "trainyard" in sides else None
    rows = []

    def submit(side, shape):
        if side == "trainyard":
            return submit_trainyard(cluster, shape, shared, args.poll, args.steps, ty)
        return submit_sbatch(cluster, shape, shared, args.poll, args.steps, args.task)

    try:
        for name in args.shapes:
            shape = SHAPES[name]
            for side in sides:
                submit(side, shape)  # warm-up, not counted (Trainyard: builds the environment)
            # Interleaved, so both sides see the same machine load.
            runs = {side: [] for side in sides}
            for _ in range(args.runs):
                for side in sides:
                    runs[side].append(submit(side, shape))
            for side in sides:
                for key, label in (("submitted", "submitted"), ("running", "RUNNING seen"),
                                   ("last_task", "last task")):
                    vals = [r[key] for r in runs[side]]
                    rows.append([name, side, label, common.ms(common.median(vals)),
                                 common.ms(common.percentile(vals, 90)), common.ms(max(vals))])
            if len(sides) == 2:
                ratio = (common.median([r["last_task"] for r in runs["trainyard"]]) /
                         common.median([r["last_task"] for r in runs["sbatch"]]))
                rows.append([name, "ratio", "last task, trainyard / sbatch", "%.2fx" % ratio,
                             "", ""])
    finally:
        if ty is not None:
            ty.close()
        shutil.rmtree(shared, ignore_errors=True)
    common.table("Submit -> running, sides %s, sbatch steps %s, tasks %s, ms after the submit "
                 "started (N=%d per shape, poll %.0f ms)" % ("+".join(sides), args.steps,
                                                             args.task, args.runs,
                                                             args.poll * 1000),
                 ["shape", "side", "measure", "median", "p90", "max"], rows)


SLEEPER = """
import time
time.sleep(3600)
"""


def start_trainyard_jobs(cluster, n):
    """A trainyardd on the cluster with n sleeping jobs, all of them in Slurm; returns it."""
    shared = tempfile.mkdtemp(prefix="trainyard-bench-slurm-q-")
    config = os.path.join(shared, "config.yaml")
    with open(config, "w") as f:
        f.write("executor: slurm\nslurm:\n  shared_dir: %s\n  cpu_scale: 0.25\n"
                "  memory_scale: 0.01\n  max_submitted_jobs: %d\n" % (shared, max(n, 1)))
    daemon = common.Daemon(extra_args=["--config", config], env=cluster.env)
    daemon.start()
    client = daemon.client()
    uri = common.stage_package(client, SLEEPER, "bench-slurm-q")
    t0 = time.time()
    for i in range(n):
        client.check("POST", "/v1/projects/%s/jobs" % common.PROJECT,
                     {"jobId": "q%d" % i, "trainingInput": {
                         "scaleTier": "CUSTOM", "masterType": "n1-standard-4",
                         "packageUris": [uri], "pythonModule": "trainer.task",
                         "region": "us-central1"}})
    deadline = time.time() + 600
    while True:
        names = [line for line in cluster.run("squeue", "-h", "-o", "%j").splitlines()
                 if line.startswith("ty-")]
        if len(names) >= n:
            break
        if time.time() > deadline:
            raise RuntimeError("only %d of %d jobs reached Slurm in 600 s" % (len(names), n))
        time.sleep(1)
    print("%d Trainyard jobs in Slurm after %.1f s (%s)" % (
        n, time.time() - t0, " ".join("%s %d" % (st, c) for st, c in sorted(
            _count(cluster.run("squeue", "-h", "-o", "%T").split()).items()))))
    return {"daemon": daemon, "client": client, "shared": shared, "n": n}


def _count(items):
    out = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def stop_trainyard_jobs(cluster, ty):
    for i in range(ty["n"]):
        ty["client"].check("POST", "/v1/projects/%s/jobs/q%d:cancel" % (common.PROJECT, i), {})
    deadline = time.time() + 600
    while any(line.startswith("ty-") for line in cluster.run("squeue", "-h", "-o", "%j").split()):
        if time.time() > deadline:
            raise RuntimeError("the jobs did not end within 600 s of their cancel")
        time.sleep(1)
    ty["client"].close()
    ty["daemon"].stop()
    shutil.rmtree(ty["shared"], ignore_errors=True)


def bench_queries(args, cluster):
    ty = None
    if args.trainyard_jobs:
        ty = start_trainyard_jobs(cluster, args.trainyard_jobs)
        time.sleep(args.settle)  # the submits' quick polls are over: the steady state
    try:
        _bench_queries(args, cluster)
    finally:
        if ty is not None:
            stop_trainyard_jobs(cluster, ty)


LOGGER = """
import json, os, sys, time
n = int([a.split("=", 1)[1] for a in sys.argv if a.startswith("--lines=")][0])
out = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--out=")][0]
tf = json.loads(os.environ["TF_CONFIG"])
name = "%s-%d" % (tf["task"]["type"], tf["task"]["index"])
t0 = time.time()
w = sys.stdout.write
for i in range(n):
    w("line %d of %s: the quick brown fox jumps over the lazy dog\\n" % (i, name))
sys.stdout.flush()
with open(os.path.join(out, name), "w") as f:
    f.write("%r %r" % (t0, time.time()))
"""


def bench_logs(args, cluster):
    """8 replicas on 3 nodes print --log-lines lines each as fast as they can."""
    shared = tempfile.mkdtemp(prefix="trainyard-bench-slurm-logs-")
    out = os.path.join(shared, "out")
    os.makedirs(out)
    config = os.path.join(shared, "config.yaml")
    # n1-highmem-8 (8 vCPUs, 52 GB) as 1 CPU and 624 MB: 3 fit on a 4-CPU, 2000 MB dev node,
    # so Slurm spreads the 8 replicas over the 3 nodes.
    with open(config, "w") as f:
        f.write("executor: slurm\nslurm:\n  shared_dir: %s\n  cpu_scale: 0.125\n"
                "  memory_scale: 0.012\n  poll_interval: 1s\n" % shared)
    daemon = common.Daemon(extra_args=["--config", config], env=cluster.env)
    daemon.start()
    client = daemon.client()
    try:
        uri = common.stage_package(client, LOGGER, "bench-slurm-logs")
        rows = []
        for run in range(args.runs + 1):  # the first one builds the environment: not counted
            job_id = "logs%d" % run
            run_out = os.path.join(out, job_id)
            os.makedirs(run_out)
            client.check("POST", "/v1/projects/%s/jobs" % common.PROJECT,
                         {"jobId": job_id, "trainingInput": {
                             "scaleTier": "CUSTOM", "masterType": "n1-highmem-8",
                             "workerType": "n1-highmem-8", "workerCount": 7,
                             "packageUris": [uri], "pythonModule": "trainer.task",
                             "region": "us-central1",
                             "args": ["--lines=%d" % args.log_lines, "--out=" + run_out]}})
            job = client.wait_state(job_id, ("SUCCEEDED", "FAILED", "CANCELLED"), timeout=900,
                                    interval=0.05)
            done = time.time()
            if job["state"] != "SUCCEEDED":
                raise RuntimeError("job %s: %s" % (job_id, job))
            times = []
            for name in os.listdir(run_out):
                with open(os.path.join(run_out, name)) as f:
                    times.append([float(x) for x in f.read().split()])
            nodes = set()
            for d in os.listdir(os.path.join(shared, "jobs", common.PROJECT, job_id)):
                p = os.path.join(shared, "jobs", common.PROJECT, job_id, d, "slurm.json")
                if os.path.exists(p):
                    with open(p) as f:
                        nodes.add(json.load(f)["node"])
            stored = _count_lines(client, job_id)
            total = 8 * args.log_lines
            if stored != total:
                raise RuntimeError("job %s: %d of %d lines stored" % (job_id, stored, total))
            first = min(t[0] for t in times)
            printed = max(t[1] for t in times)
            if run == 0:
                continue
            rows.append([job_id, len(nodes), total, "%.1f" % (printed - first),
                         "%.1f" % (done - first), "%.0f" % (total / (printed - first)),
                         "%.0f" % (total / (done - first))])
        common.table("Log lines from 8 replicas on 3 nodes to the store (%d lines each)"
                     % args.log_lines,
                     ["job", "nodes", "lines", "trainers printing (s)", "until stored (s)",
                      "printed / s", "stored / s"], rows)
    finally:
        client.close()
        daemon.stop()
        shutil.rmtree(shared, ignore_errors=True)


def _count_lines(client, job_id):
    """Trainer lines of the job in the store (every replica's, not the service's)."""
    n, after = 0, 0
    while True:
        entries = client.logs(job_id, after=after, page_size=10000).get("entries", [])
        if not entries:
            return n
        for e in entries:
            if e["jsonPayload"]["message"].startswith("line "):
                n += 1
        after = int(entries[-1]["insertId"])


def _bench_queries(args, cluster):
    loop = None
    if args.loop:
        loop = subprocess.Popen(["bash", "-c", "while :; do %s; done" % args.loop],
                                env=cluster.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        types0, users0 = cluster.sdiag_counts()
        t0 = time.time()
        time.sleep(args.duration)
        types1, users1 = cluster.sdiag_counts()
        elapsed = time.time() - t0
        # The first reading is itself an RPC counted in the second one: take it out.
        me = pwd.getpwuid(os.getuid()).pw_name
        types1["REQUEST_STATS_INFO"] = types1.get("REQUEST_STATS_INFO", 0) - 1
        users1[me] = users1.get(me, 0) - 1
    finally:
        if loop:
            loop.terminate()
            loop.wait()
    per_min = 60.0 / elapsed
    rows = [[k, types1[k] - types0.get(k, 0), "%.1f" % ((types1[k] - types0.get(k, 0)) * per_min)]
            for k in sorted(types1, key=lambda k: types0.get(k, 0) - types1[k])
            if types1[k] - types0.get(k, 0) > 0]
    common.table("slurmctld RPCs by message type during %.1f s (%s)" % (
        elapsed, "loop: %s" % args.loop if args.loop else "no loop: whatever else ran"),
        ["message type", "count", "per minute"], rows)
    rows = [[u, users1[u] - users0.get(u, 0), "%.1f" % ((users1[u] - users0.get(u, 0)) * per_min)]
            for u in sorted(users1) if users1[u] - users0.get(u, 0) > 0]
    common.table("slurmctld RPCs by user", ["user", "count", "per minute"], rows)
    total = sum(types1[k] - types0.get(k, 0) for k in types1)
    print("total: %d RPCs, %.1f per minute (without this tool's own sdiag readings)"
          % (total, total * per_min))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", choices=sorted(SIDES) + ["both"], default="both",
                    help="who submits: bare sbatch, trainyard (executor: slurm), or both "
                    "interleaved in one run (default)")
    ap.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=list(SHAPES))
    ap.add_argument("--runs", type=int, default=10, help="timed runs per shape (default 10)")
    ap.add_argument("--poll", type=float, default=0.02, help="squeue interval in s (0.02)")
    ap.add_argument("--steps", choices=("single", "per-task"), default="single",
                    help="sbatch side: one srun per component or one per task")
    ap.add_argument("--task", choices=("shell", "python"), default="shell",
                    help="sbatch side: each task a shell writing its clock (default), or "
                    "/usr/bin/python3 doing the same (what Trainyard's trainer is)")
    ap.add_argument("--use-cluster", action="store_true",
                    help="use the cluster SLURM_CONF names instead of starting one")
    ap.add_argument("--queries", action="store_true",
                    help="count slurmctld RPCs per minute instead of timing submits")
    ap.add_argument("--loop", help="--queries: shell command run in a loop meanwhile, e.g. "
                    "'squeue -h -u $USER -t all >/dev/null; sleep 1'")
    ap.add_argument("--duration", type=float, default=60, help="--queries: seconds (60)")
    ap.add_argument("--trainyard-jobs", type=int, default=0,
                    help="--queries: first submit this many sleeping jobs to a trainyardd "
                    "(executor: slurm) on the cluster and count while they are in Slurm")
    ap.add_argument("--settle", type=float, default=30,
                    help="--queries --trainyard-jobs: seconds to wait before counting (30)")
    ap.add_argument("--log-lines", type=int, default=0,
                    help="time log ingestion: 8 replicas on 3 nodes print this many lines "
                    "each (--runs jobs after one warm-up)")
    args = ap.parse_args()
    if args.side != "sbatch" and args.queries and "--side" in " ".join(sys.argv):
        ap.error("--queries measures the cluster, not a side")

    print("bench_slurm_submit: %s" % (
        "RPC counts" if args.queries else "log ingestion" if args.log_lines else
        "side %s, shapes %s" % (args.side, " ".join(args.shapes))))
    print("machine: %s" % common.machine_description())
    try:
        with Cluster(args.use_cluster) as cluster:
            if args.queries:
                bench_queries(args, cluster)
            elif args.log_lines:
                bench_logs(args, cluster)
            else:
                bench_latency(args, cluster)
    except NotImplementedError as e:
        sys.exit("bench_slurm_submit: %s" % e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
