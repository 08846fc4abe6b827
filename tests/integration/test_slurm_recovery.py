"""`executor: slurm` when things die (issue 12): the daemon killed at the two seams of a
submission (failpoints `executor.slurm.before_sbatch` and `executor.slurm.after_sbatch`,
docs/faults.md), and a node taken down under a distributed job, which must restart as a whole
gang in a new allocation. A real trainyardd on a real Slurm dev cluster
(scripts/slurm-dev-cluster.sh), real trainers under trainyard-launcher. Each trainer appends
what it saw to <out>/<task>.jsonl when it starts, so a test counts how often it ran.

Run with Debian's /usr/bin/python3 -m pytest tests/integration/test_slurm_recovery.py."""

import datetime
import http.client
import json
import os
import shutil
import signal
import time

from conftest import PROJECT, wait_for
from slurm_cluster import live_jobs, messages, slurm_jobs
from slurm_cluster import slurm_cluster  # noqa: F401
from slurm_cluster import daemon_fixture, requires_slurm, slurm_config
from slurm_cluster import starts

pytestmark = requires_slurm

CONFIG = slurm_config()

# --connect: the master listens on its own TF_CONFIG address until every worker has said its
# name there; the workers reach it at MASTER_ADDR:MASTER_PORT. A run of a gang whose addresses
# are stale or inconsistent never gets past this (it times out and fails).
TRAINER = """
import json, os, signal, socket, sys, time
args = dict(a.split("=", 1) if "=" in a else (a, "1") for a in sys.argv[1:])
tf = json.loads(os.environ["TF_CONFIG"])
name = "%s-%d" % (tf["task"]["type"], tf["task"]["index"])
path = os.path.join(args["--out"], name + ".jsonl")
attempt = sum(1 for _ in open(path)) if os.path.exists(path) else 0
with open(path, "a") as f:
    f.write(json.dumps({k: os.environ.get(k) for k in ("TF_CONFIG", "MASTER_ADDR", "MASTER_PORT",
                        "WORLD_SIZE", "RANK")}) + "\\n")
print("start %d of %s" % (attempt, name), flush=True)
def on_term(signum, frame):
    print("TERM received by %s in attempt %d" % (name, attempt), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
if "--connect" in args:
    workers = tf["cluster"].get("worker", [])
    if name == "master-0":
        host, port = tf["cluster"]["master"][0].rsplit(":", 1)
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("", int(port)))
        srv.listen(8)
        srv.settimeout(90)
        heard = []
        while len(heard) < len(workers):
            conn, _ = srv.accept()
            heard.append(conn.recv(100).decode())
            conn.sendall(b"ok")
            conn.close()
        srv.close()
        print("attempt %d: master heard %s" % (attempt, ",".join(sorted(heard))), flush=True)
    else:
        addr = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
        deadline = time.time() + 90
        while True:
            try:
                s = socket.create_connection(addr, timeout=5)
                s.sendall(name.encode())
                assert s.recv(10) == b"ok"
                s.close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        print("attempt %d: %s reached the master at %s:%d" % ((attempt, name) + addr), flush=True)
lines = int(args.get("--lines_after" if attempt else "--lines", "3"))
for i in range(lines):
    print("attempt %d: line %d of %s" % (attempt, i, name), flush=True)
    time.sleep(float(args.get("--line_sleep", "0.05")))
if "--hold" in args:  # until the test creates <hold>/release-<attempt> (or -<name>-<attempt>)
    print("attempt %d: holding" % attempt, flush=True)
    while not any(os.path.exists(os.path.join(args["--hold"], f)) for f in (
            "release-%d" % attempt, "release-%s-%d" % (name, attempt))):
        time.sleep(0.05)
    print("attempt %d: released" % attempt, flush=True)
print("done", name, flush=True)
sys.exit(int(args.get("--exit_" + name, "0")))
"""


env = daemon_fixture(CONFIG, TRAINER, "ty-slurm-rec-")


