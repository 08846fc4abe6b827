"""Restart in place under `executor: slurm` (issue 12, compat §12): a replica killed by a signal
nobody at Trainyard sent, inside an allocation that is still healthy, gets a new Slurm step in
the same allocation: same node, same port, same work dir, same TF_CONFIG; its peers are not
touched, and the restart counts against replica_restarts as locally. A real trainyardd on a
real Slurm dev cluster (scripts/slurm-dev-cluster.sh), real trainers under trainyard-launcher.

Every trainer listens on its own TF_CONFIG address and appends what it saw to
<out>/<task>.jsonl once it listens. Workers wait for the master's connection; the master waits
for <out>/release, then reaches every worker at the address in its own TF_CONFIG. Nothing
depends on timing: the test kills a trainer once both listen and releases the master once the
killed one listens again.

The daemon killed between deciding a restart in place and its driver acting on it (failpoints
`executor.slurm.restart.before_tell` and `.after_tell`, docs/faults.md) restarts the replica
once and counts it once; a repeated decision in control.log is ignored by the driver.

Run with Debian's /usr/bin/python3 -m pytest tests/integration/test_slurm_restart.py."""

import json
import os
import signal

import pytest

from conftest import PROJECT, wait_for
from slurm_cluster import live_jobs, messages, slurm_jobs
from slurm_cluster import slurm_cluster  # noqa: F401
from slurm_cluster import daemon_fixture, requires_slurm, slurm_config
from slurm_cluster import starts

pytestmark = requires_slurm

CONFIG = slurm_config()

TRAINER = """
import json, os, signal, socket, sys, time
args = dict(a.split("=", 1) if "=" in a else (a, "1") for a in sys.argv[1:])
tf = json.loads(os.environ["TF_CONFIG"])
name = "%s-%d" % (tf["task"]["type"], tf["task"]["index"])
out = args["--out"]
path = os.path.join(out, name + ".jsonl")
attempt = sum(1 for _ in open(path)) if os.path.exists(path) else 0
host, port = tf["cluster"][tf["task"]["type"]][tf["task"]["index"]].rsplit(":", 1)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("", int(port)))
srv.listen(8)
seen = {k: os.environ.get(k) for k in ("TF_CONFIG", "MASTER_ADDR", "MASTER_PORT", "RANK",
                                       "WORLD_SIZE")}
seen.update({"pid": os.getpid(), "port": int(port)})
if "--metric" in args:  # a tuning trial: each attempt reports 1 + its number
    import hypertune
    hypertune.HyperTune().report_hyperparameter_tuning_metric(
        hyperparameter_metric_tag="m", metric_value=1.0 + attempt, global_step=1)
    seen["metric_file"] = os.environ["CLOUD_ML_HP_METRIC_FILE"]
with open(path, "a") as f:
    f.write(json.dumps(seen) + "\\n")
print("start %d of %s" % (attempt, name), flush=True)
if name == "master-0":
    release = os.path.join(out, "release")
    while not os.path.exists(release):
        time.sleep(0.1)
    for w in tf["cluster"].get("worker", []):
        h, p = w.rsplit(":", 1)
        s = socket.create_connection((h, int(p)), timeout=60)
        print("master reached %s: %s" % (w, s.recv(100).decode()), flush=True)
        s.close()
else:
    srv.settimeout(600)
    conn, _ = srv.accept()
    conn.sendall(("%s attempt %d" % (name, attempt)).encode())
    conn.close()
print("done", name, flush=True)
"""


env = daemon_fixture(CONFIG, TRAINER, "ty-slurm-restart-")


def submit(env, job_id, extra_args=(), **training):
    out = os.path.join(str(env["root"]), "out-" + job_id)
    os.makedirs(out, exist_ok=True)
    ti = {"packageUris": [env["uri"]], "pythonModule": "trainer.task", "region": "us-central1",
          "scaleTier": "CUSTOM", "masterType": "n1-standard-4",
          "args": ["--out=" + out] + list(extra_args)}
    ti.update(training)
    status, body = env["daemon"].request("POST", "/v1/projects/%s/jobs" % PROJECT,
                                         {"jobId": job_id, "trainingInput": ti})
    assert status == 200, body
    return out


