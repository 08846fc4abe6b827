"""`executor: slurm` while Slurm decides (issue 12): a gang Slurm keeps PENDING makes its job
QUEUED with Slurm's place (jobPosition) and pending reason (waitReason), then PREPARING and
RUNNING once Slurm starts it; Slurm's verdict on a job that left squeue while the daemon was
down (MinJobAge=2 here) comes from sacct -c (jobcomp/filetxt); a trainer that exited 0 after a
SIGTERM Trainyard did not send is lost, not a success; per-project accounts and the
slurm-partition label. A real trainyardd on a real Slurm dev cluster, real trainers held by
files the test creates (no sleeps decide an outcome).

Run with Debian's /usr/bin/python3 -m pytest tests/integration/test_slurm_queue.py."""

import json
import os
import signal

from conftest import PROJECT, wait_for
from slurm_cluster import live_jobs as live, messages
from slurm_cluster import cluster_fixture, daemon_fixture, requires_slurm, slurm_config
from slurm_cluster import release, starts

pytestmark = requires_slurm

# One n1-standard-4 replica is 1 CPU and 150 MB here; the nodes have 4 CPUs each.
CONFIG = slurm_config(extra="  project_accounts: {{%s: acct-%s}}\n  label_partitions: [high]\n"
                      % (PROJECT, PROJECT))

# Appends what it saw at each start to <out>/<name>.jsonl, then runs until <out>/release exists
# (or --lines lines when not --hold); exits 0 on SIGTERM after saying so.
TRAINER = """
import json, os, signal, sys, time
args = dict(a.split("=", 1) if "=" in a else (a, "1") for a in sys.argv[1:])
tf = json.loads(os.environ["TF_CONFIG"])
name = "%s-%d" % (tf["task"]["type"], tf["task"]["index"])
path = os.path.join(args["--out"], name + ".jsonl")
attempt = sum(1 for _ in open(path)) if os.path.exists(path) else 0
with open(path, "a") as f:
    f.write(json.dumps({"attempt": attempt}) + "\\n")
print("start %d of %s" % (attempt, name), flush=True)
def on_term(signum, frame):
    print("TERM received by %s in attempt %d" % (name, attempt), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
release = os.path.join(args["--out"], "release")
while "--hold" in args and not os.path.exists(release):
    time.sleep(0.1)
print("done %s in attempt %d" % (name, attempt), flush=True)
"""


cluster = cluster_fixture("ty-slurmq-", name="cluster",
                          settings={"TRAINYARD_SLURM_MIN_JOB_AGE": "2"})


env = daemon_fixture(CONFIG, TRAINER, "ty-slurmq-", cluster="cluster", live=live)


def slurm_jobs(cluster, job_id):
    """Slurm jobs of a Trainyard job still in squeue: [(id, state, partition, account)]."""
    out = cluster.run("squeue", "-h", "-t", "all", "-o", "%i|%T|%P|%a|%j").stdout
    rows = [line.split("|") for line in out.splitlines() if line.strip()]
    return [r[:4] for r in rows if r[4].startswith("ty-") and ("-%s-" % job_id) in r[4]]


def submit(env, job_id, args=(), labels=None, **training):
    out = os.path.join(str(env["root"]), "out-" + job_id)
    os.makedirs(out, exist_ok=True)
    ti = {"packageUris": [env["uri"]], "pythonModule": "trainer.task", "region": "us-central1",
          "args": list(args) + ["--out=" + out]}
    ti.update(training)
    body = {"jobId": job_id, "trainingInput": ti}
    if labels:
        body["labels"] = labels
    status, reply = env["daemon"].request("POST", "/v1/projects/%s/jobs" % PROJECT, body)
    assert status == 200, reply
    return out


def history(d, job_id):
    status, body = d.request("GET", "/v1/projects/%s/jobs/%s/history" % (PROJECT, job_id))
    assert status == 200, body
    return [c["state"] for c in body["stateChanges"]]