def submit(env, job_id, args=(), may_die=False, **training):
    """Creates the job; `may_die`: the daemon may die before it answers (the job is stored
    before admission starts it, so it is there after a restart)."""
    out = os.path.join(str(env["root"]), "out-" + job_id)
    os.makedirs(out, exist_ok=True)
    ti = {"packageUris": [env["uri"]], "pythonModule": "trainer.task", "region": "us-central1",
          "args": list(args) + ["--out=" + out]}
    ti.update(training)
    try:
        status, body = env["daemon"].request("POST", "/v1/projects/%s/jobs" % PROJECT,
                                             {"jobId": job_id, "trainingInput": ti})
    except (OSError, http.client.HTTPException):  # e.g. IncompleteRead: it died mid-answer
        if not may_die:
            raise
        return out
    assert status == 200, body
    return out


def kill_at(env, failpoint, job_id, args):
    """Restarts the daemon with `failpoint` armed, submits, and waits for it to die there."""
    d = env["daemon"]
    d.stop()
    d.env = dict(env["cluster"].env, TRAINYARD_FAILPOINTS=failpoint + "=kill")
    d.start()
    out = submit(env, job_id, args, may_die=True)
    proc = d.proc
    assert proc.wait(timeout=120) == -signal.SIGKILL, "the daemon did not die at " + failpoint
    d.proc = None
    d.env = env["cluster"].env
    return out


