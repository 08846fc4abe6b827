"""Out of memory under `executor: slurm` (issue 12): on a dev cluster whose steps are confined
by Slurm itself (scripts/slurm-dev-cluster.sh with TRAINYARD_SLURM_CGROUP=1: task/cgroup,
ConstrainRAMSpace, cgroup v1), a trainer that allocates past its machine type's memory (the
step's --mem-per-cpu) is killed by the kernel in Slurm's memory cgroup, and the job FAILS with
AI Platform's OOM message, once, without a restart, leaving no Slurm job, process or cgroup.
Two ways are checked: the launcher survives and reads the OOM kill from its own memory group
(the usual case), and the launcher is killed too, so the driver reports it from Slurm's
OUT_OF_MEMORY verdict on the step.

Run with Debian's /usr/bin/python3 -m pytest tests/integration/test_slurm_oom.py."""

import glob
import json
import os

from conftest import PROJECT, wait_for
from slurm_cluster import live_jobs, messages, slurm_jobs
from slurm_cluster import slurm_cgroup_cluster  # noqa: F401
from slurm_cluster import daemon_fixture, requires_slurm, slurm_config

pytestmark = requires_slurm

# n1-standard-4 (4 vCPUs, 15 GB) becomes 1 CPU and about 300 MiB on the dev nodes; the
# launcher and Python's environment fit, a trainer that allocates without bound does not.
CONFIG = slurm_config(memory_scale="0.02")

# --hog=NAME: that replica allocates (and touches) 16 MiB at a time until it is killed; with
# --kill_launcher it first makes its launcher (its parent) the OOM killer's first choice
# (oom_score_adj 1000). Every other replica waits for <out>/release, which these tests never
# write: it only ends when Trainyard stops it.
TRAINER = """
import json, os, signal, sys, time
args = dict(a.split("=", 1) if "=" in a else (a, "1") for a in sys.argv[1:])
tf = json.loads(os.environ["TF_CONFIG"])
name = "%s-%d" % (tf["task"]["type"], tf["task"]["index"])
with open(os.path.join(args["--out"], name + ".jsonl"), "a") as f:
    f.write(json.dumps({"pid": os.getpid()}) + "\\n")
print("start", name, flush=True)
def on_term(signum, frame):
    print("TERM received by", name, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
if args.get("--hog") == name:
    if "--kill_launcher" in args:
        with open("/proc/%d/oom_score_adj" % os.getppid(), "w") as f:
            f.write("1000")
    print("allocating", flush=True)
    hoard = []
    while True:
        hoard.append(b"\\x01" * (16 << 20))
release = os.path.join(args["--out"], "release")
while not os.path.exists(release):
    time.sleep(0.1)
print("released", name, flush=True)
"""


env = daemon_fixture(CONFIG, TRAINER, "ty-slurm-oom-", cluster="slurm_cgroup_cluster")


def submit(env, job_id, args, **training):
    out = os.path.join(str(env["root"]), "out-" + job_id)
    os.makedirs(out, exist_ok=True)
    ti = {"packageUris": [env["uri"]], "pythonModule": "trainer.task", "region": "us-central1",
          "scaleTier": "CUSTOM", "masterType": "n1-standard-4",
          "args": list(args) + ["--out=" + out]}
    ti.update(training)
    status, body = env["daemon"].request("POST", "/v1/projects/%s/jobs" % PROJECT,
                                         {"jobId": job_id, "trainingInput": ti})
    assert status == 200, body
    return out


def starts(out, name):
    path = os.path.join(out, name + ".jsonl")
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for line in f if line.strip())


def assert_nothing_left(env, job_id):
    c = env["cluster"]
    wait_for(lambda: not live_jobs(c), timeout=60, what="no Slurm job left")
    wait_for(lambda: not c.job_pids(), timeout=60,
             what="no process of a job left: %s" % c.describe(c.job_pids()))
    wait_for(lambda: not c.job_cgroups(), timeout=60,
             what="no job cgroup left: %s" % c.job_cgroups())
    # Exactly one Slurm job: the OOM kill was not retried in a new allocation.
    assert len(slurm_jobs(c, job_id)) == 1, slurm_jobs(c, job_id)


def test_worker_over_its_memory_fails_the_job_with_the_oom_message(env):
    d = env["daemon"]
    out = submit(env, "oomworker", ["--hog=worker-0"], workerType="n1-standard-4", workerCount=1)
    job = d.wait_state("oomworker", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=240)
    assert job["state"] == "FAILED", job
    assert job["errorMessage"] == (
        "The replica worker 0 ran out-of-memory and exited with a non-zero status of 137."), job
    worker = messages(d, "oomworker", "worker-replica-0")
    assert "allocating" in worker, worker
    # The launcher read the kill from the memory group Slurm put the step in, with its limit.
    oom = [m for m in worker if m.startswith("The replica ran out of memory (limit ")]
    assert len(oom) == 1 and oom[0].endswith(") and was killed."), worker
    assert starts(out, "worker-0") == 1  # never restarted
    service = messages(d, "oomworker", "service")
    assert any("worker 0 ran out of memory" in m and "it is not restarted" in m
               for m in service), service
    # The master was stopped by Trainyard once the job failed.
    assert "TERM received by master-0" in messages(d, "oomworker", "master-replica-0")
    with open(os.path.join(env["shared"], "jobs", PROJECT, "oomworker", "worker-replica-0",
                           "exit.json")) as f:
        report = json.load(f)
    assert report.get("oomKilled") is True, report
    assert_nothing_left(env, "oomworker")


def test_launcher_killed_with_its_trainer_is_reported_from_the_step_state(env):
    d = env["daemon"]
    out = submit(env, "oomstep", ["--hog=master-0", "--kill_launcher"])
    job = d.wait_state("oomstep", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=240)
    assert job["state"] == "FAILED", job
    assert job["errorMessage"] == (
        "The replica master 0 ran out-of-memory and exited with a non-zero status of 137."), job
    assert starts(out, "master-0") == 1
    # No launcher was left to report: the driver wrote the report from srun's verdict.
    with open(os.path.join(env["shared"], "jobs", PROJECT, "oomstep", "master-replica-0",
                           "exit.json")) as f:
        report = json.load(f)
    assert report.get("oomKilled") is True, report
    assert "OUT_OF_MEMORY" in report.get("message", ""), report
    driver_out = glob.glob(os.path.join(env["shared"], "jobs", PROJECT, "oomstep", "slurm-*",
                                        "driver.out"))
    assert len(driver_out) == 1
    with open(driver_out[0]) as f:
        assert "Out Of Memory" in f.read()
    assert_nothing_left(env, "oomstep")
