"""`executor: slurm` on a cluster with real accounting (issue 12): slurmdbd with a private
mariadbd and AccountingStorageEnforce=associations,limits,qos (scripts/slurm-dev-cluster.sh
start --accounting), so Slurm refuses accounts the user has no association with, as production
clusters do. Checked end to end through a real trainyardd:

- per-project accounts (slurm.project_accounts): a job runs under its project's account, and
  slurmdbd's sacct lists it there;
- a daemon configured with an account Slurm refuses stops at start naming the setting;
- a job whose account Slurm refuses at submission (its association removed after the daemon
  started) FAILS at once with Slurm's reason, and nothing is left in Slurm;
- the verdict on a job that ended and left squeue while the daemon was down comes from plain
  sacct (slurmdbd), with the jobcomp file emptied so that it can come from nowhere else;
- a job that Slurm itself ends OUT_OF_MEMORY (its batch step, the driver, killed by the kernel
  in the job's memory cgroup: TRAINYARD_SLURM_CGROUP=1, skipped without cgroup v1) FAILS with
  AI Platform's OOM message from Slurm's verdict alone, without a restart.

Real trainers held by files the test creates (no sleeps decide an outcome). Run with Debian's
/usr/bin/python3 -m pytest tests/integration/test_slurm_accounts.py."""

import json
import os
import shutil
import signal
import subprocess

import pytest

from conftest import BIN, PROJECT, wait_for
from slurm_cluster import live_jobs, messages, slurm_jobs
from slurm_cluster import cgroup_v1, cluster_fixture, daemon_fixture, requires_slurm, slurm_config
from slurm_cluster import release, starts

pytestmark = requires_slurm

# PROJECT runs under acct-a; project "revoked" under acct-b, whose association with this user
# a test removes; every other project under slurm.account (dev). One n1-standard-4 replica is
# 1 CPU and about 300 MiB here.
CONFIG = slurm_config(memory_scale="0.02", extra="  account: dev\n  project_accounts: "
                      "{{%s: acct-a, revoked: acct-b}}\n" % PROJECT)

# Appends what it saw at each start to <out>/<name>.jsonl, then runs until <out>/release exists
# (--hold); exits 0 on SIGTERM after saying so. --starve_driver: makes the gang's driver (the
# batch step's process) the OOM killer's first choice (and a ballast it puts in the driver's
# memory group its second) and fills the job's memory cgroup with
# memfd pages (shared memory: in no process's RSS, so the trainer itself is never chosen) until
# the kernel killed the driver (writing no more once it killed anything, so that the next
# victim is never one of the replica's own processes), then frees them and waits.
TRAINER = """
import json, os, signal, sys, time
args = dict(a.split("=", 1) if "=" in a else (a, "1") for a in sys.argv[1:])
tf = json.loads(os.environ["TF_CONFIG"])
name = "%s-%d" % (tf["task"]["type"], tf["task"]["index"])
path = os.path.join(args["--out"], name + ".jsonl")
attempt = sum(1 for _ in open(path)) if os.path.exists(path) else 0
def slurm_job_id():  # the launcher's (the trainer's parent): trainers get no SLURM_* variables
    with open("/proc/%d/environ" % os.getppid(), "rb") as f:
        for e in f.read().split(b"\\0"):
            if e.startswith(b"SLURM_JOB_ID="):
                return e.split(b"=", 1)[1].decode()
with open(path, "a") as f:
    f.write(json.dumps({"attempt": attempt, "slurmJob": slurm_job_id()}) + "\\n")
print("start %d of %s" % (attempt, name), flush=True)
def on_term(signum, frame):
    print("TERM received by %s in attempt %d" % (name, attempt), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)

def driver_pid():
    mine = ("SLURM_JOB_ID=%s" % slurm_job_id()).encode()
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().split(b"\\0")
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read().split(b"\\0")
        except OSError:
            continue
        if b"slurm-driver" in cmd and mine in env:
            return int(pid)

def oom_kills():  # the kernel's count of OOM kills, host-wide
    with open("/proc/vmstat") as f:
        for line in f:
            if line.startswith("oom_kill "):
                return int(line.split()[1])

def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

def memory_group(pid):  # the process's memory cgroup dir, as mounted in this namespace
    with open("/proc/%d/cgroup" % pid) as f:
        rel = [l.split(":", 2)[2].strip() for l in f if "memory" in l.split(":")[1].split(",")][0]
    with open("/proc/self/mountinfo") as f:
        for l in f:
            fields = l.split()
            opts = l.split(" - ")[1].split()
            # The hierarchy mounted inside this cgroup namespace (its root is the namespace's).
            if opts[0] == "cgroup" and "memory" in opts[2].split(",") and fields[3] == "/":
                return fields[4] + rel

def ballast(driver):
    # A process in the driver's memory group (the batch step), the OOM killer's second choice
    # (oom_score_adj 900 against the driver's 1000, 24 MiB), so that a second kill, when the
    # driver's death freed too little, never takes one of the replica's own processes.
    r, w = os.pipe()
    if os.fork() == 0:
        try:
            with open(os.path.join(memory_group(driver), "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("900")
            hold = bytearray(24 << 20)
            for i in range(0, len(hold), 4096):
                hold[i] = 1
            os.write(w, b"x")
            while True:
                time.sleep(60)
        finally:
            os._exit(1)
    os.close(w)
    if os.read(r, 1) != b"x":
        raise SystemExit("the ballast did not start")

if "--starve_driver" in args:
    driver = driver_pid()
    ballast(driver)
    with open("/proc/%d/oom_score_adj" % driver, "w") as f:
        f.write("1000")
    print("starving the driver", flush=True)
    fd = os.memfd_create("ty-starve")
    chunk = b"\\x01" * 65536
    kills = oom_kills()
    while alive(driver):
        os.write(fd, chunk)
        if oom_kills() != kills:
            # Someone was OOM-killed (the driver, or a process elsewhere on the host): write no
            # more until the driver is gone, or it was not the driver.
            deadline = time.time() + 5
            while alive(driver) and time.time() < deadline:
                time.sleep(0.05)
            kills = oom_kills()
    os.close(fd)
    print("the driver is gone", flush=True)
release = os.path.join(args["--out"], "release")
while "--hold" in args and not os.path.exists(release):
    time.sleep(0.1)
print("done %s in attempt %d" % (name, attempt), flush=True)
"""


