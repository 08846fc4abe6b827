"""End-to-end regression tests for the defects of issue 17 found from outside with hostile
requests: connections that locked the API out, bodies buffered before their limit, tuning bounds
of 0, host paths in packageUris/jobDir, world-readable data, and the edges (bodiless cancel,
multi-range downloads, region/pythonModule/pageSize checks). A real daemon on a free port."""

import http.client
import json
import os
import socket
import stat
import subprocess
import threading
import time
import urllib.parse

import pytest

from conftest import BIN, PROJECT, Daemon, build_sdist, job_body, make_package, upload_package, \
    wait_for

JOBS = "/v1/projects/%s/jobs" % PROJECT
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")

TRAINER = """
import sys, time
import hypertune
if "--sleep" in sys.argv:
    time.sleep(600)
for i in range(3):
    print("line", i, flush=True)
hypertune.HyperTune().report_hyperparameter_tuning_metric(
    hyperparameter_metric_tag="loss", metric_value=0.5, global_step=1)
"""


@pytest.fixture(scope="module")
def hdaemon(tmp_path_factory):
    data = tmp_path_factory.mktemp("hardening")
    d = Daemon(str(data / "data"))
    os.makedirs(d.data_dir)
    d.start()
    pkg = make_package(data / "pkg", TRAINER)
    d.package = upload_package(d, build_sdist(pkg), bucket="hard-bkt")
    yield d
    d.stop()


def host_port(d):
    u = urllib.parse.urlparse(d.url)
    return u.hostname, u.port


def with_token(d, data):
    """The request bytes with the daemon's token as an Authorization line (after the first)."""
    if not d.token:
        return data
    line, sep, rest = data.partition(b"\r\n")
    return line + sep + b"Authorization: Bearer " + d.token.encode() + b"\r\n" + rest


def auth_headers(d):
    return {"Authorization": "Bearer " + d.token} if d.token else {}


def raw_request(d, data, timeout=30):
    """Sends raw bytes on a new connection; returns (status, headers text, body bytes)."""
    data = with_token(d, data)
    s = socket.create_connection(host_port(d), timeout=timeout)
    try:
        s.sendall(data)
        return read_response(s)
    finally:
        s.close()


