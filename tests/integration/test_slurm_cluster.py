"""The Slurm development cluster (scripts/slurm-dev-cluster.sh) does what the Slurm executor's
tests rely on: three idle nodes, multi-task jobs, per-step exclusive fake GPUs, heterogeneous
jobs, `scancel -s TERM` reaching a step's handler without the KillWait cap, node failure ending a
job NODE_FAIL, idempotent start/stop, and a stop that leaves no process or job behind.

Jobs write what they saw to files in a shared directory (all virtual nodes are this machine);
nothing relies on srun's forwarded output. One cluster serves the module (about 1-2 s to
start); the last test stops it and checks for leftovers, and the fixture checks again."""

import os
import tempfile
import time

import pytest

from conftest import wait_for
from slurm_cluster import SlurmCluster, requires_slurm, slurm_cluster  # noqa: F401

pytestmark = requires_slurm


@pytest.fixture(scope="module")
def shared():
    with tempfile.TemporaryDirectory(prefix="ty-slurm-shared-") as d:
        yield d


def read(path):
    with open(path) as f:
        return f.read()


def wait_file(path, text=None, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path) and (text is None or text in read(path)):
            return read(path)
        time.sleep(0.05)
    raise AssertionError("%s never %s" % (path, "contained %r" % text if text else "appeared"))


def test_start_gives_idle_nodes_with_fake_gpus(slurm_cluster):
    c = slurm_cluster
    assert c.node_states() == {"n1": "idle", "n2": "idle", "n3": "idle"}
    nodes = c.run("sinfo", "-h", "-N", "-p", "low", "-o", "%N %c %m %G").stdout.split("\n")
    assert sorted(n for n in nodes if n) == ["n%d 4 2000 gpu:fake:2" % i for i in (1, 2, 3)]
    parts = c.run("sinfo", "-h", "-o", "%P %D").stdout.split()
    assert parts == ["low*", "3", "high", "3"]
    assert set(c.daemon_pids()) == {"munged", "slurmctld", "slurmd-n1", "slurmd-n2",
                                    "slurmd-n3"}
    # start on a running cluster says so and changes nothing
    pids = c.daemon_pids()
    again = c.script("start")
    assert "already running" in again.stdout
    assert c.daemon_pids() == pids


def test_plain_three_task_job(slurm_cluster, shared):
    c = slurm_cluster
    out = os.path.join(shared, "plain")
    os.makedirs(out)
    job = c.sbatch("--ntasks=3", "--cpus-per-task=1", "-o", os.path.join(out, "batch.out"),
                   "--wrap", "srun bash -c 'echo $SLURM_NTASKS > %s/rank-$SLURM_PROCID'" % out)
    c.wait_state(job, "COMPLETED", timeout=30)
    assert sorted(os.listdir(out)) == ["batch.out", "rank-0", "rank-1", "rank-2"]
    assert {read(os.path.join(out, "rank-%d" % r)).strip() for r in range(3)} == {"3"}
    assert c.sacct(job, "JobID,State,ExitCode") == [[job, "COMPLETED", "0:0"]]


def test_exact_steps_get_distinct_gpus(slurm_cluster, shared):
    c = slurm_cluster
    out = os.path.join(shared, "gpus")
    os.makedirs(out)
    step = ("srun -n1 -N1 --exact --cpus-per-task=1 --gpus=fake:1 bash -c "
            "'echo $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES > %s/step-$SLURM_STEP_ID'" % out)
    job = c.sbatch("--ntasks=2", "--nodes=1", "--cpus-per-task=1", "--gpus-per-task=fake:1",
                   "-o", "/dev/null", script="#!/bin/bash\n%s &\n%s &\nwait\n" % (step, step))
    c.wait_state(job, "COMPLETED", timeout=30)
    seen = sorted(read(os.path.join(out, f)).split()[1] for f in os.listdir(out))
    nodes = {read(os.path.join(out, f)).split()[0] for f in os.listdir(out)}
    assert seen == ["0", "1"], seen  # one fake GPU each, not both, not none
    assert len(nodes) == 1


