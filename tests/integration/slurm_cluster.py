"""A private Slurm cluster for end-to-end tests: scripts/slurm-dev-cluster.sh started in a
temporary directory (munged, slurmctld, slurmd virtual nodes n1..n3 with two fake GPUs each,
partitions `low` (default, preemptible) and `high`). docs/slurm.md describes the cluster.

Use in a test module (run with Debian's /usr/bin/python3 -m pytest):

    from slurm_cluster import slurm_cluster  # noqa: F401 (the fixture)

    def test_x(slurm_cluster):
        job = slurm_cluster.sbatch("--wrap", "hostname")
        slurm_cluster.wait_state(job, "COMPLETED")

or build a SlurmCluster(directory) yourself and call start()/stop(). Every command a test runs
against the cluster needs `cluster.env` (it carries SLURM_CONF); pass it to trainyardd too.

stop() cancels every job, stops the daemons and ASSERTS that no process of the cluster (daemon,
slurmstepd, or job process that escaped its step) is left and that no Slurm job was stuck."""

import contextlib
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "slurm-dev-cluster.sh")
MARKER = "TRAINYARD_SLURM_CLUSTER"
TERMINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                   "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")


def slurm_installed():
    return all(shutil.which(b, path=os.environ.get("PATH", "") + ":/usr/sbin")
               for b in ("slurmctld", "slurmd", "munged", "sbatch"))


requires_slurm = pytest.mark.skipif(
    not slurm_installed(), reason="Slurm is not installed (scripts/install-deps.sh installs it)")


