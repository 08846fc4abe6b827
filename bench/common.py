"""Shared pieces of the Trainyard benchmarks: a trainyardd child process with its own data dir,
a keep-alive JSON client, trainer packages built in memory, process CPU/RSS readings and the
statistics and tables every benchmark prints.

Run the benchmarks with Debian's /usr/bin/python3 (the pyenv python3 on PATH works too: only
the standard library is used)."""

import http.client
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("TRAINYARD_BIN_DIR", os.path.join(REPO, "build", "bin"))
PYTHON = "/usr/bin/python3"
PROJECT = "bench"
BUCKET = "bench-bkt"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def trainer_env():
    """The environment for running a trainer directly: this one without PYTHONUNBUFFERED, so
    the trainer has Python's default buffering, as Trainyard's launcher (and AI Platform) give
    it."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def binary(name):
    path = os.path.join(BIN, name)
    if not os.access(path, os.X_OK):
        sys.exit("%s not found: build it (ninja -C build %s) or set TRAINYARD_BIN_DIR" % (
            path, name))
    return path


# ------------------------------------------------------------------------------------------
# Statistics and output


def percentile(values, p):
    """The p-th percentile (0..100) with linear interpolation between closest ranks."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def median(values):
    return percentile(values, 50)


def table(title, header, rows):
    """Prints a plain-text table: a title line, the header, a rule, then the rows."""
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(r):
        return "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))

    print()
    print(title)
    print(line(cells[0]))
    print("  ".join("-" * w for w in widths))
    for r in cells[1:]:
        print(line(r))
    sys.stdout.flush()


def verdict(ok):
    return "MET" if ok else "NOT MET"


def ms(seconds):
    return "%.1f" % (seconds * 1000.0)


def machine_description():
    cores = os.cpu_count()
    mem_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    distro = ""
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    distro = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "%d cores, %.1f GiB, %s, kernel %s; load average %s" % (
        cores, mem_kb / 1048576.0, distro, os.uname().release, load_average())


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# ------------------------------------------------------------------------------------------
# /proc readings


def proc_cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def self_cpu_seconds():
    t = os.times()
    return t.user + t.system


# ------------------------------------------------------------------------------------------
# The daemon


