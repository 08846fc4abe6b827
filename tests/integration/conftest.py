"""Fixtures for end-to-end tests: a real trainyardd on a free port with its own data dir, the
real `trainyard` CLI, real trainer processes. Run with Debian's /usr/bin/python3 -m pytest."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TRAINYARD_BIN_DIR", os.path.join(REPO, "build", "bin"))
PROJECT = "itest"


def wait_for(predicate, timeout=60.0, interval=0.05, what="condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %.0fs waiting for %s (last: %r)" % (timeout, what, last))


class Daemon:
    """A trainyardd child process. start() waits until /readyz answers 200.

    Authentication is on (the daemon's default) unless auth=False: request() and cli() then act
    as the bootstrap administrator, whose token the first start writes to the data dir, so every
    suite exercises the authorizing wrapper. Suites about Google's clients without credentials
    turn it off explicitly. env: the daemon's environment (None: this process's)."""

    def __init__(self, data_dir, extra_args=(), env=None, auth=True):
        self.data_dir = data_dir
        self.extra_args = list(extra_args)
        self.env = env
        self.auth = auth
        self.token = None  # sent as `Authorization: Bearer` by request() and cli()
        self.proc = None
        self.url = None
        self.port = 0

    def start(self):
        listen = "127.0.0.1:%d" % self.port
        self.log = open(os.path.join(self.data_dir, "daemon.log"), "ab")
        env = dict(os.environ if self.env is None else self.env,
                   TRAINYARD_AUTH="true" if self.auth else "false")
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "trainyardd"), "--listen", listen, "--data-dir", self.data_dir,
             "--log-level", "info"] + self.extra_args,
            stdout=subprocess.PIPE, stderr=self.log, start_new_session=True, env=env)
        line = self.proc.stdout.readline().decode()
        assert line.startswith("listening on "), "daemon did not start: %r (see %s)" % (
            line, os.path.join(self.data_dir, "daemon.log"))
        self.url = line.split()[-1]
        self.port = int(self.url.rsplit(":", 1)[1])  # a restart reuses the port
        wait_for(lambda: self.get_status("/readyz") == 200, timeout=30, what="readyz")
        token_file = os.path.join(self.data_dir, "admin-token")
        if self.auth and self.token is None and os.path.exists(token_file):
            with open(token_file) as f:
                self.token = f.read().strip()  # the bootstrap administrator's
        return self

    def get_status(self, path):
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return None

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)
        self.proc = None

    # --- REST helpers -------------------------------------------------------------------
    def request(self, method, path, body=None, raw=None, token=None, headers=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        h = {"Content-Type": "application/json"}
        token = token if token is not None else self.token
        if token:
            h["Authorization"] = "Bearer " + token
        h.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                text = r.read().decode()
                try:
                    return r.status, (json.loads(text) if text.strip() else None)
                except ValueError:
                    return r.status, text  # /metrics, /v1/help
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, text

    def job(self, job_id, project=PROJECT):
        status, body = self.request("GET", "/v1/projects/%s/jobs/%s" % (project, job_id))
        assert status == 200, body
        return body

    def wait_state(self, job_id, states, timeout=120, project=PROJECT):
        states = {states} if isinstance(states, str) else set(states)
        seen = {}  # the last reply, so that a timeout says where the job stood

        def reached():
            seen["job"] = self.job(job_id, project)
            return seen["job"] if seen["job"].get("state") in states else None
        try:
            return wait_for(reached, timeout=timeout, what="job %s in %s" % (job_id, states))
        except AssertionError as e:
            raise AssertionError("%s; the job last read: %s" % (e, seen.get("job"))) from None

    def logs(self, job_id, project=PROJECT):
        entries, after = [], 0
        while True:
            status, body = self.request(
                "GET", "/v1/projects/%s/jobs/%s/logs?afterInsertId=%d" % (project, job_id, after))
            assert status == 200, body
            if not body["entries"]:
                return entries
            entries += body["entries"]
            after = int(body["nextAfterInsertId"])

    def cli(self, *args, check=True, timeout=300, env_extra=None):
        env = dict(os.environ, TRAINYARD_ENDPOINT=self.url, TRAINYARD_PROJECT=PROJECT)
        if self.token:
            env["TRAINYARD_TOKEN"] = self.token
        env.update(env_extra or {})
        p = subprocess.run([os.path.join(BIN, "trainyard")] + list(args), env=env,
                           capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError("trainyard %s failed (%d):\nstdout:\n%s\nstderr:\n%s" % (
                " ".join(args), p.returncode, p.stdout, p.stderr))
        return p


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(str(tmp_path / "data"))
    os.makedirs(d.data_dir)
    d.start()
    yield d
    d.stop()


def make_package(root, task_code, name="trainer", install_requires=None):
    """Writes a trainer package (root/name/__init__.py, task.py) and a setup.py beside it.
    Returns the package directory (for --package-path)."""
    pkg = os.path.join(str(root), name)
    os.makedirs(pkg, exist_ok=True)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    with open(os.path.join(pkg, "task.py"), "w") as f:
        f.write(textwrap.dedent(task_code))
    with open(os.path.join(str(root), "setup.py"), "w") as f:
        f.write("from setuptools import setup\nsetup(name=%r, version='0.1', packages=[%r], "
                "install_requires=%r)\n" % (name, name, install_requires or []))
    return pkg


def build_sdist(pkg_dir):
    """Builds the sdist of a package made by make_package and returns its path."""
    parent = os.path.dirname(pkg_dir)
    subprocess.run(["/usr/bin/python3", "setup.py", "-q", "sdist", "--dist-dir", "dist"],
                   cwd=parent, check=True, capture_output=True)
    dist = os.path.join(parent, "dist")
    return os.path.join(dist, sorted(os.listdir(dist))[-1])


def upload_package(daemon, sdist, bucket="itest-bkt"):
    """Puts an sdist into a bucket through the storage API; returns its gs:// URI."""
    daemon.request("POST", "/storage/v1/b?project=%s" % PROJECT, {"name": bucket})
    name = "packages/%d/%s" % (time.time_ns(), os.path.basename(sdist))
    with open(sdist, "rb") as f:
        status, body = daemon.request(
            "POST", "/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (
                bucket, urllib.request.quote(name, safe="")), raw=f.read())
    assert status == 200, body
    return "gs://%s/%s" % (bucket, name)