def accounting_missing():
    if not shutil.which("slurmdbd", path=os.environ.get("PATH", "") + ":/usr/sbin") or \
            not shutil.which("mariadbd", path=os.environ.get("PATH", "") + ":/usr/sbin"):
        return "slurmdbd or mariadbd is not installed (scripts/install-deps.sh installs them)"
    return None


cluster = cluster_fixture(
    "ty-slurmacct-", name="cluster", skip=accounting_missing,
    settings=lambda: dict({"TRAINYARD_SLURM_ACCOUNTING": "1", "TRAINYARD_SLURM_MIN_JOB_AGE": "2"},
                          **({"TRAINYARD_SLURM_CGROUP": "1"} if cgroup_v1() else {})))


env = daemon_fixture(CONFIG, TRAINER, "ty-slurmacct-", cluster="cluster")


def submit(env, job_id, args=(), project=PROJECT):
    out = os.path.join(str(env["root"]), "out-" + job_id)
    os.makedirs(out, exist_ok=True)
    body = {"jobId": job_id, "trainingInput": {
        "packageUris": [env["uri"]], "pythonModule": "trainer.task", "region": "us-central1",
        "scaleTier": "CUSTOM", "masterType": "n1-standard-4",
        "args": list(args) + ["--out=" + out]}}
    status, reply = env["daemon"].request("POST", "/v1/projects/%s/jobs" % project, body)
    assert status == 200, reply
    return out


def finished(d, job_id, project=PROJECT, timeout=180):
    return d.wait_state(job_id, ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=timeout,
                        project=project)


def exit_report(env, job_id, project=PROJECT):
    with open(os.path.join(env["shared"], "jobs", project, job_id, "master-replica-0",
                           "exit.json")) as f:
        return json.load(f)


def test_a_project_runs_under_its_account_and_slurmdbd_accounts_it_there(env):
    d = env["daemon"]
    c = env["cluster"]
    # The daemon found slurmdbd (AccountingStorageType) and asks plain sacct.
    with open(os.path.join(d.data_dir, "daemon.log")) as f:
        log = f.read()
    assert "Slurm's verdict after squeue: sacct" in log and "sacct -c" not in log, log[-3000:]
    out = submit(env, "mine", ["--hold"])
    d.wait_state("mine", ["RUNNING"], timeout=120)
    (sid, state, _), = slurm_jobs(c, "mine")
    release(out)
    job = finished(d, "mine")
    assert job["state"] == "SUCCEEDED", job
    # slurmdbd has it under the project's account (plain sacct: no jobcomp file involved).
    wait_for(lambda: c.sacct(sid, "JobID,Account,State", "-X") == [[sid, "acct-a", "COMPLETED"]],
             timeout=30, what="sacct: %s" % c.sacct(sid, "JobID,Account,State", "-X"))


def trainyardd_exit(env, config, name):
    """Starts a second trainyardd with `config` and returns its CompletedProcess (it must stop
    by itself at start)."""
    root = env["root"]
    shared = str(root / (name + "-shared"))
    os.makedirs(shared)
    cfg = str(root / (name + ".yaml"))
    with open(cfg, "w") as f:
        f.write(config.format(shared=shared))
    data = str(root / (name + "-data"))
    os.makedirs(data)
    return subprocess.run([os.path.join(BIN, "trainyardd"), "--config", cfg, "--data-dir", data,
                           "--listen", "127.0.0.1:0"], env=env["cluster"].env,
                          capture_output=True, text=True, timeout=60)