def slurm_step(env, job_id, task):
    path = os.path.join(env["shared"], "jobs", PROJECT, job_id, task, "slurm.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def parent_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


@pytest.mark.parametrize("victim", ["trainer", "launcher"])
def test_replica_killed_restarts_in_place_with_its_identity(env, victim):
    d = env["daemon"]
    c = env["cluster"]
    job_id = "inplace" + victim
    # n1-standard-16: 4 CPUs here, a whole node each, so master and worker sit on two nodes.
    out = submit(env, job_id, masterType="n1-standard-16", workerType="n1-standard-16",
                 workerCount=1)
    wait_for(lambda: len(starts(out, "master-0")) == 1 and len(starts(out, "worker-0")) == 1,
             timeout=180, what="both trainers listening")
    before = slurm_step(env, job_id, "worker-replica-0")
    assert before is not None
    assert slurm_step(env, job_id, "master-replica-0")["node"] != before["node"]
    first = starts(out, "worker-0")[0]
    # Its first line is stored (a launcher killed before it relayed the line would lose it).
    wait_for(lambda: "start 0 of worker-0" in messages(d, job_id, "worker-replica-0"),
             timeout=60, what="the worker's first line stored")
    # Nobody at Trainyard sends it: the trainer, or its launcher (whose death takes the
    # trainer with it, so the driver reports the step lost).
    os.kill(first["pid"] if victim == "trainer" else parent_of(first["pid"]), signal.SIGKILL)
    wait_for(lambda: len(starts(out, "worker-0")) == 2, timeout=120,
             what="the worker's trainer started again")
    again = starts(out, "worker-0")[1]
    # The same identity and address: TF_CONFIG, the port it listens on, torch's variables.
    for k in ("TF_CONFIG", "MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "port"):
        assert again[k] == first[k], (k, first, again)
    # A new step of the same Slurm job on the same node.
    wait_for(lambda: (slurm_step(env, job_id, "worker-replica-0") or {}).get("stepId")
             not in (None, before["stepId"]), timeout=30, what="the new step's slurm.json")
    after = slurm_step(env, job_id, "worker-replica-0")
    assert (after["jobId"], after["node"]) == (before["jobId"], before["node"]), (before, after)
    # The master was not touched: one start, and the job never left RUNNING for it.
    assert len(starts(out, "master-0")) == 1
    with open(os.path.join(out, "release"), "w"):
        pass
    job = d.wait_state(job_id, ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
    assert job["state"] == "SUCCEEDED", job
    master = messages(d, job_id, "master-replica-0")
    # The master reached the restarted worker at the address it had from the start.
    worker_address = json.loads(first["TF_CONFIG"])["cluster"]["worker"][0]
    assert "master reached %s: worker-0 attempt 1" % worker_address in master, master
    assert len(starts(out, "master-0")) == 1
    assert len(slurm_jobs(c, job_id)) == 1, slurm_jobs(c, job_id)  # no new allocation
    service = messages(d, job_id, "service")
    # A killed launcher is reported by the driver from srun's words at once (not after the
    # executor's wait for Slurm's verdict on a step that ended without a report).
    how = ("was killed by signal 9" if victim == "trainer"
           else "was lost (its launcher was killed by signal 9 on node %s" % before["node"])
    assert [m for m in service if m.startswith("The replica worker 0 " + how) and
            m.endswith("; restarting it with the same identity (restart 1 of 2).")], service
    assert not [m for m in service if "new allocation" in m], service
    # Both runs' lines, in order, each once, the end of the first marked as locally.
    worker = messages(d, job_id, "worker-replica-0")
    assert worker.count("start 0 of worker-0") == 1 and worker.count("start 1 of worker-0") == 1
    i0, i1 = worker.index("start 0 of worker-0"), worker.index("start 1 of worker-0")
    if victim == "trainer":
        killed = [i for i, m in enumerate(worker) if "terminated by SIGKILL" in m]
        assert len(killed) == 1 and i0 < killed[0] < i1, worker
    assert worker.count("done worker-0") == 1 and worker.index("done worker-0") > i1
    wait_for(lambda: not live_jobs(c), timeout=60, what="no Slurm job left")
    wait_for(lambda: not c.job_pids(), timeout=60,
             what="no process of a job left: %s" % c.describe(c.job_pids()))


def gang_file(env, job_id, name):
    """The path of `name` in the job's one gang dir (slurm-*)."""
    run_dir = os.path.join(env["shared"], "jobs", PROJECT, job_id)
    gangs = [g for g in os.listdir(run_dir) if g.startswith("slurm-")]
    assert len(gangs) == 1, gangs
    return os.path.join(run_dir, gangs[0], name)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


@pytest.mark.parametrize("when", ["before_tell", "after_tell"])
def test_daemon_killed_while_restarting_in_place_restarts_once(env, when):
    d = env["daemon"]
    c = env["cluster"]
    job_id = "inplacefp" + when.replace("_", "")
    d.stop()
    d.env = dict(c.env, TRAINYARD_FAILPOINTS="executor.slurm.restart.%s=kill" % when)
    d.start()
    out = submit(env, job_id, masterType="n1-standard-16", workerType="n1-standard-16",
                 workerCount=1)
    wait_for(lambda: len(starts(out, "master-0")) == 1 and len(starts(out, "worker-0")) == 1,
             timeout=180, what="both trainers listening")
    first = starts(out, "worker-0")[0]
    proc = d.proc
    os.kill(first["pid"], signal.SIGKILL)
    # The daemon decides the restart in place (recorded: the spec holds attempt 1) and dies
    # before, or right after, it asks the driver.
    assert proc.wait(timeout=120) == -signal.SIGKILL, "the daemon did not die at " + when
    d.proc = None
    d.env = c.env
    work = os.path.join(env["shared"], "jobs", PROJECT, job_id, "worker-replica-0")
    with open(os.path.join(work, "spec.json")) as f:
        assert json.load(f).get("attempt") == 1
    control = gang_file(env, job_id, "control.log")
    asked = [line for line in read(control).splitlines() if line.startswith("restart ")]
    assert asked == ([] if when == "before_tell" else ["restart worker-replica-0 1"]), asked
    d.start()
    wait_for(lambda: len(starts(out, "worker-0")) == 2, timeout=120,
             what="the worker's trainer started again")
    # The same decision once more, as a daemon restarted again before it saw the driver act
    # would write it: the driver ignores it (without attempts it restarted the step again
    # once the worker ended).
    with open(control, "a") as f:
        f.write("restart worker-replica-0 1\n")
    with open(os.path.join(out, "release"), "w"):
        pass
    job = d.wait_state(job_id, ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
    assert job["state"] == "SUCCEEDED", job
    driver_out = gang_file(env, job_id, "driver.out")
    wait_for(lambda: 'ignoring "restart worker-replica-0 1"' in read(driver_out), timeout=60,
             what="the driver ignoring the repeated decision")
    # Restarted once, counted once.
    assert read(driver_out).count("restarting worker-replica-0 in place") == 1, read(driver_out)
    assert len(starts(out, "worker-0")) == 2 and len(starts(out, "master-0")) == 1
    service = messages(d, job_id, "service")
    restarts = [m for m in service if "restarting it with the same identity" in m]
    assert len(restarts) == 1 and restarts[0].endswith("(restart 1 of 2)."), service
    worker_address = json.loads(first["TF_CONFIG"])["cluster"]["worker"][0]
    assert ("master reached %s: worker-0 attempt 1" % worker_address
            in messages(d, job_id, "master-replica-0"))
    assert len(slurm_jobs(c, job_id)) == 1, slurm_jobs(c, job_id)
    wait_for(lambda: not live_jobs(c), timeout=60, what="no Slurm job left")


def test_an_old_attempts_metrics_never_reach_the_new_attempts_file(env):
    """A tuning trial's replica restarted (in place here; a whole gang after a node failure
    takes the same path): each attempt has a metric file of its own. What an old attempt's
    trainer still writes (one left running on a node whose slurmd died) goes to its own file
    and is never read as the trial's measurement."""
    d = env["daemon"]
    out = submit(env, "metricfence", extra_args=["--metric"], hyperparameters={
        "goal": "MAXIMIZE", "hyperparameterMetricTag": "m", "maxTrials": 1,
        "params": [{"parameterName": "lr", "type": "DOUBLE", "minValue": 0.1, "maxValue": 1.0}]})
    wait_for(lambda: len(starts(out, "master-0")) == 1, timeout=180, what="attempt 0 reported")
    first = starts(out, "master-0")[0]
    os.kill(first["pid"], signal.SIGKILL)
    wait_for(lambda: len(starts(out, "master-0")) == 2, timeout=120,
             what="attempt 1 started in place and reported")
    again = starts(out, "master-0")[1]
    assert again["metric_file"] != first["metric_file"], (first, again)
    # Attempt 0's trainer, had it lived on, reports once more: to its own file only.
    tmp = first["metric_file"] + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps({"timestamp": 1.0, "trial": "1", "m": "100.0", "global_step": "2"})
                + "\n")
    os.replace(tmp, first["metric_file"])
    with open(os.path.join(out, "release"), "w"):
        pass
    job = d.wait_state("metricfence", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=180)
    assert job["state"] == "SUCCEEDED", job
    trials = job["trainingOutput"]["trials"]
    assert len(trials) == 1 and trials[0]["finalMetric"]["objectiveValue"] == 2.0, trials