def test_a_job_pending_in_slurm_is_queued_with_its_place_and_slurms_reason(env):
    d = env["daemon"]
    c = env["cluster"]
    # Every CPU of the partition taken, then a foreign job waiting first in line.
    blockers = [c.sbatch("--cpus-per-task=4", "--mem=100M", "--wrap", "sleep 600")
                for _ in range(3)]
    other = None
    outs = []
    try:
        for b in blockers:
            c.wait_state(b, "RUNNING", timeout=60)
        other = c.sbatch("--cpus-per-task=1", "--mem=50M", "--wrap", "true")
        c.wait_state(other, "PENDING", timeout=30)
        out_a = submit(env, "qa", ["--hold"])
        out_b = submit(env, "qb", ["--hold"])
        outs = [out_a, out_b]
        for job_id, place in (("qa", "2"), ("qb", "3")):
            wait_for(lambda: d.job(job_id).get("jobPosition") == place, timeout=60,
                     what="%s at place %s in Slurm's queue: %s" % (job_id, place, d.job(job_id)))
        a = d.job("qa")
        assert a["state"] == "QUEUED", a
        assert "startTime" not in a, a
        sid, _, partition, account = slurm_jobs(c, "qa")[0]
        # Per-project account (slurm.project_accounts), the default partition.
        assert (partition, account) == ("low", "acct-" + PROJECT)
        assert a["waitReason"].startswith(
            "Waiting in Slurm (job %s, partition low; 1 job ahead of it): " % sid), a
        # Slurm's reason is "None" until its scheduler has looked at the job.
        wait_for(lambda: "2 jobs ahead of it): jobs of higher priority are ahead of it "
                 "(Priority)." in d.job("qb").get("waitReason", ""), timeout=60,
                 what="qb's reason: %s" % d.job("qb"))
        # The list shows the same live fields.
        status, listed = d.request("GET", "/v1/projects/%s/jobs" % PROJECT)
        assert status == 200, listed
        rows = {j["jobId"]: j for j in listed["jobs"]}
        assert rows["qb"]["jobPosition"] == "3" and rows["qb"]["state"] == "QUEUED", rows["qb"]
        # The queue page: the partition's capacity, and the jobs Slurm keeps waiting as such.
        status, queue = d.request("GET", "/v1/projects/%s/jobs:queue" % PROJECT)
        assert status == 200, queue
        assert queue["node"]["scope"] == "cluster" and queue["gpus"] == [], queue
        assert int(queue["node"]["vcpus"]) > 0, queue
        waiting = {j["jobId"]: j for j in queue["admitted"] if j["state"] == "QUEUED"}
        assert waiting["qb"]["jobPosition"] == "3", waiting
        assert "jobs of higher priority" in waiting["qb"]["waitReason"], waiting
        printed = d.cli("jobs", "queue").stdout
        assert "Cluster capacity" in printed and "Waiting in the cluster's queue:" in printed, \
            printed
        assert "qb" in printed.split("Waiting in the cluster's queue:")[1], printed
        # Slurm starts them once the blockers go: PREPARING, then RUNNING; never QUEUED again.
        c.scancel(*(blockers + [other]))
        blockers = []
        for job_id in ("qa", "qb"):
            d.wait_state(job_id, ["RUNNING"], timeout=120)
        for out in (out_a, out_b):
            release(out)
        for job_id in ("qa", "qb"):
            job = d.wait_state(job_id, ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=120)
            assert job["state"] == "SUCCEEDED", job
            assert history(d, job_id) == ["QUEUED", "PREPARING", "RUNNING", "SUCCEEDED"]
            assert "Resources were allocated to the job." in messages(d, job_id, "service")
    finally:
        if blockers:
            c.scancel(*blockers)
        for out in outs:  # a failure here leaves no held trainer to the module's other tests
            release(out)


def test_the_partition_label_routes_a_job_and_only_to_allowed_partitions(env):
    d = env["daemon"]
    c = env["cluster"]
    out = submit(env, "tohigh", ["--hold"], labels={"slurm-partition": "high"})
    d.wait_state("tohigh", ["RUNNING"], timeout=120)
    assert slurm_jobs(c, "tohigh")[0][2] == "high", slurm_jobs(c, "tohigh")
    release(out)
    job = d.wait_state("tohigh", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=120)
    assert job["state"] == "SUCCEEDED", job
    submit(env, "tonowhere", labels={"slurm-partition": "gpu-secret"})
    job = d.wait_state("tonowhere", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=60)
    assert job["state"] == "FAILED", job
    assert "slurm-partition" in job["errorMessage"] and "slurm.label_partitions: high" in \
        job["errorMessage"], job