def _environ(pid):
    try:
        with open("/proc/%s/environ" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _slurm_cgroups():
    return set(glob.glob("/sys/fs/cgroup/*/slurm*"))


class SlurmCluster:
    """One dev cluster in `directory` (created by start, removed by stop).

    Attributes after start(): dir, conf (slurm.conf path), env (os.environ plus SLURM_CONF; use
    it for every Slurm command and for trainyardd), nodes (["n1", "n2", "n3"]), port_base
    (slurmctld's port; node nK listens on port_base + K), start_seconds."""

    def __init__(self, directory, nodes=3, settings=None):
        self.dir = os.path.abspath(directory)
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.nodes = ["n%d" % i for i in range(1, nodes + 1)]
        # TRAINYARD_SLURM_* settings read by the script's start (see its header), e.g.
        # {"TRAINYARD_SLURM_MIN_JOB_AGE": "2"} or {"TRAINYARD_SLURM_PREEMPT_MODE": "CANCEL",
        # "TRAINYARD_SLURM_GRACE_TIME": "10"}.
        self.settings = dict(settings or {})
        self.settings["TRAINYARD_SLURM_NODES"] = str(nodes)
        # {"TRAINYARD_SLURM_ACCOUNTING": "1"}: slurmdbd with a private mariadbd, associations
        # enforced; sacct() then asks slurmdbd (plain sacct) instead of the jobcomp file.
        self.accounting = self.settings.get("TRAINYARD_SLURM_ACCOUNTING") == "1"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_"))
               and k != MARKER}
        env["SLURM_CONF"] = self.conf
        path = env.get("PATH", "")
        for d in ("/usr/bin", "/bin"):
            if d not in path.split(":"):
                path = path + ":" + d if path else d
        env["PATH"] = path
        self.env = env
        self.port_base = None
        self.start_seconds = None
        self.started = False
        self._cgroups_before = _slurm_cgroups()
        self.cgroups = []  # the cluster's own groups (TRAINYARD_SLURM_CGROUP=1), from start
        # Directories made for this cluster's users (start_daemon_on_cluster's shared dirs):
        # removed by stop(), once no job can write to them and every test has read them.
        self.temp_dirs = []

    # --- the script ------------------------------------------------------------------------
    def script(self, *args, check=True, timeout=120):
        env = dict(self.env)
        env.update(self.settings)
        p = subprocess.run([SCRIPT] + list(args) + ([self.dir] if args[0] in (
            "start", "stop", "status", "stop-ctld", "start-ctld") else []), env=env,
            capture_output=True, text=True,
            timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError("slurm-dev-cluster.sh %s failed (%d):\n%s\n%s" % (
                " ".join(args), p.returncode, p.stdout, p.stderr))
        return p

    def _script_node(self, verb, node, reason=None):
        env_extra = {"TRAINYARD_SLURM_REASON": reason} if reason else {}
        env = dict(self.env, **self.settings, **env_extra)
        p = subprocess.run([SCRIPT, verb, node, self.dir], env=env, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, "%s %s failed: %s %s" % (verb, node, p.stdout, p.stderr)
        return p

    def start(self):
        t0 = time.monotonic()
        self.started = True  # so that stop() cleans up after a failed start too
        p = self.script("start")
        self.start_seconds = time.monotonic() - t0
        assert "export SLURM_CONF=%s" % self.conf in p.stdout, p.stdout
        with open(os.path.join(self.dir, "port-base")) as f:
            self.port_base = int(f.read())
        self.start_output = p.stdout
        groups = os.path.join(self.dir, "cgroup-groups")
        if os.path.exists(groups):
            with open(groups) as f:
                self.cgroups = [line.strip() for line in f if line.strip()]
        return self

    def stop(self):
        """Stops the cluster and asserts that nothing of it is left (also when it was stopped
        already: then only the checks run)."""
        if self.started:
            self.started = False
            p = self.script("stop", check=False, timeout=180)
            self.stop_output = p.stdout + p.stderr
            for d in self.temp_dirs:
                shutil.rmtree(d, ignore_errors=True)
            self.temp_dirs = []
            assert p.returncode == 0, "stop failed:\n" + self.stop_output
            assert "still listed" not in self.stop_output, (
                "Slurm jobs did not end when cancelled:\n" + self.stop_output)
        left = self.leftover_pids()
        assert not left, "processes of the cluster left after stop: %s" % self.describe(left)
        assert not os.path.exists(self.dir), "stop left %s" % self.dir
        new_cgroups = _slurm_cgroups() - self._cgroups_before
        assert not new_cgroups, "stop left cgroups: %s" % sorted(new_cgroups)
        left_groups = [g for g in self.cgroups if os.path.exists(g)]
        assert not left_groups, "stop left the cluster's cgroups: %s" % left_groups

    def job_cgroups(self):
        """The groups Slurm made for jobs in this cluster's own cgroups (TRAINYARD_SLURM_CGROUP=1):
        .../slurm_<node>/uid_U/job_J and everything beneath; [] when none is left."""
        out = []
        for g in self.cgroups:
            for d, subdirs, _ in os.walk(g):
                out += [os.path.join(d, s) for s in subdirs if s.startswith("job_")]
        return out

    def job_pids(self):
        """Pids of processes running inside this cluster's jobs (batch scripts and tasks)."""
        conf = ("SLURM_CONF=%s" % self.conf).encode()
        return [p for p in self.leftover_pids()
                if any(e.startswith(b"SLURM_JOB_ID=") for e in _environ(p)) and conf in _environ(p)]

    def leftover_pids(self):
        """Pids of this cluster's processes: daemons and slurmstepd (the marker is in their
        environment) and job processes (SLURM_JOB_ID set, this cluster's SLURM_CONF)."""
        marker = ("%s=%s" % (MARKER, self.dir)).encode()
        conf = ("SLURM_CONF=%s" % self.conf).encode()
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == os.getpid():
                continue
            env = _environ(d)
            if marker in env or (conf in env and any(e.startswith(b"SLURM_JOB_ID=")
                                                     for e in env)):
                pids.append(int(d))
        return pids

    def describe(self, pids):
        out = []
        for pid in pids:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    out.append("%d:%s" % (pid, f.read().replace(b"\0", b" ").decode().strip()))
            except OSError:
                out.append("%d:(gone)" % pid)
        return ", ".join(out)

    def daemon_pids(self):
        """{"munged": pid, "slurmctld": pid, "slurmd-n1": pid, ...} from the pid files."""
        files = {"munged": os.path.join(self.dir, "munge", "munged.pid"),
                 "slurmctld": os.path.join(self.dir, "slurmctld.pid")}
        for n in self.nodes:
            files["slurmd-" + n] = os.path.join(self.dir, "slurmd-%s.pid" % n)
        out = {}
        for name, path in files.items():
            try:
                with open(path) as f:
                    out[name] = int(f.read().strip())
            except (OSError, ValueError):
                pass
        return out

    # --- Slurm commands --------------------------------------------------------------------
    def run(self, *args, check=True, timeout=60, input=None, cwd=None):
        """Runs a Slurm client command (sbatch, squeue, scontrol, scancel, srun, sinfo, sacct,
        sdiag, ...) against this cluster; returns the CompletedProcess (text)."""
        p = subprocess.run(list(args), env=self.env, capture_output=True, text=True,
                           timeout=timeout, input=input, cwd=cwd)
        if check and p.returncode != 0:
            raise AssertionError("%s failed (%d):\nstdout:\n%s\nstderr:\n%s" % (
                " ".join(args), p.returncode, p.stdout, p.stderr))
        return p

    def sbatch(self, *args, script=None, cwd=None):
        """sbatch --parsable ARGS [with `script` text on stdin]; returns the job id (str; for a
        hetjob the leader's id)."""
        p = self.run("sbatch", "--parsable", *args, input=script, cwd=cwd or self.dir)
        return p.stdout.strip().split(";")[0]

    def squeue(self, *args):
        return self.run("squeue", *args).stdout

    def scontrol(self, *args):
        return self.run("scontrol", *args).stdout

    def scancel(self, *args):
        return self.run("scancel", *args)

    def job_info(self, job_id):
        """`scontrol show job -o` as a list of {key: value} dicts (one per hetjob component)."""
        out = []
        for line in self.run("scontrol", "show", "job", "-o", str(job_id)).stdout.splitlines():
            if line.strip():
                out.append(dict(re.findall(r"(\S+?)=(\S*)", line)))
        return out

    def job_states(self, job_id):
        """The state of the job, or of each hetjob component, from `squeue -t all` (finished
        jobs stay listed for MinJobAge, 300 s by default)."""
        out = self.run("squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T",
                       check=False).stdout.split()
        return out

    def job_state(self, job_id):
        states = self.job_states(job_id)
        return states[0] if states else None

    def wait_state(self, job_id, states, timeout=60):
        """Waits until every component of the job is in one of `states`; returns the list."""
        states = {states} if isinstance(states, str) else set(states)
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.job_states(job_id)
            if last and all(s in states for s in last):
                return last
            if last and all(s in TERMINAL_STATES for s in last) and not states & set(last):
                break
            time.sleep(0.05)
        raise AssertionError("job %s: wanted %s, got %s\n%s" % (
            job_id, sorted(states), last, self.run("scontrol", "show", "job", str(job_id),
                                                   check=False).stdout))

    def wait_gone(self, job_id, timeout=60):
        """Waits until the job has no active (pending, running, completing) component."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.run("squeue", "-h", "-j", str(job_id), check=False).stdout.strip():
                return
            time.sleep(0.05)
        raise AssertionError("job %s still active: %s" % (job_id, self.squeue()))

    def sacct(self, job_id, fields="JobID,JobName,State,ExitCode", *args):
        """Rows of sacct for a finished job: plain `sacct` (slurmdbd) on a cluster started with
        accounting, else `sacct -c` (the jobcomp/filetxt log)."""
        p = self.run("sacct", *([] if self.accounting else ["-c"]), "-n", "-P", "-j",
                     str(job_id), "-o", fields, *args)
        return [line.split("|") for line in p.stdout.splitlines() if line.strip()]

    def sacctmgr(self, *args):
        """`sacctmgr -i ARGS` (accounting clusters only): add or remove accounts, users, QOS."""
        return self.run("sacctmgr", "-i", *args).stdout

    # --- nodes -----------------------------------------------------------------------------
    def node_states(self):
        """{"n1": "idle", ...} from sinfo (a node in two partitions is listed once)."""
        out = {}
        for line in self.run("sinfo", "-h", "-N", "-o", "%N %T").stdout.splitlines():
            name, state = line.split()
            out[name] = state.lower()
        return out

    def wait_idle(self, nodes=None, timeout=60):
        """Waits until the given nodes (default: all) are idle with no job anywhere."""
        nodes = list(nodes or self.nodes)
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.node_states()
            if all(last.get(n) == "idle" for n in nodes):
                return last
            time.sleep(0.1)
        raise AssertionError("nodes %s not idle: %s" % (nodes, last))

    def node_down(self, node, reason="test"):
        """The node fails: its jobs end NODE_FAIL. With ReturnToService=2 it returns to idle as
        soon as its slurmd registers again (almost at once), like a rebooted machine."""
        self._script_node("down", node, reason)

    def node_drain(self, node, reason="test"):
        """No new jobs on the node; running ones continue."""
        self._script_node("drain", node, reason)

    def node_resume(self, node):
        self._script_node("resume", node)

    def kill_slurmd(self, node):
        """SIGKILLs the node's slurmd: a realistic failure, detected after SlurmdTimeout."""
        self._script_node("kill-node", node)

    def start_slurmd(self, node):
        self._script_node("start-node", node)

    def stop_slurmctld(self):
        """Stops slurmctld (a controller outage: clients cannot connect); nodes keep running."""
        self.script("stop-ctld")

    def start_slurmctld(self):
        """Starts slurmctld again with its saved state; returns once it answers."""
        self.script("start-ctld")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


@contextlib.contextmanager
def teardown_checks(request):
    """Runs a module fixture's teardown checks (stopping a daemon or a cluster, asserting that
    nothing is left). After a failed test of the module, a failing check is printed and not
    raised: what it finds left is most likely that failure's doing, and an error raised there
    (with -x, at the session's end) makes pytest end with a traceback of its own, without the
    failure's report. Without a failure it is raised as usual."""
    try:
        yield
    except Exception:
        failed = getattr(request.module, "failed_reports", [])
        if not failed:
            raise
        sys.stderr.write("\n%s: teardown after %d failed test(s) (first: %s) also failed:\n%s"
                         % (request.module.__name__, len(failed), failed[0].nodeid,
                            traceback.format_exc()))


def cluster_fixture(prefix, settings=None, skip=None, name=None):
    """A module-scoped fixture of a started dev cluster (SlurmCluster with `settings`, a dict
    or a function returning one), stopped and checked for leftovers after the module's last
    test. Skipped when Slurm is not installed, or when `skip()` returns a reason."""
    @pytest.fixture(scope="module", name=name)
    def cluster(request):
        if not slurm_installed():
            pytest.skip("Slurm is not installed (scripts/install-deps.sh installs it)")
        why = skip() if skip else None
        if why:
            pytest.skip(why)
        base = tempfile.mkdtemp(prefix=prefix)
        c = SlurmCluster(os.path.join(base, "cluster"),
                         settings=settings() if callable(settings) else settings)
        try:
            c.start()
            yield c
        finally:
            try:
                with teardown_checks(request):
                    c.stop()
            finally:
                shutil.rmtree(base, ignore_errors=True)
    return cluster


def cgroup_v1():
    """Whether this host has a writable cgroup v1 memory hierarchy (TRAINYARD_SLURM_CGROUP=1)."""
    return os.access("/sys/fs/cgroup/memory/cgroup.procs", os.W_OK)


# A started 3-node dev cluster shared by the test module.
slurm_cluster = cluster_fixture("ty-slurm-", name="slurm_cluster")
# Like slurm_cluster, with Slurm's task/cgroup and proctrack/cgroup on cgroup v1
# (TRAINYARD_SLURM_CGROUP=1): a step's memory is a cgroup limit. Skipped where the host has no
# writable cgroup v1 memory hierarchy.
slurm_cgroup_cluster = cluster_fixture(
    "ty-slurm-cg-", settings={"TRAINYARD_SLURM_CGROUP": "1"}, name="slurm_cgroup_cluster",
    skip=lambda: None if cgroup_v1() else
    "no writable cgroup v1 memory hierarchy at /sys/fs/cgroup/memory")


def slurm_config(memory_scale="0.01", cancel_grace="10s", replica_restarts=2, extra=""):
    """The daemon's config template (for start_daemon_on_cluster: {shared} is the shared
    directory) the Slurm test modules share: a small machine type fits a 4-CPU, 2000 MB
    virtual node, Slurm is asked every second. `extra`: more lines of the slurm section,
    indented by two spaces (a literal brace doubled)."""
    return ("executor: slurm\ncancel_grace: %s\n" % cancel_grace +
            ("replica_restarts: %d\n" % replica_restarts if replica_restarts is not None
             else "") +
            "slurm:\n  shared_dir: {shared}\n  cpu_scale: 0.25\n  memory_scale: %s\n"
            "  poll_interval: 1s\n" % memory_scale + extra)


def daemon_fixture(config, trainer, prefix, cluster="slurm_cluster", live=None):
    """A module-scoped fixture `env`: a trainyardd on the module's cluster fixture (by name)
    with `config` and a package of `trainer` uploaded (start_daemon_on_cluster's dict).
    Stopped after the module's last test, which must leave no Slurm job (`live(cluster)`,
    live_jobs by default)."""
    @pytest.fixture(scope="module", name="env")
    def env(request, tmp_path_factory):
        c = request.getfixturevalue(cluster)
        root = tmp_path_factory.mktemp(prefix.strip("-"))
        e = start_daemon_on_cluster(c, root, config, trainer, prefix + "shared-")
        yield e
        left = live or live_jobs
        with teardown_checks(request):
            e["daemon"].stop()
            assert not left(c), "Slurm jobs left behind: %s" % left(c)
    return env


def start_daemon_on_cluster(cluster, root, config, trainer, shared_prefix):
    """A started trainyardd on `cluster` whose config is `config` (a template with {shared},
    the job work dirs' shared directory, made here), with a package of `trainer` (its
    trainer/task.py) uploaded. Returns {"daemon", "uri", "shared", "root", "cluster"}; the
    caller stops the daemon. The shared directory outlives the daemon, so tests may read it
    afterwards; the cluster's stop() removes it."""
    from conftest import Daemon, build_sdist, make_package, upload_package
    shared = tempfile.mkdtemp(prefix=shared_prefix)
    cluster.temp_dirs.append(shared)  # removed when the cluster stops
    data = str(root / "data")
    os.makedirs(data)
    cfg = str(root / "config.yaml")
    with open(cfg, "w") as f:
        f.write(config.format(shared=shared))
    d = Daemon(data, extra_args=["--config", cfg], env=cluster.env)
    d.start()
    uri = upload_package(d, build_sdist(make_package(root / "pkg", trainer)))
    return {"daemon": d, "uri": uri, "shared": shared, "root": root, "cluster": cluster}


def live_jobs(cluster):
    """Trainyard's Slurm jobs still in squeue's default listing (pending or running): rows
    "id|state|name"."""
    out = cluster.run("squeue", "-h", "-o", "%i|%T|%j").stdout
    return [line for line in out.splitlines() if "|ty-" in line]


def slurm_jobs(cluster, job_id):
    """Every Slurm job (live or ended within MinJobAge) of a Trainyard job: [id, state, name]."""
    out = cluster.run("squeue", "-h", "-t", "all", "-o", "%i|%T|%j").stdout
    rows = [line.split("|") for line in out.splitlines() if line.strip()]
    return [r for r in rows if r[2].startswith("ty-") and ("-%s-" % job_id) in r[2]]


def messages(d, job_id, task=None):
    """The messages of a job's stored log lines, of one task (e.g. "service") or all."""
    return [e["jsonPayload"]["message"] for e in d.logs(job_id)
            if task is None or e["resource"]["labels"].get("task_name") == task]


def starts(out, name="master-0"):
    """What the test trainer of `name` saw at each of its starts (one JSON line per start in
    <out>/<name>.jsonl)."""
    path = os.path.join(out, name + ".jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def release(out):
    """Lets a test trainer held on <out>/release go on."""
    open(os.path.join(out, "release"), "w").close()