def test_three_component_hetjob_starts(slurm_cluster, shared):
    c = slurm_cluster
    out = os.path.join(shared, "het")
    os.makedirs(out)
    job = c.sbatch("-n1", ":", "-n1", "--cpus-per-task=2", ":", "-n1", "-o", "/dev/null",
                   "--wrap", "env | grep ^SLURM_JOB_NODELIST_HET_GROUP_ | sort > %s/nodes; "
                   "sleep 30" % out)
    states = c.wait_state(job, "RUNNING", timeout=30)
    assert states == ["RUNNING"] * 3
    lines = wait_file(os.path.join(out, "nodes"), "GROUP_2").split()
    assert [l.split("=")[0] for l in lines] == ["SLURM_JOB_NODELIST_HET_GROUP_%d" % i
                                                for i in range(3)]
    assert sorted(l.split("=")[1] for l in lines) == ["n1", "n2", "n3"]  # one node each
    c.scancel(job)
    c.wait_gone(job)
    c.wait_idle()


def test_scancel_term_reaches_step_handler_past_killwait(slurm_cluster, shared):
    """Fact 2 of the design: `scancel -s TERM <job>` signals the steps only and never escalates,
    so a handler that needs longer than KillWait (5 s) finishes and the job ends COMPLETED."""
    c = slurm_cluster
    log = os.path.join(shared, "term.log")
    task = ("trap 'echo term >> %s; sleep 7; echo done >> %s; exit 0' TERM; "
            "echo ready >> %s; while :; do sleep 0.1; done" % (log, log, log))
    job = c.sbatch("-n1", "-o", "/dev/null",
                   script="#!/bin/bash\nsrun -n1 bash -c \"%s\"\n" % task.replace('"', '\\"'))
    wait_file(log, "ready")
    t0 = time.monotonic()
    c.scancel("-s", "TERM", job)
    wait_file(log, "term", timeout=10)
    c.wait_state(job, "COMPLETED", timeout=30)
    took = time.monotonic() - t0
    assert read(log).split() == ["ready", "term", "done"]
    assert took >= 7, took  # the handler outlived KillWait=5 and was not killed


def test_node_down_fails_its_job(slurm_cluster, shared):
    c = slurm_cluster
    job = c.sbatch("-n1", "-w", "n2", "--no-requeue", "-o", "/dev/null", "--wrap", "sleep 60")
    c.wait_state(job, "RUNNING", timeout=30)
    c.node_down("n2", reason="ty-test")
    c.wait_state(job, "NODE_FAIL", timeout=30)
    # ReturnToService=2: the node is back as soon as its slurmd registers again
    c.wait_idle(timeout=60)
    # drain keeps a node out until resume
    c.node_drain("n3")
    assert c.node_states()["n3"] == "drained"
    c.node_resume("n3")
    c.wait_idle(timeout=30)


def test_high_partition_preempts_low(slurm_cluster):
    """PreemptMode=REQUEUE on `low` with --no-requeue (what Trainyard always passes) ends the
    preempted job PREEMPTED with PreemptTime set (fact 4)."""
    c = slurm_cluster
    low = c.sbatch("-p", "low", "--no-requeue", "-N3", "-n12", "-o", "/dev/null",
                   "--wrap", "sleep 60")  # every CPU of the cluster
    c.wait_state(low, "RUNNING", timeout=30)
    high = c.sbatch("-p", "high", "-n1", "-o", "/dev/null", "--wrap", "sleep 60")
    c.wait_state(low, "PREEMPTED", timeout=30)
    c.wait_state(high, "RUNNING", timeout=30)
    preempt_time = c.run("squeue", "-h", "-t", "all", "-j", low, "-O", "PreemptTime").stdout
    assert preempt_time.strip() not in ("", "N/A"), preempt_time
    c.scancel(high)
    c.wait_gone(high)
    c.wait_idle()