def job_body(job_id, package_uri, args=(), module="trainer.task", **training):
    ti = {"packageUris": [package_uri], "pythonModule": module, "region": "us-central1",
          "args": list(args)}
    ti.update(training)
    return {"jobId": job_id, "trainingInput": ti}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps the reports of a module's failed tests on the module (`failed_reports`), so that a
    module fixture's teardown checks can tell they follow a failure (slurm_cluster.py,
    teardown_checks): with -x, an error raised by such a teardown ends pytest with a traceback
    of its own and the failure's report is never printed."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and report.when in ("setup", "call") and item.module is not None:
        item.module.__dict__.setdefault("failed_reports", []).append(report)
    if report.failed and report.when == "call":
        for daemon in _daemons_of(item):
            report.sections.append(("daemon log tail (%s)" % daemon.data_dir,
                                    _log_tail(os.path.join(daemon.data_dir, "daemon.log"))))


def _daemons_of(item):
    """The Daemons a test's fixtures hold (directly or in a fixture's dict)."""
    found = []
    for value in getattr(item, "funcargs", {}).values():
        for v in (value.values() if isinstance(value, dict) else [value]):
            if isinstance(v, Daemon) and v not in found:
                found.append(v)
    return found


def _log_tail(path, lines=120):
    """The last `lines` lines of a daemon's log, which a failure's report shows: a flake seen
    only in CI is then diagnosed from CI's output."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])
    except OSError as e:
        return "(cannot read %s: %s)" % (path, e)