def read_response(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        assert chunk, "connection closed before a response: %r" % buf
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    headers = head.decode("latin-1")
    length = 0
    for line in headers.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.lower() == "content-length":
            length = int(v.strip())
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(headers.split(" ")[1]), headers, body


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# ---- 1. Followers and idle connections do not lock the API out ------------------------------

def test_api_answers_while_followers_and_idle_connections_are_held(hdaemon):
    d = hdaemon
    status, body = d.request("POST", JOBS, job_body("followed_1", d.package))
    assert status == 200, body
    host, port = host_port(d)
    held = []
    # 64 keep-alive connections that made a request and stay open, 16 that never send a byte.
    for _ in range(64):
        c = http.client.HTTPConnection(host, port, timeout=30)
        c.request("GET", "/healthz")
        r = c.getresponse()
        r.read()
        assert r.status == 200
        held.append(c)
    for _ in range(16):
        held.append(socket.create_connection((host, port), timeout=30))
    # 20 log followers polling as fast as they can on their own keep-alive connections.
    stop = threading.Event()
    polls, errors = [0], []

    def follow():
        c = http.client.HTTPConnection(host, port, timeout=30)
        after = 0
        try:
            while not stop.is_set():
                c.request("GET", "%s/followed_1/logs?afterInsertId=%d" % (JOBS, after),
                          headers=auth_headers(d))
                r = c.getresponse()
                data = json.loads(r.read())
                assert r.status == 200, data
                after = int(data["nextAfterInsertId"])
                polls[0] += 1
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(repr(e))
        finally:
            c.close()

    followers = [threading.Thread(target=follow) for _ in range(20)]
    for t in followers:
        t.start()
    try:
        wait_for(lambda: polls[0] >= 40, timeout=60, what="followers polling")
        # Plain API clients are answered (each on a new connection, 30 s allowed).
        for i in range(5):
            c = http.client.HTTPConnection(host, port, timeout=30)
            c.request("GET", "%s/followed_1" % JOBS, headers=auth_headers(d))
            r = c.getresponse()
            assert r.status == 200
            assert json.loads(r.read())["jobId"] == "followed_1"
            c.close()
        status, body = d.request("POST", JOBS, job_body("followed_2", d.package))
        assert status == 200, body
    finally:
        stop.set()
        for t in followers:
            t.join(timeout=60)
        for c in held:
            c.close()
    assert not errors, errors
    # The held keep-alive connections did not cost a thread each.
    with open("/proc/%d/status" % d.proc.pid) as f:
        threads = int([line for line in f if line.startswith("Threads:")][0].split()[1])
    assert threads < 100, threads


# ---- 2. Huge bodies are refused before they are read ----------------------------------------

def test_huge_bodies_are_refused_without_growing_the_daemon(hdaemon):
    d = hdaemon
    before = rss_kib(d.proc.pid)
    size = 256 << 20
    results = []

    def post():
        s = socket.create_connection(host_port(d), timeout=60)
        head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % (JOBS, size)).encode()
        s.sendall(head)

        def send_body():
            chunk = b"x" * (1 << 20)
            try:
                for _ in range(size // len(chunk)):
                    s.sendall(chunk)
            except OSError:
                pass  # the daemon stopped reading: expected

        sender = threading.Thread(target=send_body)
        sender.start()
        try:
            results.append(read_response(s))
        finally:
            sender.join(timeout=60)
            s.close()

    posts = [threading.Thread(target=post) for _ in range(4)]
    for t in posts:
        t.start()
    for t in posts:
        t.join(timeout=120)
    assert len(results) == 4
    for status, headers, body in results:
        assert status == 413, (status, body)
        err = json.loads(body)["error"]
        assert err["code"] == 413
        assert err["message"] == "Request payload size exceeds the limit: 8388608 bytes."
        assert "connection: close" in headers.lower()
    grown = rss_kib(d.proc.pid) - before
    assert grown < 64 * 1024, "daemon RSS grew by %d KiB" % grown
    assert d.get_status("/healthz") == 200


def test_chunked_body_over_the_limit_is_refused(hdaemon):
    chunk = b"x" * (1 << 20)
    data = b"POST " + JOBS.encode() + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    data += (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 9 + b"0\r\n\r\n"
    status, _, body = raw_request(hdaemon, data)
    assert status == 413, body
    assert json.loads(body)["error"]["code"] == 413


def test_storage_uploads_take_bodies_over_the_api_limit(hdaemon):
    d = hdaemon
    data = os.urandom(9 << 20)
    status, body = d.request(
        "POST", "/upload/storage/v1/b/hard-bkt/o?uploadType=media&name=big.bin", raw=data)
    assert status == 200, body
    assert body["size"] == str(len(data))


# ---- 3. Tuning bounds of 0 ------------------------------------------------------------------

def test_zero_bound_job_runs_and_can_be_recreated_from_its_get_output(hdaemon):
    d = hdaemon
    hp = {"goal": "MINIMIZE", "hyperparameterMetricTag": "loss", "maxTrials": 1,
          "params": [{"parameterName": "dropout", "type": "DOUBLE", "minValue": 0,
                      "maxValue": 0.5},
                     {"parameterName": "shift", "type": "INTEGER", "minValue": -2,
                      "maxValue": 0}]}
    status, body = d.request("POST", JOBS, job_body("zero_bound_1", d.package, hyperparameters=hp))
    assert status == 200, body
    job = d.wait_state("zero_bound_1", TERMINAL, timeout=240)
    assert job["state"] == "SUCCEEDED", job
    trial = job["trainingOutput"]["trials"][0]
    assert 0 <= float(trial["hyperparameters"]["dropout"]) <= 0.5
    assert -2 <= int(trial["hyperparameters"]["shift"]) <= 0
    # The job's own GET output, under a new id, is a valid create.
    again = {"jobId": "zero_bound_2", "trainingInput": job["trainingInput"],
             "labels": job.get("labels", {}), "etag": job["etag"]}
    status, body = d.request("POST", JOBS, again)
    assert status == 200, body
    assert body["trainingInput"] == job["trainingInput"]


# ---- 4. packageUris and jobDir never reach host files ---------------------------------------

def test_host_package_paths_are_refused_alike_whether_they_exist_or_not(hdaemon):
    d = hdaemon
    messages = []
    for i, uri in enumerate(["/dev/zero", "/etc/shadow", "/no/such/file", "file:///etc/passwd"]):
        status, body = d.request("POST", JOBS, job_body("hostpkg_%d" % i, uri))
        assert status == 400, body
        v = body["error"]["details"][0]["fieldViolations"]
        assert v[0]["field"] == "trainingInput.packageUris[0]", v
        messages.append(v[0]["description"].replace(uri, "URI"))
    assert len(set(messages)) == 1, messages  # nothing tells which host file exists
    # Nothing was queued: no launcher spins on /dev/zero.
    assert d.request("GET", JOBS + "/hostpkg_0")[0] == 404


def test_job_dir_outside_the_store_is_refused_and_nothing_is_created(hdaemon, tmp_path):
    d = hdaemon
    # Outside the job-dir roots (setting job_dir_roots): refused, nothing made or probed.
    outside = "/etc/trainyard-made-by-daemon-%d" % os.getpid()
    status, body = d.request("POST", JOBS, job_body("hostdir_1", d.package, jobDir=outside))
    assert status == 400, body
    assert "job-dir roots" in json.dumps(body)
    assert not os.path.exists(outside)
    # Below a root (tmp), but the create is refused for another reason: nothing is made.
    target = tmp_path / "made-by-daemon"
    status, body = d.request("POST", JOBS, job_body("hostdir_3", "/etc/shadow", jobDir=str(target)))
    assert status == 400, body
    assert not target.exists()
    # A gs:// job dir of a create refused for another reason leaves nothing behind either.
    status, body = d.request("POST", JOBS, job_body("hostdir_2", "/etc/shadow",
                                                    jobDir="gs://hard-bkt/never/made"))
    assert status == 400, body
    assert not os.path.exists(os.path.join(d.data_dir, "buckets", "hard-bkt", "never"))


# ---- 5. Private data, loud non-loopback listening -------------------------------------------

def test_data_dir_files_are_private(hdaemon):
    d = hdaemon
    status, body = d.request("POST", JOBS, job_body("private_1", d.package))
    assert status == 200, body
    d.wait_state("private_1", TERMINAL, timeout=240)

    def check(path):
        mode = os.lstat(path).st_mode
        assert not mode & (stat.S_IRWXG | stat.S_IRWXO), "%s is %o" % (path, mode & 0o777)

    # Everything the daemon made in the data dir (the test made the dir and daemon.log)...
    top = [n for n in os.listdir(d.data_dir) if n != "daemon.log"]
    assert {"trainyard.db", "jobs", "buckets", "envs"} <= set(top), top
    for name in top:
        check(os.path.join(d.data_dir, name))
    # ...and every file of the job store, the work dirs and the buckets (pip writes its own
    # modes inside envs/, which is 0700).
    checked = 0
    for sub in ("jobs", "buckets"):
        for root, dirs, files in os.walk(os.path.join(d.data_dir, sub)):
            for name in dirs + files:
                if not os.path.islink(os.path.join(root, name)):
                    check(os.path.join(root, name))
                    checked += 1
    assert checked > 5


def test_non_loopback_listen_is_refused_without_authentication(tmp_path):
    """Authentication off means anyone who reaches the port acts as an administrator: the daemon
    refuses a non-loopback address instead of warning (docs/security.md)."""
    data = tmp_path / "data"
    data.mkdir()
    p = subprocess.run([os.path.join(BIN, "trainyardd"), "--listen", "0.0.0.0:0", "--data-dir",
                        str(data)], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, TRAINYARD_AUTH="false"))
    assert p.returncode != 0
    assert not p.stdout.startswith("listening on "), p.stdout
    assert "refusing to listen on 0.0.0.0" in p.stderr and "authentication off" in p.stderr, \
        p.stderr


# ---- 6. Edges -------------------------------------------------------------------------------

def test_rest_cancel_without_a_body_succeeds(hdaemon):
    d = hdaemon
    status, body = d.request("POST", JOBS, job_body("cancel_nobody_1", d.package,
                                                    args=["--sleep"]))
    assert status == 200, body
    # As the README's curl -X POST sends it: no Content-Length, no body.
    status, headers, body = raw_request(
        d, ("POST %s/cancel_nobody_1:cancel HTTP/1.1\r\nHost: x\r\n\r\n" % JOBS).encode())
    assert status == 200, body
    assert json.loads(body) == {}


def test_multi_range_download_answers_the_whole_object(hdaemon):
    d = hdaemon
    status, body = d.request(
        "POST", "/upload/storage/v1/b/hard-bkt/o?uploadType=media&name=ranges.txt",
        raw=b"0123456789")
    assert status == 200, body
    status, headers, data = raw_request(
        d, b"GET /download/storage/v1/b/hard-bkt/o/ranges.txt?alt=media HTTP/1.1\r\nHost: x\r\n"
           b"Range: bytes=0-1,4-5\r\n\r\n")
    assert status == 200, headers
    assert data == b"0123456789"
    assert "content-range" not in headers.lower()
    status, headers, data = raw_request(
        d, b"GET /download/storage/v1/b/hard-bkt/o/ranges.txt?alt=media HTTP/1.1\r\nHost: x\r\n"
           b"Range: bytes=2-4\r\n\r\n")
    assert status == 206 and data == b"234"


def test_create_checks_region_and_python_module(hdaemon):
    d = hdaemon
    status, body = d.request("POST", JOBS, job_body("badregion_1", d.package, region="moon-1"))
    assert status == 400, body
    assert body["error"]["details"][0]["fieldViolations"][0]["field"] == "trainingInput.region"
    status, body = d.request("POST", JOBS, job_body("badmodule_1", d.package,
                                                    module="trainer/task.py"))
    assert status == 400, body
    fields = [v["field"] for v in body["error"]["details"][0]["fieldViolations"]]
    assert fields == ["trainingInput.pythonModule"], body


def test_list_page_size(hdaemon):
    d = hdaemon
    status, body = d.request("GET", JOBS + "?pageSize=-1")
    assert status == 400, body
    assert body["error"]["details"][0]["fieldViolations"][0]["field"] == "pageSize"
    status, body = d.request("GET", JOBS + "?pageSize=0")  # proto3: unset, the default
    assert status == 200, body


def test_bad_json_errors_name_the_field(hdaemon):
    d = hdaemon
    deep = '{"jobId":"deep_1","trainingInput":{"args":' + "[" * 100 + "]" * 100 + "}}"
    status, body = d.request("POST", JOBS, raw=deep.encode())
    assert status == 400, body
    field = body["error"]["details"][0]["fieldViolations"][0]["field"]
    assert field.startswith("trainingInput.args[0]"), body
    bad = (b'{"jobId":"utf_1","trainingInput":{"region":"us-central1",'
           b'"pythonModule":"tr\xff\xfeiner"}}')
    status, body = d.request("POST", JOBS, raw=bad)
    assert status == 400, body
    assert body["error"]["details"][0]["fieldViolations"][0]["field"] == \
        "trainingInput.pythonModule"


def test_refused_body_answer_reaches_a_client_that_asked_to_close(hdaemon):
    # urllib sends "Connection: close" and the whole body before it reads the answer.
    status, body = hdaemon.request("POST", JOBS, raw=b'{"jobId": "big", "x": "' +
                                   b"a" * (9 << 20) + b'"}')
    assert status == 413, body
    assert body["error"]["message"] == "Request payload size exceeds the limit: 8388608 bytes."