def test_stop_leaves_nothing(slurm_cluster, shared):
    """Runs last: stops the module's cluster with jobs still running (one ignores SIGTERM) and
    checks no process, job or directory of it is left; stop on a stopped cluster is fine."""
    c = slurm_cluster
    stubborn = c.sbatch("-n2", "-o", "/dev/null", "--wrap",
                        "srun bash -c 'trap \"\" TERM; while :; do sleep 0.2; done'")
    c.sbatch("-n1", "-o", "/dev/null", "--wrap", "sleep 60")
    c.wait_state(stubborn, "RUNNING", timeout=30)
    # stop has slurmstepd, batch scripts and tasks to end: 1 + 2 tasks + 1 batch script
    wait_for(lambda: len(c.job_pids()) >= 4, timeout=30, what="the jobs' processes")
    t0 = time.monotonic()
    c.stop()  # asserts: no process with the cluster's marker or its jobs' env, dir removed
    assert time.monotonic() - t0 < 20
    assert "cancelling jobs" in c.stop_output
    again = c.script("stop")
    assert "nothing to stop" in again.stdout


def test_cgroup_clusters_confine_memory_side_by_side(tmp_path):
    """TRAINYARD_SLURM_CGROUP=1: task/cgroup limits a step's memory (a task past its --mem is
    OOM-killed and srun says Out Of Memory), and two such clusters on one host, both with nodes
    n1..n3 and both with a job 1 on n1, keep apart (each in its own cgroup, seen by Slurm through
    a cgroup namespace). Stop removes each cluster's groups, also with a job still running."""
    if not os.path.exists("/sys/fs/cgroup/memory/cgroup.procs"):
        pytest.skip("no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory")
    a = SlurmCluster(str(tmp_path / "a"), settings={"TRAINYARD_SLURM_CGROUP": "1"})
    b = SlurmCluster(str(tmp_path / "b"), settings={"TRAINYARD_SLURM_CGROUP": "1"})
    try:
        a.start()
        b.start()
        assert a.cgroups and b.cgroups and not set(a.cgroups) & set(b.cgroups)
        assert all(os.path.isdir(g) for g in a.cgroups + b.cgroups)
        ready = str(tmp_path / "a-ready")
        job_a = a.sbatch("-n1", "-w", "n1", "--mem=64M", "-o", "/dev/null", "--wrap",
                         "srun bash -c 'cat /proc/self/cgroup > %s.tmp; mv %s.tmp %s; "
                         "while :; do sleep 0.2; done'" % (ready, ready, ready))
        assert job_a == "1"
        text = wait_file(ready)
        memory = [line.split(":", 2)[2] for line in text.splitlines()
                  if line.split(":")[1] == "memory"]
        # Relative to the cluster's own group (the namespace's root).
        assert memory == ["/slurm_n1/uid_%d/job_1/step_0/task_0" % os.getuid()], text
        limits = [os.path.join(g, "slurm_n1", "uid_%d" % os.getuid(), "job_1",
                               "memory.limit_in_bytes") for g in a.cgroups if "/memory/" in g]
        assert len(limits) == 1 and int(read(limits[0])) == 64 << 20
        # B's job 1 on its own n1 goes over its limit; A's job 1 is untouched.
        p = b.run("srun", "-w", "n1", "-n1", "--mem=64M", "/usr/bin/python3", "-c",
                  "b = b'x' * (256 << 20)", check=False, timeout=120)
        assert p.returncode != 0 and "Out Of Memory" in p.stderr, p.stderr
        assert a.job_state(job_a) == "RUNNING"
        assert os.path.exists(limits[0])
        wait_for(lambda: not b.job_cgroups(), timeout=30, what="B's job groups removed")
        # start-node follows the mode the cluster was started in, without the variable.
        b.kill_slurmd("n2")
        del b.settings["TRAINYARD_SLURM_CGROUP"]
        b.start_slurmd("n2")
        assert b.run("srun", "-w", "n2", "-n1", "true", timeout=60).returncode == 0
        pid = int(read(os.path.join(b.dir, "slurmd-n2.pid")))
        assert "trainyard-slurm-" in read("/proc/%d/cgroup" % pid), read("/proc/%d/cgroup" % pid)
        b.stop()
        assert all(os.path.isdir(g) for g in a.cgroups)
        assert a.job_state(job_a) == "RUNNING"
        a.stop()  # with job 1 still running: asserts its groups are gone too
    finally:
        b.stop()
        a.stop()