def kill_daemon(d):
    d.stop(sig=signal.SIGKILL)


def wait_left_squeue(c, job_id, timeout=120):
    """Until Slurm has purged the job (MinJobAge): `squeue -t all` no longer lists it."""
    wait_for(lambda: not c.run("squeue", "-h", "-t", "all", "-j", str(job_id),
                               check=False).stdout.strip(),
             timeout=timeout, what="Slurm job %s gone from squeue" % job_id)


def test_a_job_preempted_while_the_daemon_was_down_gets_slurms_verdict_from_sacct(env):
    d = env["daemon"]
    c = env["cluster"]
    out = submit(env, "preempted", ["--hold"])
    wait_for(lambda: "start 0 of master-0" in messages(d, "preempted", "master-replica-0"),
             timeout=120, what="the trainer running")
    first = slurm_jobs(c, "preempted")[0][0]
    kill_daemon(d)
    # A job of the high partition that needs every CPU preempts ours (PREEMPTED with
    # --no-requeue); its trainer exits 0 from the SIGTERM. Then the job leaves squeue.
    high = c.sbatch("-p", "high", "--ntasks=12", "--mem-per-cpu=50M", "--wrap", "true")
    wait_left_squeue(c, first)
    assert [r[2] for r in c.sacct(first, "JobID,JobName,State")] == ["PREEMPTED"]
    c.wait_gone(high, timeout=120)
    with open(os.path.join(env["shared"], "jobs", PROJECT, "preempted", "master-replica-0",
                           "exit.json")) as f:
        report = json.load(f)
    # Its SIGTERM was not Trainyard's (whether the trainer's exit then reads clean depends on
    # how Slurm's signals and the launcher's forwarded one meet its handler).
    assert report["stopRequested"] is True and report["stopUnrequested"] is True, report
    d.start()
    wait_for(lambda: len(starts(out)) == 2, timeout=180, what="the gang restarted")
    release(out)
    job = d.wait_state("preempted", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=120)
    assert job["state"] == "SUCCEEDED", job
    service = messages(d, "preempted", "service")
    assert any(m.startswith("Slurm job %s ended PREEMPTED" % first) and "sacct" in m
               for m in service), service
    assert any("was lost (Slurm ended its allocation (job %s PREEMPTED, from sacct))" % first in m
               for m in service), service
    lines = messages(d, "preempted", "master-replica-0")
    assert "TERM received by master-0 in attempt 0" in lines, lines
    assert "done master-0 in attempt 1" in lines, lines


def test_a_clean_exit_after_an_outside_sigterm_is_lost_when_slurm_has_no_verdict(env):
    d = env["daemon"]
    c = env["cluster"]
    out = submit(env, "outside", ["--hold"])
    wait_for(lambda: "start 0 of master-0" in messages(d, "outside", "master-replica-0"),
             timeout=120, what="the trainer running")
    first = slurm_jobs(c, "outside")[0][0]
    kill_daemon(d)
    # Someone stops the steps outside Trainyard; the trainer exits 0, and Slurm says COMPLETED.
    c.scancel("-s", "TERM", first)
    wait_left_squeue(c, first)
    # No verdict either: the accounting file has lost it.
    open(os.path.join(c.dir, "log", "jobcomp.txt"), "w").close()
    d.start()
    wait_for(lambda: len(starts(out)) == 2, timeout=180, what="the gang restarted")
    release(out)
    job = d.wait_state("outside", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=120)
    assert job["state"] == "SUCCEEDED", job
    service = messages(d, "outside", "service")
    assert any("its trainer was stopped by a SIGTERM that Trainyard did not send (Slurm job %s "
               "UNKNOWN" % first in m for m in service), service
    assert "Job completed successfully." in service
    wait_for(lambda: not live(c), timeout=60, what="no Slurm job left")