def test_daemon_killed_before_sbatch_submits_the_gang_on_restart(env):
    d = env["daemon"]
    c = env["cluster"]
    out = kill_at(env, "executor.slurm.before_sbatch", "nosbatch", ["--lines=5"])
    # The gang's files are written; Slurm never heard of it.
    assert slurm_jobs(c, "nosbatch") == []
    d.start()
    job = d.wait_state("nosbatch", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
    assert job["state"] == "SUCCEEDED", job
    assert len(starts(out, "master-0")) == 1  # the trainer ran exactly once
    assert len(slurm_jobs(c, "nosbatch")) == 1, slurm_jobs(c, "nosbatch")
    lines = [m for m in messages(d, "nosbatch", "master-replica-0") if "line " in m]
    assert lines == ["attempt 0: line %d of master-0" % i for i in range(5)]
    assert messages(d, "nosbatch", "service").count("Job completed successfully.") == 1


def test_daemon_killed_after_sbatch_adopts_the_job_by_name(env):
    d = env["daemon"]
    c = env["cluster"]
    out = kill_at(env, "executor.slurm.after_sbatch", "adopted", ["--lines=5"])
    # Slurm has the job (it may be running or done by now); its id was never written down.
    assert len(slurm_jobs(c, "adopted")) == 1, slurm_jobs(c, "adopted")
    gang_dirs = [g for g in os.listdir(os.path.join(env["shared"], "jobs", PROJECT, "adopted"))
                 if g.startswith("slurm-")]
    assert len(gang_dirs) == 1
    with open(os.path.join(env["shared"], "jobs", PROJECT, "adopted", gang_dirs[0],
                           "gang.json")) as f:
        assert "jobId" not in json.load(f)
    d.start()
    job = d.wait_state("adopted", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
    assert job["state"] == "SUCCEEDED", job
    assert len(starts(out, "master-0")) == 1
    assert len(slurm_jobs(c, "adopted")) == 1, slurm_jobs(c, "adopted")  # never submitted twice
    lines = [m for m in messages(d, "adopted", "master-replica-0") if "line " in m]
    assert lines == ["attempt 0: line %d of master-0" % i for i in range(5)]


def test_node_failure_restarts_the_whole_gang_with_new_addresses(env):
    d = env["daemon"]
    c = env["cluster"]
    names = ["master-0", "worker-0", "worker-1"]
    out = submit(env, "gang", ["--connect", "--lines=3000", "--line_sleep=0.1",
                               "--lines_after=3"],
                 scaleTier="CUSTOM", masterType="n1-standard-4", workerType="n1-standard-4",
                 workerCount=2)
    # Every replica connected and is printing: the first attempt's gang is up.
    wait_for(lambda: all(("attempt 0: line 2 of %s" % n) in messages(d, "gang") for n in names),
             timeout=180, what="the first attempt running")
    first = slurm_jobs(c, "gang")
    assert len(first) == 1, first
    with open(os.path.join(env["shared"], "jobs", PROJECT, "gang", "worker-replica-1",
                           "slurm.json")) as f:
        node = json.load(f)["node"]
    c.node_down(node, reason="ty-gang-test")
    try:
        job = d.wait_state("gang", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=240)
    finally:
        # ReturnToService=2 may have brought it back already.
        if any(s in c.node_states().get(node, "") for s in ("down", "drain", "fail")):
            c.node_resume(node)
    assert job["state"] == "SUCCEEDED", job
    service = messages(d, "gang", "service")
    restarts = [m for m in service if "restarting all 3 together in a new allocation" in m]
    assert len(restarts) == 1, service
    # Exactly two attempts, each one Slurm job; the first ended with its node.
    jobs = slurm_jobs(c, "gang")
    assert len(jobs) == 2, jobs
    assert [r[1] for r in jobs if r[0] == first[0][0]] == ["NODE_FAIL"], jobs
    views = {n: starts(out, n) for n in names}
    assert all(len(v) == 2 for v in views.values()), views
    # The second attempt: one cluster for all, with the real new addresses, and the master
    # reachable at MASTER_ADDR:MASTER_PORT (the workers got there: the master heard them).
    clusters = {json.dumps(json.loads(v[1]["TF_CONFIG"])["cluster"], sort_keys=True)
                for v in views.values()}
    assert len(clusters) == 1, clusters
    cluster = json.loads(clusters.pop())
    old = json.loads(views["master-0"][0]["TF_CONFIG"])["cluster"]
    assert cluster != old
    assert len(set(cluster["master"] + cluster["worker"])) == 3
    for n in names:
        assert "%s:%s" % (views[n][1]["MASTER_ADDR"], views[n][1]["MASTER_PORT"]) == \
            cluster["master"][0]
        task = json.loads(views[n][1]["TF_CONFIG"])["task"]
        assert "%s-%d" % (task["type"], task["index"]) == n  # the same identity
    master = messages(d, "gang", "master-replica-0")
    assert "attempt 1: master heard worker-0,worker-1" in master, master
    # Both attempts' lines are kept, each once.
    for n, task in zip(names, ["master-replica-0", "worker-replica-0", "worker-replica-1"]):
        lines = messages(d, "gang", task)
        assert "start 0 of %s" % n in lines and "start 1 of %s" % n in lines, lines
        assert [m for m in lines if m.startswith("attempt 1: line ")] == \
            ["attempt 1: line %d of %s" % (i, n) for i in range(3)]
        first_lines = [m for m in lines if m.startswith("attempt 0: line ")]
        assert first_lines == ["attempt 0: line %d of %s" % (i, n)
                               for i in range(len(first_lines))]
    # Nothing of either attempt is left in Slurm or on the nodes.
    wait_for(lambda: not live_jobs(c), timeout=60, what="no Slurm job left")
    wait_for(lambda: not c.job_pids(), timeout=60,
             what="no process of a job left: %s" % c.describe(c.job_pids()))


def daemon_log(d):
    with open(os.path.join(d.data_dir, "daemon.log"), errors="replace") as f:
        return f.read()


def test_a_slurm_job_named_as_ours_that_no_job_owns_is_logged_then_cancelled_if_asked(env):
    """An orphan: a live Slurm job with this daemon's name prefix that none of the jobs it
    recovers owns (a store restored from an older backup). The first squeue after a start
    finds it: logged and left alone, or cancelled with slurm.cancel_orphans."""
    d = env["daemon"]
    c = env["cluster"]
    submit(env, "named")
    job = d.wait_state("named", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
    assert job["state"] == "SUCCEEDED", job
    name = slurm_jobs(c, "named")[0][2]
    prefix = name[:name.index("-", len("ty-")) + 1]  # ty-<tag>-
    orphan = c.sbatch("-n1", "--mem=10M", "-o", "/dev/null", "-J", prefix + "gone-from-the-store",
                      "--wrap", "sleep 600")
    try:
        c.wait_state(orphan, "RUNNING", timeout=60)
        d.stop()
        d.start()
        wait_for(lambda: "Slurm job %s (%sgone-from-the-store" % (orphan, prefix) in daemon_log(d),
                 timeout=60, what="the orphan logged")
        assert "left alone (slurm.cancel_orphans: true cancels it)" in daemon_log(d)
        assert c.job_state(orphan) == "RUNNING"
        d.stop()
        d.env = dict(c.env, TRAINYARD_SLURM_CANCEL_ORPHANS="true")
        d.start()
        wait_for(lambda: c.job_state(orphan) not in ("RUNNING", "COMPLETING"), timeout=60,
                 what="the orphan cancelled")
        assert "cancelling it (slurm.cancel_orphans)" in daemon_log(d)
        # The daemon's own jobs are not orphans: a job submitted now runs to its end.
        submit(env, "after_orphans")
        job = d.wait_state("after_orphans", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
        assert job["state"] == "SUCCEEDED", job
    finally:
        c.scancel(orphan)
        d.stop()
        d.env = c.env
        d.start()


def test_a_lost_nodes_old_step_never_decides_or_pollutes_the_new_attempt(env):
    """A node's slurmd killed, then the node set down: Slurm ends the job NODE_FAIL at once, but
    nothing can stop its step (the slurmd is dead), so the old trainer lives on while the
    replica runs again in a new allocation. Released, the old trainer ends 0 and its launcher
    reports: that report (attempt 0) never ends attempt 1, whether it lands beside exit.json
    (the launcher sees the newer spec) or in it; the old attempt's lines after it was declared
    lost never reach the store. Once the node's slurmd is back, Slurm kills what is left."""
    d = env["daemon"]
    c = env["cluster"]
    hold = os.path.join(str(env["root"]), "hold-stale")
    os.makedirs(hold)
    out = submit(env, "stale", ["--lines=2", "--lines_after=2", "--hold=" + hold])
    wait_for(lambda: "attempt 0: holding" in messages(d, "stale", "master-replica-0"),
             timeout=180, what="attempt 0 running")
    work = os.path.join(env["shared"], "jobs", PROJECT, "stale", "master-replica-0")
    with open(os.path.join(work, "slurm.json")) as f:
        node = json.load(f)["node"]
    first = slurm_jobs(c, "stale")
    assert len(first) == 1, first
    c.kill_slurmd(node)
    try:
        c.node_down(node, reason="ty-stale-test")
        wait_for(lambda: "attempt 1: holding" in messages(d, "stale", "master-replica-0"),
                 timeout=120, what="attempt 1 running in a new allocation")
        assert [r[1] for r in slurm_jobs(c, "stale") if r[0] == first[0][0]] == ["NODE_FAIL"]
        assert len(starts(out, "master-0")) == 2
        # Attempt 0's trainer still runs (nothing could stop it): released, it ends 0.
        with open(os.path.join(hold, "release-0"), "w"):
            pass
        aside = os.path.join(work, "exit.attempt-0.json")
        wait_for(lambda: os.path.exists(aside), timeout=60,
                 what="attempt 0's launcher reporting beside exit.json")
        with open(aside) as f:
            report = json.load(f)
        assert report["attempt"] == 0 and report["exitCode"] == 0, report
        # Had it read the spec before attempt 1's was written, its report would be exit.json:
        # the daemon must not take it for attempt 1's end either.
        shutil.copy(aside, os.path.join(work, ".exit.json.test"))
        os.rename(os.path.join(work, ".exit.json.test"), os.path.join(work, "exit.json"))
        wait_for(lambda: "ignoring an exit report of an older attempt" in daemon_log(d),
                 timeout=60, what="the daemon ignoring attempt 0's exit.json")
        assert d.job("stale")["state"] == "RUNNING"
        # A daemon killed and started again re-attaches to attempt 1 and ignores it as well.
        d.stop(signal.SIGKILL)
        d.start()
        wait_for(lambda: daemon_log(d).count("ignoring an exit report of an older attempt") >= 2,
                 timeout=60, what="the restarted daemon ignoring attempt 0's exit.json")
        assert d.job("stale")["state"] == "RUNNING"
        with open(os.path.join(hold, "release-1"), "w"):
            pass
        job = d.wait_state("stale", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=120)
    finally:
        c.start_slurmd(node)  # ReturnToService=2: idle again once it registers
    assert job["state"] == "SUCCEEDED", job
    lines = messages(d, "stale", "master-replica-0")
    assert [m for m in lines if m.startswith("attempt 1: ")] == \
        ["attempt 1: line 0 of master-0", "attempt 1: line 1 of master-0", "attempt 1: holding",
         "attempt 1: released"], lines
    assert "attempt 0: released" not in lines, lines  # written after it was declared lost
    assert "done master-0" in lines
    service = messages(d, "stale", "service")
    assert len([m for m in service if "was lost" in m]) == 1, service
    assert len(slurm_jobs(c, "stale")) == 2
    # Back, the node's slurmd is told to end the old job: no job, step or process is left.
    wait_for(lambda: not live_jobs(c), timeout=60, what="no Slurm job left")
    wait_for(lambda: not c.job_pids(), timeout=60,
             what="no process of a job left: %s" % c.describe(c.job_pids()))
    c.wait_idle(timeout=60)


def test_a_job_submitted_while_the_controller_is_down_waits_and_runs_when_it_returns(env):
    """slurmctld stopped: sbatch cannot reach it. The job is kept QUEUED, says why, and is
    submitted once the controller is back (one Slurm job)."""
    d = env["daemon"]
    c = env["cluster"]
    c.stop_slurmctld()
    try:
        submit(env, "ctldaway", ["--lines=3"])
        submit(env, "ctldcancel", ["--lines=3"])
        for job_id in ("ctldaway", "ctldcancel"):
            wait_for(lambda: "Slurm's controller does not take jobs now" in
                     d.job(job_id).get("waitReason", ""), timeout=90,
                     what="the job waiting for the controller")
        job = d.job("ctldaway")
        assert job["state"] == "QUEUED", job
        assert "Unable to contact slurm controller" in job["waitReason"], job
        assert "sbatch: sbatch:" not in job["waitReason"], job
        assert d.get_status("/readyz") == 503
        # One cancelled meanwhile: it cannot be known to be out of Slurm until the controller
        # answers (a timed-out sbatch may have reached it), then it ends without running.
        status, body = d.request("POST", "/v1/projects/%s/jobs/ctldcancel:cancel" % PROJECT, {})
        assert status == 200, body
    finally:
        c.start_slurmctld()
    job = d.wait_state("ctldaway", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
    assert job["state"] == "SUCCEEDED", job
    assert d.wait_state("ctldcancel", ["SUCCEEDED", "FAILED", "CANCELLED"],
                        timeout=60)["state"] == "CANCELLED"
    assert slurm_jobs(c, "ctldcancel") == []
    lines = [m for m in messages(d, "ctldaway", "master-replica-0") if "line " in m]
    assert lines == ["attempt 0: line %d of master-0" % i for i in range(3)]
    service = messages(d, "ctldaway", "service")
    assert len([m for m in service if "does not take jobs now" in m]) == 1, service
    assert len(slurm_jobs(c, "ctldaway")) == 1, slurm_jobs(c, "ctldaway")
    wait_for(lambda: d.get_status("/readyz") == 200, timeout=60, what="/readyz ready again")


def test_a_running_job_goes_on_and_ends_while_the_controller_is_away(env):
    """slurmctld stopped under a running job: squeue and scancel now wait for it (about 10 s
    each) on threads of their own, so the daemon still stores the trainer's lines and reports
    its end while the controller is away (nothing of a job's end needs Slurm's word)."""
    d = env["daemon"]
    c = env["cluster"]
    hold = os.path.join(str(env["root"]), "hold-away")
    os.makedirs(hold)
    submit(env, "runaway", ["--lines=1", "--hold=" + hold])
    wait_for(lambda: "attempt 0: holding" in messages(d, "runaway", "master-replica-0"),
             timeout=180, what="the trainer holding")
    c.stop_slurmctld()
    try:
        wait_for(lambda: d.get_status("/readyz") == 503, timeout=60,
                 what="/readyz degraded: squeue fails")
        released = time.monotonic()
        with open(os.path.join(hold, "release-0"), "w"):
            pass
        job = d.wait_state("runaway", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=60)
        assert job["state"] == "SUCCEEDED", job
        print("released to SUCCEEDED with the controller away: %.1f s"
              % (time.monotonic() - released))
        assert "done master-0" in messages(d, "runaway", "master-replica-0")
        assert d.get_status("/readyz") == 503  # it ended while the controller was away
    finally:
        c.start_slurmctld()
    wait_for(lambda: d.get_status("/readyz") == 200, timeout=60, what="/readyz ready again")
    wait_for(lambda: not live_jobs(c), timeout=60, what="the Slurm job gone")


def test_exits_read_after_a_restart_are_judged_in_the_order_they_ended(env):
    """The daemon killed under a master and a worker; meanwhile the worker fails (exit 3), and
    then the master succeeds. Restarted, the daemon reads both reports at once: judged in the
    order they ended (exit.json's mtime), the job FAILED for the worker, and its endTime is
    the master's end, not the restart."""
    d = env["daemon"]
    hold = os.path.join(str(env["root"]), "hold-order")
    os.makedirs(hold)
    submit(env, "order", ["--lines=1", "--hold=" + hold, "--exit_worker-0=3"],
           scaleTier="CUSTOM", masterType="n1-standard-4", workerType="n1-standard-4",
           workerCount=1)
    for task in ("master-replica-0", "worker-replica-0"):
        wait_for(lambda: "attempt 0: holding" in messages(d, "order", task), timeout=180,
                 what="%s holding" % task)
    d.stop(signal.SIGKILL)
    work = os.path.join(env["shared"], "jobs", PROJECT, "order")
    try:
        for name, task in (("worker-0", "worker-replica-0"), ("master-0", "master-replica-0")):
            with open(os.path.join(hold, "release-%s-0" % name), "w"):
                pass
            wait_for(lambda: os.path.exists(os.path.join(work, task, "exit.json")), timeout=60,
                     what="%s's exit report" % task)
        master_end = os.stat(os.path.join(work, "master-replica-0", "exit.json")).st_mtime
        restarted = time.time()
    finally:
        d.start()
    job = d.wait_state("order", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=120)
    assert job["state"] == "FAILED", job
    assert "worker 0" in job["errorMessage"], job
    end = datetime.datetime.fromisoformat(job["endTime"].replace("Z", "+00:00")).timestamp()
    assert end < restarted and abs(end - master_end) < 1.0, (job["endTime"], master_end, restarted)


def test_the_replica_on_the_failed_node_is_the_one_named_lost(env):
    """A master and a worker, a node each; the worker's node fails (its slurmd killed, the node
    set down). Slurm stops the master on its healthy node, whose launcher reports at once; the
    job's log still names the worker, the replica lost with its node."""
    d = env["daemon"]
    c = env["cluster"]
    hold = os.path.join(str(env["root"]), "hold-lostname")
    os.makedirs(hold)
    # n1-standard-16: 4 CPUs with cpu_scale 0.25, a whole node each.
    submit(env, "lostname", ["--lines=1", "--lines_after=1", "--hold=" + hold],
           scaleTier="CUSTOM", masterType="n1-standard-16", workerType="n1-standard-16",
           workerCount=1)
    for task in ("master-replica-0", "worker-replica-0"):
        wait_for(lambda: "attempt 0: holding" in messages(d, "lostname", task), timeout=180,
                 what="attempt 0 of %s running" % task)
    nodes = {}
    for task in ("master-replica-0", "worker-replica-0"):
        with open(os.path.join(env["shared"], "jobs", PROJECT, "lostname", task,
                               "slurm.json")) as f:
            nodes[task] = json.load(f)["node"]
    assert nodes["master-replica-0"] != nodes["worker-replica-0"], nodes
    node = nodes["worker-replica-0"]
    c.kill_slurmd(node)
    try:
        c.node_down(node, reason="ty-lostname-test")
        wait_for(lambda: any("restarting all 2 together" in m
                             for m in messages(d, "lostname", "service")),
                 timeout=120, what="the whole gang restarting")
        restart = [m for m in messages(d, "lostname", "service") if "restarting all 2" in m]
        assert len(restart) == 1 and restart[0].startswith("The replica worker 0 was lost"), \
            restart
        for task in ("master-replica-0", "worker-replica-0"):
            wait_for(lambda: "attempt 1: holding" in messages(d, "lostname", task),
                     timeout=120, what="attempt 1 of %s running" % task)
        for attempt in (0, 1):
            with open(os.path.join(hold, "release-%d" % attempt), "w"):
                pass
        job = d.wait_state("lostname", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=120)
    finally:
        c.start_slurmd(node)
    assert job["state"] == "SUCCEEDED", job
    wait_for(lambda: not live_jobs(c), timeout=60, what="no Slurm job left")
    wait_for(lambda: not c.job_pids(), timeout=60,
             what="no process of a job left: %s" % c.describe(c.job_pids()))
    c.wait_idle(timeout=60)