class Daemon:
    """trainyardd on a free loopback port with its own data dir (removed on stop unless keep).
    With auth=True authentication is on (the daemon's default) and client() acts as the
    bootstrap administrator (the token the daemon writes to <data_dir>/admin-token)."""

    def __init__(self, data_dir=None, extra_args=(), keep=False, env=None, auth=False):
        self.own_dir = data_dir is None
        # Authentication off unless asked for (bench_auth.py measures it on).
        self.auth = auth
        self.env = dict(os.environ, TRAINYARD_AUTH="true" if auth else "false")
        self.env.update(env or {})
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="trainyard-bench-")
        self.extra_args = list(extra_args)
        self.keep = keep
        self.proc = None
        self.host = "127.0.0.1"
        self.port = 0

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        os.makedirs(self.data_dir, exist_ok=True)
        self.log = open(os.path.join(self.data_dir, "daemon.log"), "ab")
        self.proc = subprocess.Popen(
            [binary("trainyardd"), "--listen", "127.0.0.1:%d" % self.port, "--data-dir",
             self.data_dir, "--log-level", "warning"] + self.extra_args,
            stdout=subprocess.PIPE, stderr=self.log, start_new_session=True, env=self.env)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("listening on "):
            self.proc.kill()
            sys.exit("trainyardd did not start: %r (see %s/daemon.log)" % (line, self.data_dir))
        self.url = line.split()[-1]
        self.port = int(self.url.rsplit(":", 1)[1])
        deadline = time.time() + 60
        c = self.client()
        while time.time() < deadline:
            try:
                if c.request("GET", "/readyz")[0] == 200:
                    break
            except OSError:
                c = self.client()
            time.sleep(0.02)
        else:
            sys.exit("trainyardd is not ready after 60 s")
        c.close()
        return self

    @property
    def pid(self):
        return self.proc.pid

    def client(self, fresh=False):
        return Client(self.host, self.port, fresh, token=self.admin_token())

    def admin_token(self):
        """The bootstrap administrator's token with auth on, else None."""
        if not self.auth:
            return None
        with open(os.path.join(self.data_dir, "admin-token")) as f:
            return f.read().strip()

    def restart(self):
        """Stops the daemon (SIGTERM) and starts it again on the same data dir; returns the
        seconds until /readyz answered 200."""
        self.terminate()
        self.log.close()
        t = time.perf_counter()
        self.start()
        return time.perf_counter() - t

    def stop(self):
        self.terminate()
        if self.own_dir and not self.keep:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def terminate(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cpu_seconds(self):
        return proc_cpu_seconds(self.pid)

    def rss_kb(self):
        return proc_status_kb(self.pid, "VmRSS")

    def hwm_kb(self):
        return proc_status_kb(self.pid, "VmHWM")


class Client:
    """One keep-alive HTTP/1.1 connection (or, with fresh=True, a new connection for every
    request); request() returns (status, parsed JSON or text)."""

    def __init__(self, host, port, fresh=False, token=None):
        self.host, self.port = host, port
        self.fresh = fresh
        self.token = token  # sent as `Authorization: Bearer` when set
        self.conn = http.client.HTTPConnection(host, port, timeout=60)

    def close(self):
        self.conn.close()

    def raw(self, method, path, body=None, content_type="application/json"):
        headers = {"Content-Type": content_type} if body is not None else {}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if self.fresh:
            headers["Connection"] = "close"
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=body, headers=headers)
                r = self.conn.getresponse()
                data = r.read()
                if self.fresh:
                    self.conn.close()
                return r.status, data
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # The server closed an idle keep-alive connection: reconnect once.
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
                if attempt:
                    raise

    def request(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        status, text = self.raw(method, path, data)
        try:
            return status, (json.loads(text) if text.strip() else None)
        except ValueError:
            return status, text.decode(errors="replace")

    def check(self, method, path, body=None, expect=200):
        status, out = self.request(method, path, body)
        if status != expect:
            raise RuntimeError("%s %s -> %d: %s" % (method, path, status, out))
        return out

    # --- Trainyard helpers -----------------------------------------------------------------
    def set_admission(self, paused):
        self.check("PUT", "/v1/admin/admission", {"paused": paused})

    def create_bucket(self, name=BUCKET):
        status, out = self.request("POST", "/storage/v1/b?project=%s" % PROJECT, {"name": name})
        if status not in (200, 409):
            raise RuntimeError("cannot create bucket %s: %d %s" % (name, status, out))

    def upload(self, name, data, bucket=BUCKET):
        status, out = self.raw(
            "POST", "/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (
                bucket, urllib.parse.quote(name, safe="")), data, "application/octet-stream")
        if status != 200:
            raise RuntimeError("upload of %s failed: %d %s" % (name, status, out))
        return "gs://%s/%s" % (bucket, name)

    def job(self, job_id, project=PROJECT):
        return self.check("GET", "/v1/projects/%s/jobs/%s" % (project, job_id))

    def create(self, job_id, package_uri, project=PROJECT, args=()):
        return self.check("POST", "/v1/projects/%s/jobs" % project,
                          job_body(job_id, package_uri, args))

    def logs(self, job_id, after=0, page_size=None, project=PROJECT):
        q = "afterInsertId=%d" % after
        if page_size:
            q += "&pageSize=%d" % page_size
        return self.check("GET", "/v1/projects/%s/jobs/%s/logs?%s" % (project, job_id, q))

    def wait_state(self, job_id, states, timeout=300, interval=0.01):
        deadline = time.time() + timeout
        while time.time() < deadline:
            j = self.job(job_id)
            if j.get("state") in states:
                return j
            time.sleep(interval)
        raise RuntimeError("job %s not in %s after %d s" % (job_id, states, timeout))


def job_body(job_id, package_uri, args=()):
    ti = {"packageUris": [package_uri], "pythonModule": "trainer.task", "region": "us-central1"}
    if args:
        ti["args"] = list(args)
    return {"jobId": job_id, "trainingInput": ti}


# ------------------------------------------------------------------------------------------
# Trainer packages


SETUP_PY = ("from setuptools import setup\n"
            "setup(name='trainer', version='0.1', packages=['trainer'])\n")


def package_files(task_source):
    return {"trainer/__init__.py": "", "trainer/task.py": task_source, "setup.py": SETUP_PY}


def write_package(root, task_source):
    """Writes the package source tree under root (for running it directly); returns root."""
    for rel, text in package_files(task_source).items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return root