def test_a_daemon_with_an_account_slurm_refuses_stops_at_start_naming_the_setting(env):
    c = env["cluster"]
    # An account nobody has, and one that exists but this user has no association with.
    c.sacctmgr("add", "account", "acct-closed", "cluster=trainyard-dev")
    for account in ("acct-nowhere", "acct-closed"):
        p = trainyardd_exit(env, CONFIG.replace("revoked: acct-b", "nlp: " + account),
                            "bad-" + account)
        assert p.returncode != 0, p.stdout + p.stderr
        assert ("slurm.project_accounts (project nlp): Slurm refuses the account %s (" % account
                in p.stderr), p.stderr
        assert "Invalid account" in p.stderr, p.stderr
    # slurm.account is checked the same way.
    p = trainyardd_exit(env, CONFIG.replace("account: dev", "account: acct-nowhere"), "bad-dflt")
    assert p.returncode != 0 and "slurm.account: Slurm refuses the account acct-nowhere" in \
        p.stderr, p.stderr
    assert not live_jobs(c)


def test_a_job_whose_account_slurm_refuses_fails_at_once_with_slurms_reason(env):
    d = env["daemon"]
    c = env["cluster"]
    user = c.run("id", "-un").stdout.strip()
    # The daemon checked acct-b at start; now the administrator takes it away from this user.
    c.sacctmgr("remove", "user", "name=" + user, "account=acct-b", "cluster=trainyard-dev")
    try:
        submit(env, "refused", project="revoked")
        job = finished(d, "refused", project="revoked", timeout=60)
        assert job["state"] == "FAILED", job
        msg = job["errorMessage"]
        assert "Invalid account or account/partition combination specified" in msg, job
        assert "acct-b" in msg and "slurm.project_accounts (project revoked)" in msg, job
        assert starts(os.path.join(str(env["root"]), "out-refused")) == []
        assert slurm_jobs(c, "refused") == [] and not live_jobs(c)
    finally:
        c.sacctmgr("add", "user", user, "account=acct-b", "cluster=trainyard-dev")


def test_a_verdict_while_the_daemon_was_down_comes_from_slurmdbd(env):
    d = env["daemon"]
    c = env["cluster"]
    out = submit(env, "nodefail", ["--hold"])
    wait_for(lambda: "start 0 of master-0" in messages(d, "nodefail", "master-replica-0"),
             timeout=120, what="the trainer running")
    first = starts(out)[0]["slurmJob"]
    node = c.run("squeue", "-h", "-j", first, "-o", "%N").stdout.strip()
    d.stop(sig=signal.SIGKILL)
    # The node fails while nobody watches: the job ends NODE_FAIL and leaves squeue
    # (MinJobAge=2); its launcher got a SIGTERM Trainyard did not send.
    c.node_down(node, reason="accounts test")
    wait_for(lambda: not c.run("squeue", "-h", "-t", "all", "-j", first,
                               check=False).stdout.strip(),
             timeout=120, what="Slurm job %s gone from squeue" % first)
    assert c.sacct(first, "JobID,State", "-X") == [[first, "NODE_FAIL"]]
    # Only slurmdbd can tell now.
    open(os.path.join(c.dir, "log", "jobcomp.txt"), "w").close()
    c.wait_idle()
    d.start()
    wait_for(lambda: len(starts(out)) == 2, timeout=180, what="the gang restarted")
    release(out)
    job = finished(d, "nodefail")
    assert job["state"] == "SUCCEEDED", job
    service = messages(d, "nodefail", "service")
    assert any(m.startswith("Slurm job %s ended NODE_FAIL on %s while nobody watched" % (
        first, node)) and "sacct" in m for m in service), service
    assert any("was lost (Slurm ended its allocation (job %s NODE_FAIL" % first in m and
               "from sacct" in m for m in service), service
    wait_for(lambda: not live_jobs(c), timeout=60, what="no Slurm job left")


def test_a_job_slurm_ends_out_of_memory_fails_with_the_oom_message(env):
    if not cgroup_v1():
        pytest.skip("no writable cgroup v1 memory hierarchy: Slurm limits no memory here")
    d = env["daemon"]
    c = env["cluster"]
    out = submit(env, "oomjob", ["--starve_driver", "--hold"])
    job = finished(d, "oomjob", timeout=180)
    assert job["state"] == "FAILED", job
    assert job["errorMessage"] == (
        "The replica master 0 ran out-of-memory and exited with a non-zero status of 137."), job
    # Started once, in one allocation (not restarted), which Slurm ended OUT_OF_MEMORY.
    assert len(starts(out)) == 1, starts(out)
    sid = starts(out)[0]["slurmJob"]
    assert c.sacct(sid, "JobID,State", "-X") == [[sid, "OUT_OF_MEMORY"]]
    lines = messages(d, "oomjob", "master-replica-0")
    assert "the driver is gone" in lines, lines
    # The launcher saw no OOM kill of its own: the verdict came from the job's state alone.
    report = exit_report(env, "oomjob")
    assert not report.get("oomKilled"), report
    wait_for(lambda: not live_jobs(c), timeout=60, what="no Slurm job left")
    wait_for(lambda: not c.job_pids(), timeout=60,
             what="no process of a job left: %s" % c.describe(c.job_pids()))