def sdist_bytes(task_source, version="0.1"):
    """A source distribution (trainer-VERSION.tar.gz) of the package, built in memory: the
    layout `setup.py sdist` makes, which pip installs offline with --no-build-isolation."""
    files = package_files(task_source)
    files["setup.py"] = files["setup.py"].replace("'0.1'", repr(version))
    files["PKG-INFO"] = "Metadata-Version: 2.1\nName: trainer\nVersion: %s\n" % version
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo("trainer-%s/%s" % (version, rel))
            info.size = len(data)
            info.mtime = 1700000000
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def stage_package(client, task_source, name):
    """Uploads the package to the bench bucket; returns its gs:// URI."""
    client.create_bucket()
    return client.upload("packages/%s/trainer-0.1.tar.gz" % name, sdist_bytes(task_source))


def run_job(client, job_id, uri, states=("SUCCEEDED",), timeout=300):
    client.create(job_id, uri)
    j = client.wait_state(job_id, set(states) | {"FAILED", "CANCELLED"}, timeout=timeout)
    if j["state"] not in states:
        raise RuntimeError("job %s ended %s: %s" % (job_id, j["state"], j.get("errorMessage")))
    return j


def route_seconds(client, method, route):
    """(count, sum of seconds) of the daemon's latency histogram for one route (/metrics)."""
    status, text = client.raw("GET", "/metrics")
    count = total = 0.0
    key = '{method="%s",route="%s"}' % (method, route)
    for line in text.decode().splitlines():
        if line.startswith("trainyard_api_request_duration_seconds_count" + key):
            count = float(line.split()[-1])
        elif line.startswith("trainyard_api_request_duration_seconds_sum" + key):
            total = float(line.split()[-1])
    return count, total


def loadgen_path():
    """The C++ load generator (bench/CMakeLists.txt target ty_loadgen), or None."""
    for d in [os.environ.get("TRAINYARD_BENCH_BIN_DIR", ""), BIN,
              os.path.join(REPO, "build-bench", "bin")]:
        if d and os.access(os.path.join(d, "ty_loadgen"), os.X_OK):
            return os.path.join(d, "ty_loadgen")
    return None


def loadgen(port, method, path, body="", connections=8, duration=10.0, requests=0, start=0,
            close=False, progress=0, headers=(), rate=0, mix=None):
    """Runs ty_loadgen and returns its JSON report (see bench/loadgen.cc); with progress=N the
    report also has "progress": [(completed, seconds)] every N requests. rate=R runs it open
    loop (R requests or mix entries due per second); mix=FILE sends the mix in FILE instead of
    method/path/body."""
    exe = loadgen_path()
    if exe is None:
        sys.exit("ty_loadgen is not built: run bench/run_all.sh, or "
                 "cmake -S bench -B build-bench -G Ninja && ninja -C build-bench ty_loadgen")
    cmd = [exe, "--port", str(port), "--connections", str(connections), "--duration",
           str(duration), "--start", str(start), "--method", method, "--path", path]
    if body:
        cmd += ["--body", body]
    if requests:
        cmd += ["--requests", str(requests)]
    if close:
        cmd.append("--close")
    if progress:
        cmd += ["--progress", str(progress)]
    for h in headers:
        cmd += ["--header", h]
    if rate:
        cmd += ["--rate", str(rate)]
    if mix:
        cmd += ["--mix", mix]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0 and not out.stdout:
        sys.exit("ty_loadgen failed: %s" % out.stderr)
    report = json.loads(out.stdout)
    if progress:
        report["progress"] = [(int(a), float(b)) for a, b in
                              (line.split() for line in out.stderr.splitlines() if line.strip())]
    return report


def count_rows(data_dir, sql, params=()):
    """Runs a counting query on the daemon's SQLite file, read-only (WAL allows it while the
    daemon writes)."""
    import sqlite3
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(data_dir, "trainyard.db"), uri=True)
    try:
        return db.execute(sql, params).fetchone()
    finally:
        db.close()


def parse_rfc3339(text):
    """Seconds since the epoch from a UTC timestamp like 2026-11-21T10:00:00.123456Z."""
    import datetime
    base, _, frac = text.rstrip("Z").partition(".")
    t = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    return t + (float("0." + frac) if frac else 0.0)
