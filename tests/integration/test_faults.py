"""Fault tests (issue 17): durability proved by killing things. Real daemon, real launchers and
trainers, SQLite; kill -9 from outside at random moments and, where the moment matters, at a
named failpoint (TRAINYARD_FAILPOINTS, docs/faults.md). What each test proves is in its
docstring and in docs/faults.md.

Not repeated here (already in the suite): a daemon killed after creates with a running job
(test_core.py), a follower through a restart (test_logs.py), a full disk (test_ops.py), the
cancel of a SIGTERM-ignoring trainer (test_core.py), kill -9 with Slurm (test_slurm_executor.py),
a trainer killed from outside (test_distributed.py)."""

import base64
import collections
import concurrent.futures
import hashlib
import http.client
import json
import os
import random
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import pytest

from conftest import PROJECT, Daemon, build_sdist, make_package, upload_package, wait_for

JOBS = "/v1/projects/%s/jobs" % PROJECT
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
BUCKET = "faults-bkt"

# argv: MODE TAG RECORD_DIR [N]. Every start of a trainer leaves RECORD_DIR/TAG.<pid> (how many
# times a replica was launched); TAG is in the argv of the trainer and of its children, so
# /proc finds every process of a job.
TRAINER = r"""
import os, signal, subprocess, sys, time
mode, tag, record = sys.argv[1], sys.argv[2], sys.argv[3]
n = float(sys.argv[4]) if len(sys.argv) > 4 else 0
with open(os.path.join(record, "%s.%d" % (tag, os.getpid())), "w") as f:
    f.write("started\n")
def children():
    # One child in the trainer's session, one that leaves it (setsid): both must die with it.
    code = "import time; time.sleep(1000)"
    subprocess.Popen([sys.executable, "-c", code, tag])
    subprocess.Popen([sys.executable, "-c", code, tag], start_new_session=True)
if mode == "quick":
    print("%s done" % tag, flush=True)
elif mode == "lines":  # N numbered lines, in bursts of 50, over a few seconds
    for i in range(int(n)):
        print("%s %06d" % (tag, i))
        if i % 50 == 49:
            sys.stdout.flush()
            time.sleep(0.012)
    sys.stdout.flush()
elif mode == "gated":  # "lines" in three blocks: before the 2nd and 3rd block and before the
    # exit, waits for RECORD/release-TAG-K (K = 1, 2, 3), so it prints while the test wants
    count = int(n)
    block = count // 3
    def hold(k):
        path, deadline = os.path.join(record, "release-%s-%d" % (tag, k)), time.time() + 300
        while not os.path.exists(path) and time.time() < deadline:
            time.sleep(0.02)
    for i in range(count):
        if i in (block, 2 * block):
            sys.stdout.flush()
            hold(1 if i == block else 2)
        print("%s %06d" % (tag, i))
        if i % 50 == 49:
            sys.stdout.flush()
            time.sleep(0.012)
    sys.stdout.flush()
    hold(3)
elif mode == "sleep":  # N seconds, then success
    print("%s sleeping" % tag, flush=True)
    time.sleep(n)
    print("%s done" % tag, flush=True)
elif mode == "family":  # children, then N seconds, then success
    children()
    print("%s started" % tag, flush=True)
    time.sleep(n)
    print("%s done" % tag, flush=True)
elif mode == "hold":  # children, then success once RECORD/release-TAG exists (at most N s)
    children()
    print("%s started" % tag, flush=True)
    release, deadline = os.path.join(record, "release-" + tag), time.time() + n
    while not os.path.exists(release) and time.time() < deadline:
        time.sleep(0.05)
    print("%s done" % tag, flush=True)
elif mode == "gang":  # success once N trainers of TAG have started (at most 300 s), as the
    # replicas of a distributed job wait for each other before any of them ends
    def started():
        return len([f for f in os.listdir(record) if f.rsplit(".", 1)[0] == tag])
    deadline = time.time() + 300
    while started() < n and time.time() < deadline:
        time.sleep(0.05)
    print("%s %d of %d started" % (tag, started(), n), flush=True)
    sys.exit(0 if started() >= n else 1)
elif mode == "stubborn":  # ignores SIGTERM, with children: only SIGKILL ends it
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    children()
    print("%s started" % tag, flush=True)
    time.sleep(n)
"""


# --- helpers ------------------------------------------------------------------------------

def cmdline_pids(needle):
    """Live (not zombie) pids whose command line contains needle."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if needle.encode() not in f.read():
                    continue
            with open("/proc/%s/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    continue
        except OSError:
            continue
        found.append(int(pid))
    return found


def cgroups_of(job_id):
    """The cgroup v1 groups of a job's replicas that still exist (src/scheduler/launch_plan.cc
    names them trainyard/<project>.<job>.<task>.<daemon tag>)."""
    left = []
    for controller in ("memory", "cpu"):
        base = os.path.join("/sys/fs/cgroup", controller, "trainyard")
        if os.path.isdir(base):
            left += [os.path.join(base, g) for g in os.listdir(base)
                     if g.startswith("%s.%s." % (PROJECT, job_id))]
    return left


def assert_nothing_left(d, job_ids):
    """No launcher of this data dir, no trainer of the jobs or child of one, no cgroup of the
    jobs."""
    daemon_pid = d.proc.pid if d.proc else -1

    def left():
        out = [("process", p) for p in cmdline_pids(d.data_dir) if p != daemon_pid]
        for j in job_ids:
            out += [("process", p) for p in cmdline_pids(tag_of(d, j))]
            out += [("cgroup", g) for g in cgroups_of(j)]
        return out

    wait_for(lambda: not left(), timeout=20, what="no launcher, trainer or cgroup left")


def starts(d, job_id):
    """How many times the trainer of this job was started."""
    tag = tag_of(d, job_id)
    return len([f for f in os.listdir(d.record) if f.rsplit(".", 1)[0] == tag])


def kill9(d):
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(timeout=30)
    d.proc = None


def died_at_failpoint(d, timeout=60):
    """The daemon killed itself at its armed failpoint (SIGKILL, as kill -9)."""
    d.proc.wait(timeout=timeout)
    assert d.proc.returncode == -signal.SIGKILL, d.proc.returncode
    d.proc = None


def start_with(d, failpoints=None, extra_env=None):
    env = dict(os.environ)
    env.pop("TRAINYARD_FAILPOINTS", None)
    if failpoints:
        env["TRAINYARD_FAILPOINTS"] = failpoints
    env.update(extra_env or {})
    d.env = env
    return d.start()


def tag_of(d, job_id):
    """The trainer's tag for a job: unique to this test run, so /proc matches nothing else."""
    return "%s-%s" % (job_id, d.token_tag)


def create(d, job_id, mode, n=0, **training):
    body = {"jobId": job_id, "trainingInput": dict({
        "packageUris": [d.uri], "pythonModule": "trainer.task", "region": "us-central1",
        "args": [mode, tag_of(d, job_id), d.record, str(n)]}, **training)}
    return d.request("POST", JOBS, body)


def finish(d, job_id, timeout=120):
    return d.wait_state(job_id, TERMINAL, timeout=timeout)


def list_ids(d):
    ids, token = [], ""
    while True:
        status, body = d.request("GET", JOBS + "?pageSize=500" +
                                 ("&pageToken=" + token if token else ""))
        assert status == 200, body
        ids += [j["jobId"] for j in (body or {}).get("jobs", [])]
        token = (body or {}).get("nextPageToken", "")
        if not token:
            return ids


def logging_messages(d, job_id):
    """Every message of the job through the Cloud Logging entries:list subset, page by page."""
    out, token = [], ""
    while True:
        req = {"resourceNames": ["projects/" + PROJECT], "pageSize": 1000,
               "filter": 'resource.labels.job_id="%s"' % job_id}
        if token:
            req["pageToken"] = token
        status, body = d.request("POST", "/v2/entries:list", req)
        assert status == 200, body
        out += [e.get("textPayload", e.get("jsonPayload", {}).get("message"))
                for e in (body or {}).get("entries", [])]
        token = (body or {}).get("nextPageToken", "")
        if not token:
            return out


def assert_no_line_twice(entries):
    """No line of a replica is stored twice (each carries the launcher's microsecond
    timestamp, so a repeat is a line delivered again), the launcher's own lines included."""
    seen = collections.Counter((e["resource"]["labels"]["task_name"], e["timestamp"],
                                e["jsonPayload"]["message"]) for e in entries
                               if e["resource"]["labels"]["task_name"] != "service")
    twice = [k for k, n in seen.items() if n > 1]
    assert not twice, "%d lines stored twice, e.g. %s" % (len(twice), twice[:3])


def assert_numbered_once(messages, tag, count):
    got = [int(m.split()[1]) for m in messages if m.startswith(tag + " ") and
           m.split()[1].isdigit()]
    missing = sorted(set(range(count)) - set(got))
    assert sorted(got) == list(range(count)), "%s: %d lines, %d missing (first %s), %d extra" % (
        tag, len(got), len(missing), missing[:5], len(got) - len(set(got)))


def is_google_error(body, code, status):
    return isinstance(body, dict) and body.get("error", {}).get("code") == code and \
        body["error"].get("status") == status and body["error"].get("message")


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    return build_sdist(make_package(tmp_path_factory.mktemp("faults-pkg"), TRAINER))


@pytest.fixture(scope="module")
def shared(tmp_path_factory, sdist):
    """One data dir for the module (a fresh one costs a Python environment build): the tests
    kill and restart its daemon, which is what the data dir must survive. Job ids are unique
    per test."""
    root = tmp_path_factory.mktemp("faults")
    data = root / "data"
    data.mkdir()
    cfg = root / "trainyardd.yaml"
    cfg.write_text("gpus: none\nnode_cpus: 16\nnode_memory: 64GiB\ncancel_grace: 2s\n")
    d = Daemon(str(data), extra_args=["--config", str(cfg)])
    start_with(d)
    d.uri = upload_package(d, sdist, bucket=BUCKET)
    d.record = str(root / "record")
    d.token_tag = "fx%x" % random.getrandbits(40)
    os.makedirs(d.record)
    yield d
    if d.proc:
        d.stop()


@pytest.fixture
def fd(shared):
    """The module's daemon, running without failpoints and with admission open."""
    if shared.proc is None or shared.proc.poll() is not None or \
            "TRAINYARD_FAILPOINTS" in shared.env or "TRAINYARD_REPLICA_RESTARTS" in shared.env:
        if shared.proc is not None and shared.proc.poll() is None:
            shared.stop()
        shared.proc = None
        start_with(shared)
    shared.request("PUT", "/v1/admin/admission", {"paused": False})
    return shared


# --- 1. kill -9 during concurrent creates -------------------------------------------------

def test_kill_during_concurrent_creates_keeps_every_acknowledged_job_once(fd):
    """Six clients create jobs as fast as they can; the daemon is SIGKILLed mid-way and
    restarted on the same data dir. Every create answered 200 is there (nothing acknowledged
    is lost), no job is there twice, and each one then runs its trainer exactly once to
    SUCCEEDED."""
    fd.request("PUT", "/v1/admin/admission", {"paused": True})  # the storm first, then the runs
    acked, tried, lock = [], [], threading.Lock()
    stop = threading.Event()

    def client(c):
        # Until the kill (at most 100 each): a fixed number could all be answered before the
        # kill on a fast machine, and then no create would be cut off by it.
        for n in range(100):
            if stop.is_set():
                return
            job_id = "storm_%d_%03d" % (c, n)
            with lock:
                tried.append(job_id)
            try:
                status, _ = create(fd, job_id, "quick")
            except (OSError, http.client.HTTPException):
                return  # the daemon is gone: this create was not acknowledged
            if status == 200:
                with lock:
                    acked.append(job_id)

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(client, c) for c in range(6)]
        wait_for(lambda: len(acked) >= 15, timeout=60, interval=0.005, what="15 acknowledged")
        kill9(fd)  # clients are still creating
        stop.set()
        for f in futures:
            f.result()
    assert len(tried) > len(acked), "the kill came after the last create"
    start_with(fd)
    ids = [j for j in list_ids(fd) if j.startswith("storm_")]
    assert len(ids) == len(set(ids)), "a job is listed twice"
    assert set(acked) <= set(ids), "acknowledged and lost: %s" % sorted(set(acked) - set(ids))
    assert set(ids) <= set(tried)
    fd.request("PUT", "/v1/admin/admission", {"paused": False})
    for job_id in ids:
        job = finish(fd, job_id, timeout=180)
        assert job["state"] == "SUCCEEDED", job
        assert starts(fd, job_id) == 1, job_id
    for job_id in ids[:3]:
        done = tag_of(fd, job_id) + " done"
        assert [m for m in (e["jsonPayload"]["message"] for e in fd.logs(job_id))
                if m == done] == [done]


# --- 2. kill -9 during log ingestion --------------------------------------------------------

LINES = 12000


def test_kill_during_log_ingestion_loses_and_repeats_no_line(fd):
    """Three trainers print numbered lines fast; the daemon is SIGKILLed three times while they
    print and restarted each time. After the jobs end, every line is there exactly once,
    through the logs API and through the Cloud Logging entries:list subset."""
    jobs = ["ingest_%d" % i for i in range(3)]
    for job_id in jobs:
        assert create(fd, job_id, "gated", LINES)[0] == 200
    # The trainers print a third of their lines per round and wait for the test before the next
    # (and before exiting): every kill finds them running, however long the restarts take.
    for k in (1, 2, 3):
        # Killed while the trainers print block k: some of its lines are stored, some not yet.
        floor = (k - 1) * (LINES // 3) + 50
        wait_for(lambda: any(len(fd.logs(j)) > floor for j in jobs), timeout=90,
                 what="lines of block %d stored" % k)
        time.sleep(random.uniform(0.2, 0.8))
        states = [fd.job(j)["state"] for j in jobs]
        assert states == ["RUNNING"] * len(jobs), states
        kill9(fd)
        time.sleep(0.3)  # they go on printing with no daemon
        start_with(fd)
        for job_id in jobs:
            open(os.path.join(fd.record, "release-%s-%d" % (tag_of(fd, job_id), k)), "w").close()
    for job_id in jobs:
        assert finish(fd, job_id)["state"] == "SUCCEEDED"
        tag = tag_of(fd, job_id)
        entries = fd.logs(job_id)
        assert_no_line_twice(entries)
        assert_numbered_once([e["jsonPayload"]["message"] for e in entries], tag, LINES)
        assert_numbered_once(logging_messages(fd, job_id), tag, LINES)
        assert starts(fd, job_id) == 1


@pytest.mark.parametrize("point", ["store.logs.before_commit", "executor.logs.after_commit"])
def test_kill_at_a_log_commit_loses_and_repeats_no_line(fd, point):
    """The daemon dies at the 8th batch of log lines: before the chunk's transaction
    commits (the lines must be delivered again), or after it committed but before the
    replica's log.offset moved on (the lines must not be stored twice)."""
    job_id = "chunk_" + point.split(".")[0]
    fd.stop()
    start_with(fd, "%s=kill@8" % point)
    assert create(fd, job_id, "lines", 3000)[0] == 200
    died_at_failpoint(fd)
    start_with(fd)
    assert finish(fd, job_id)["state"] == "SUCCEEDED"
    tag = tag_of(fd, job_id)
    entries = fd.logs(job_id)
    assert_no_line_twice(entries)
    assert_numbered_once([e["jsonPayload"]["message"] for e in entries], tag, 3000)
    assert_numbered_once(logging_messages(fd, job_id), tag, 3000)


# --- 3. kill -9 during an upload ------------------------------------------------------------

def storage_path(name):
    return "/storage/v1/b/%s/o/%s" % (BUCKET, urllib.parse.quote(name, safe=""))


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def send_until_killed(d, method, path, headers, body, kill_after):
    """Sends body with a Content-Length and SIGKILLs the daemon once kill_after bytes of it are
    out: the request is never answered."""
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    conn.putrequest(method, path)
    for k, v in dict(headers, **{"Content-Length": str(len(body)),
                                 "Authorization": "Bearer " + d.token}).items():
        conn.putheader(k, v)
    conn.endheaders()
    sent = 0
    while sent < kill_after:
        conn.send(body[sent:sent + (256 << 10)])
        sent += 256 << 10
        time.sleep(0.002)
    kill9(d)
    conn.close()


def temp_uploads(d):
    tmp = os.path.join(d.data_dir, "buckets", ".tmp")
    return sorted(f for f in os.listdir(tmp) if f.startswith("upload-")) if os.path.isdir(tmp) \
        else []


def object_state(d, name):
    """(status, metadata, bytes) of an object, and whether the listing shows it."""
    status, meta = d.request("GET", storage_path(name))
    data = None
    if status == 200:
        req = urllib.request.Request(d.url + storage_path(name) + "?alt=media",
                                     headers={"Authorization": "Bearer " + d.token})
        with urllib.request.urlopen(req, timeout=30) as r:
            data = r.read()
    status_l, listing = d.request("GET", "/storage/v1/b/%s/o" % BUCKET)
    assert status_l == 200, listing
    listed = {o["name"]: o for o in (listing or {}).get("items", [])}
    return status, meta, data, listed.get(name)


def assert_absent(d, name):
    status, meta, _, listed = object_state(d, name)
    assert status == 404, meta
    assert listed is None, listed


def assert_exactly(d, name, data):
    status, meta, got, listed = object_state(d, name)
    assert status == 200, meta
    assert got == data, "object %s is torn: %d bytes, want %d" % (name, len(got), len(data))
    assert int(meta["size"]) == len(data) and meta["md5Hash"] == md5_b64(data), meta
    assert listed and int(listed["size"]) == len(data), listed


def test_kill_during_uploads_leaves_no_torn_object_and_no_temp_file(fd):
    """The daemon is SIGKILLed while a simple (media) upload, a multipart upload and an upload
    over an existing object stream in. After the restart each object is absent, or the old
    version byte for byte; the listing never shows a partial object; the temp files of the
    killed uploads are gone. A resumable session lives through the kill: the client asks what
    was received, sends the rest, and gets the complete object."""
    rng = random.Random(17)
    big = rng.randbytes(24 << 20)
    old = rng.randbytes(3 << 20)
    media = "/upload/storage/v1/b/%s/o?uploadType=media&name=" % BUCKET
    status, body = fd.request("POST", media + "keep.bin", raw=old,
                              headers={"Content-Type": "application/octet-stream"})
    assert status == 200, body

    send_until_killed(fd, "POST", media + "simple.bin",
                      {"Content-Type": "application/octet-stream"}, big, 10 << 20)
    start_with(fd)
    send_until_killed(fd, "POST", media + "keep.bin",
                      {"Content-Type": "application/octet-stream"}, big, 12 << 20)
    start_with(fd)
    boundary = "faults-boundary-17"
    multipart = (("--%s\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n%s\r\n"
                  "--%s\r\nContent-Type: application/octet-stream\r\n\r\n") % (
                      boundary, json.dumps({"name": "multi.bin"}), boundary)).encode() + \
        big + ("\r\n--%s--\r\n" % boundary).encode()
    send_until_killed(fd, "POST", "/upload/storage/v1/b/%s/o?uploadType=multipart" % BUCKET,
                      {"Content-Type": "multipart/related; boundary=" + boundary}, multipart,
                      16 << 20)
    start_with(fd)
    assert_absent(fd, "simple.bin")
    assert_absent(fd, "multi.bin")
    assert_exactly(fd, "keep.bin", old)
    assert temp_uploads(fd) == [], "temp files of killed uploads are left"

    # Resumable: 8 MiB acknowledged, the next chunk cut by the kill.
    conn = http.client.HTTPConnection("127.0.0.1", fd.port, timeout=30)
    conn.request("POST", "/upload/storage/v1/b/%s/o?uploadType=resumable" % BUCKET,
                 body=json.dumps({"name": "resumed.bin"}),
                 headers={"Content-Type": "application/json",
                          "Authorization": "Bearer " + fd.token})
    r = conn.getresponse()
    r.read()
    assert r.status == 200
    upload_id = r.getheader("X-GUploader-UploadID")
    put = "/upload/storage/v1/b/%s/o?uploadType=resumable&upload_id=%s" % (BUCKET, upload_id)
    total = len(big)
    status, _ = fd.request("PUT", put, raw=big[:8 << 20],
                           headers={"Content-Range": "bytes 0-%d/%d" % ((8 << 20) - 1, total)})
    assert status == 308
    send_until_killed(fd, "PUT", put, {"Content-Range": "bytes %d-%d/%d" % (
        8 << 20, total - 1, total)}, big[8 << 20:], 6 << 20)
    start_with(fd)
    assert_absent(fd, "resumed.bin")
    status, _ = fd.request("PUT", put, raw=b"", headers={"Content-Range": "bytes */%d" % total})
    assert status == 308
    # What the daemon says it has (a prefix of what was sent), then the rest.
    conn = http.client.HTTPConnection("127.0.0.1", fd.port, timeout=30)
    conn.request("PUT", put, body=b"", headers={"Content-Range": "bytes */%d" % total,
                                                "Authorization": "Bearer " + fd.token})
    r = conn.getresponse()
    r.read()
    have = int(r.getheader("Range").split("-")[1]) + 1
    assert (8 << 20) <= have <= total
    status, meta = fd.request("PUT", put, raw=big[have:], headers={
        "Content-Range": "bytes %d-%d/%d" % (have, total - 1, total)})
    assert status == 200, meta
    assert_exactly(fd, "resumed.bin", big)
    assert temp_uploads(fd) == []


@pytest.mark.parametrize("point,present", [("storage.commit.before_rename", False),
                                           ("storage.commit.after_rename", True)])
def test_kill_at_an_object_commit_is_all_or_nothing(fd, point, present):
    """The daemon dies with an upload complete in its temp file, just before or just after it
    is renamed into place: after the restart the object is absent (and its temp file gone), or
    complete with the right size and md5 in the metadata and the listing."""
    data = random.Random(3).randbytes(5 << 20)
    name = "commit-%s.bin" % point.rsplit(".", 1)[1]
    fd.stop()
    start_with(fd, point + "=kill")
    with pytest.raises((OSError, http.client.HTTPException)):
        fd.request("POST", "/upload/storage/v1/b/%s/o?uploadType=media&name=" % BUCKET + name,
                   raw=data, headers={"Content-Type": "application/octet-stream"})
    died_at_failpoint(fd)
    start_with(fd)
    if present:
        assert_exactly(fd, name, data)
    else:
        assert_absent(fd, name)
    assert temp_uploads(fd) == []


# --- 4. kill -9 between a store write and an executor launch (failpoints) ------------------

SEAMS = [
    # (failpoint, what the crash leaves)
    ("scheduler.submit.after_commit", "a stored job whose create was never answered"),
    ("scheduler.admit.after_preparing", "PREPARING stored, nothing launched"),
    ("executor.launch.after_spawn", "a launcher started, its pid file not yet written"),
    ("scheduler.running.before_write", "a running replica, RUNNING not stored"),
    ("scheduler.finish.before_write", "an ended replica, the terminal state not stored"),
]


def test_kill_at_each_seam_between_store_and_executor(fd):
    """For each seam: the daemon dies there (its failpoint), restarts without failpoints, and the
    job reaches SUCCEEDED with its trainer started exactly once (no double launch, no launch
    lost), every launcher and trainer process gone and no cgroup left."""
    for i, (point, _) in enumerate(SEAMS):
        fd.stop()
        start_with(fd, point + "=kill")
        job_id = "seam_%d" % i
        try:
            status, body = create(fd, job_id, "family", 1)
            acked = status == 200
        except (OSError, http.client.HTTPException):
            acked = False  # died before the answer went out
        died_at_failpoint(fd)
        start_with(fd)
        if point == "scheduler.submit.after_commit":
            # Stored before the crash: it exists although it was never acknowledged.
            assert not acked
        job = finish(fd, job_id)
        assert job["state"] == "SUCCEEDED", (point, job)
        assert starts(fd, job_id) == 1, (point, starts(fd, job_id))
        assert_nothing_left(fd, [job_id])
        history = [m for m in (e["jsonPayload"]["message"] for e in fd.logs(job_id))
                   if m == "Job completed successfully."]
        assert history == ["Job completed successfully."], (point, history)


def test_kill_while_a_gang_starts_recovers_it_whole(fd):
    """The daemon dies right after the first launcher of a 3-replica job started, the other two
    not yet started. After the restart the job is not failed for replicas it never started: the
    two are restarted with their identity (the gang's specs were recorded before its first
    launcher), each trainer runs once, and the job succeeds."""
    fd.stop()
    start_with(fd, "executor.launch.after_spawn=kill")
    job_id = "gang_start"
    status, body = create(fd, job_id, "sleep", 2, scaleTier="CUSTOM", masterType="n1-standard-4",
                          workerType="n1-standard-4", workerCount=2)
    assert status == 200, body
    died_at_failpoint(fd)
    start_with(fd)
    job = finish(fd, job_id)
    assert job["state"] == "SUCCEEDED", job
    assert starts(fd, job_id) == 3, starts(fd, job_id)
    messages = [e["jsonPayload"]["message"] for e in fd.logs(job_id)]
    restarted = [m for m in messages if "restarting it with the same identity" in m]
    assert len(restarted) == 2 and all("never started" in m for m in restarted), restarted
    assert_nothing_left(fd, [job_id])


# --- 5. a launcher killed with SIGKILL ------------------------------------------------------

def launcher_pid(d, job_id):
    path = os.path.join(d.data_dir, "jobs", PROJECT, job_id, "master-replica-0", "launcher.pid")
    with open(path) as f:
        return int(f.read().split()[0])


def test_launcher_killed_restarts_the_replica_and_leaves_no_orphan(fd):
    """A replica's launcher is SIGKILLed while its trainer (with a child in its session and one
    that left it) runs. The trainer and both children die with it; the replica is restarted
    per the restart rules with a message that names what happened, and the job succeeds."""
    # The trainer holds until the test releases it, so the kill finds it running on any machine.
    assert create(fd, "lk_1", "hold", 300)[0] == 200
    fd.wait_state("lk_1", "RUNNING")
    tag = tag_of(fd, "lk_1")
    wait_for(lambda: len(cmdline_pids(tag)) >= 3, what="trainer and children")
    first = set(cmdline_pids(tag))
    os.kill(launcher_pid(fd, "lk_1"), signal.SIGKILL)
    wait_for(lambda: starts(fd, "lk_1") == 2, timeout=60, what="the restarted trainer")
    wait_for(lambda: not first & set(cmdline_pids(tag)), timeout=20,
             what="the first attempt's processes gone")
    open(os.path.join(fd.record, "release-" + tag), "w").close()
    job = finish(fd, "lk_1")
    assert job["state"] == "SUCCEEDED", job
    messages = [e["jsonPayload"]["message"] for e in fd.logs("lk_1")]
    restart = [m for m in messages if "restarting it with the same identity" in m]
    assert len(restart) == 1 and "launcher" in restart[0] and "signal 9" in restart[0], restart
    assert_nothing_left(fd, ["lk_1"])


def test_launcher_killed_without_restarts_fails_the_job_saying_so(fd):
    """With replica_restarts 0 the same kill fails the job, and the error names the launcher
    killed by SIGKILL; nothing of the replica is left running."""
    fd.stop()
    start_with(fd, extra_env={"TRAINYARD_REPLICA_RESTARTS": "0"})
    assert create(fd, "lk_2", "stubborn", 300)[0] == 200
    fd.wait_state("lk_2", "RUNNING")
    wait_for(lambda: len(cmdline_pids(tag_of(fd, "lk_2"))) >= 3, what="trainer and children")
    os.kill(launcher_pid(fd, "lk_2"), signal.SIGKILL)
    job = finish(fd, "lk_2", timeout=60)
    assert job["state"] == "FAILED", job
    msg = job["errorMessage"]
    assert msg.startswith("The replica master 0 was lost"), msg
    assert "launcher" in msg and "SIGKILL" in msg, msg
    assert_nothing_left(fd, ["lk_2"])


def test_two_replicas_preparing_one_new_environment_both_start(fd, tmp_path):
    """The master and a worker of one job prepare the same Python environment, not yet cached,
    and both hold its lock shared at once (`launcher.env.after_shared_lock` holds each there a
    while). One builds it; the other, whose LOCK_EX|LOCK_NB failed (which drops its shared lock),
    must start over and find it built, not wait for an exclusive lock that the builder, holding
    the lock shared while its trainer runs, gives up only when it exits. The trainers wait for
    each other as a distributed job's do, so the job succeeds only if both start; before the
    fix (a653d90) it stayed PREPARING until it was cancelled."""
    fd.stop()
    start_with(fd, "launcher.env.after_shared_lock=sleep(500)")
    # A package of its own, so that its environment is built by this test's replicas.
    pkg = make_package(tmp_path / "gang", TRAINER + "# gang %d\n" % time.time_ns())
    fresh = upload_package(fd, build_sdist(pkg), bucket=BUCKET)
    job_id = "env_gang"
    body = {"jobId": job_id, "trainingInput": {
        "packageUris": [fresh], "pythonModule": "trainer.task", "region": "us-central1",
        "args": ["gang", tag_of(fd, job_id), fd.record, "2"], "scaleTier": "CUSTOM",
        "masterType": "n1-standard-4", "workerType": "n1-standard-4", "workerCount": 1}}
    assert fd.request("POST", JOBS, body)[0] == 200
    t0 = time.time()
    try:
        job = fd.wait_state(job_id, TERMINAL, timeout=90)
    finally:
        if fd.job(job_id)["state"] not in TERMINAL:
            cancel(fd, job_id)
            finish(fd, job_id, timeout=60)
    assert job["state"] == "SUCCEEDED", job
    print("env_gang: SUCCEEDED %.1f s after its create" % (time.time() - t0))
    assert starts(fd, job_id) == 2, starts(fd, job_id)
    messages = [e["jsonPayload"]["message"] for e in fd.logs(job_id)]
    # Both held the lock shared: one built the environment, the other waited and used it.
    assert len([m for m in messages if m.startswith("Installing the package: ")]) == 1, messages
    assert len([m for m in messages if m.startswith("Waiting for another replica to prepare ")]) \
        == 1, messages
    assert len([m for m in messages if m.startswith("Using cached environment ")]) == 1, messages
    assert_nothing_left(fd, [job_id])


# --- 6. SQLite busy and read-only -----------------------------------------------------------

HOLDER = r"""
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("ROLLBACK")
"""


def hammer(d, prefix, until, results):
    """Creates and reads jobs in a loop until `until` is set; records (kind, id, status, body)."""
    n = 0
    while not until.is_set():
        job_id = "%s_%03d" % (prefix, n)
        n += 1
        status, body = create(d, job_id, "quick")
        results.append(("create", job_id, status, body))
        if status == 200:
            status, body = d.request("GET", JOBS + "/" + job_id)
            results.append(("get", job_id, status, body))


def check_hammered(d, results):
    """Every answer was a success or 503 UNAVAILABLE in google.rpc shape; every acknowledged
    create is stored, every refused one is not."""
    assert results
    for kind, job_id, status, body in results:
        assert status == 200 or (status == 503 and is_google_error(body, 503, "UNAVAILABLE")), \
            (kind, job_id, status, body)
    for kind, job_id, status, _ in results:
        if kind == "create":
            got, _ = d.request("GET", JOBS + "/" + job_id)
            assert got == (200 if status == 200 else 404), (job_id, status, got)


def test_database_locked_by_another_process(fd):
    """Another process holds an exclusive lock on trainyard.db for 16 s (longer than the store's
    5 s busy timeout, twice over) while clients create and read jobs and a job prints and ends.
    Requests
    wait and succeed or get 503 UNAVAILABLE; nothing acknowledged is lost, nothing refused is
    half-stored; the daemon recovers by itself, and the job that ended meanwhile reaches
    SUCCEEDED with every line once."""
    assert create(fd, "busy_run", "lines", 2000)[0] == 200
    fd.wait_state("busy_run", "RUNNING")
    # The store runs its writes one transaction at a time, each waiting up to the busy timeout
    # (5 s): a create queued behind another write that met the lock first (the job's log lines,
    # still being stored on a slow machine) starts its own wait up to 5 s late. With 8 s such a
    # create outlasted the lock and no create was refused; 16 s covers a wait behind two.
    holder = subprocess.Popen(["/usr/bin/python3", "-c", HOLDER,
                               os.path.join(fd.data_dir, "trainyard.db"), "16"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    results, until = [], threading.Event()
    threads = [threading.Thread(target=hammer, args=(fd, "busy%d" % i, until, results))
               for i in range(3)]
    for t in threads:
        t.start()
    assert holder.wait(timeout=60) == 0
    wait_for(lambda: create(fd, "busy_after", "quick")[0] == 200,
             timeout=30, what="creates to work again")
    until.set()
    for t in threads:
        t.join()
    assert any(s == 503 for k, _, s, _ in results if k == "create"), "the lock was not felt"
    assert fd.proc.poll() is None and fd.get_status("/healthz") == 200
    check_hammered(fd, results)
    job = finish(fd, "busy_run")
    assert job["state"] == "SUCCEEDED", job
    messages = [e["jsonPayload"]["message"] for e in fd.logs("busy_run")]
    assert_numbered_once(messages, tag_of(fd, "busy_run"), 2000)
    assert messages.count("Job completed successfully.") == 1, messages[-5:]
    for job_id in ["busy_after"] + [j for k, j, s, _ in results if k == "create" and s == 200]:
        assert finish(fd, job_id)["state"] == "SUCCEEDED"


def test_database_that_turns_unwritable(fd):
    """trainyard.db and its WAL turn immutable (chattr +i: root's writes fail with EPERM, as on
    a filesystem gone read-only) while a job prints. Writes answer 503 UNAVAILABLE, reads keep
    working, the daemon keeps running; once the files are writable again it recovers by itself
    and the job ends SUCCEEDED with every line once."""
    db = os.path.join(fd.data_dir, "trainyard.db")
    files = [db, db + "-wal"]
    assert create(fd, "ro_run", "lines", 3000)[0] == 200
    fd.wait_state("ro_run", "RUNNING")
    if subprocess.run(["chattr", "+i"] + files, capture_output=True).returncode != 0:
        pytest.skip("chattr +i does not work here (needs root and ext4/xfs)")
    try:
        results, until = [], threading.Event()
        t = threading.Thread(target=hammer, args=(fd, "ro", until, results))
        t.start()
        wait_for(lambda: len(results) >= 6, timeout=60, what="requests while unwritable")
        status, body = fd.request("GET", JOBS + "?pageSize=5")
        assert status == 200, body
        assert fd.job("ro_run")["state"] in ("RUNNING", "SUCCEEDED")
        assert fd.proc.poll() is None and fd.get_status("/healthz") == 200
    finally:
        subprocess.run(["chattr", "-i"] + files, check=True)
    wait_for(lambda: create(fd, "ro_after", "quick")[0] == 200,
             timeout=30, what="creates to work again")
    until.set()
    t.join()
    creates = [s for k, _, s, _ in results if k == "create"]
    assert 503 in creates, "writes did not fail: %s" % creates
    assert all(s == 200 for k, _, s, _ in results if k == "get"), results
    check_hammered(fd, results)
    job = finish(fd, "ro_run")
    assert job["state"] == "SUCCEEDED", job
    messages = [e["jsonPayload"]["message"] for e in fd.logs("ro_run")]
    assert_numbered_once(messages, tag_of(fd, "ro_run"), 3000)
    assert messages.count("Job completed successfully.") == 1, messages[-5:]


# --- 7. random cancels across every state ---------------------------------------------------

def cancel(d, job_id):
    status, body = d.request("POST", JOBS + "/" + job_id + ":cancel", {})
    assert status == 200 or (status == 400 and is_google_error(body, 400, "FAILED_PRECONDITION")), \
        (job_id, status, body)
    return status


def test_cancels_in_every_state_leave_no_process_or_cgroup(fd, tmp_path, sdist):
    """Cancels in QUEUED, PREPARING (a fresh environment being built), RUNNING, CANCELLING (a
    trainer that ignores SIGTERM, cancelled again) and just after the end, then random cancels
    at random moments over a mix of trainers. Each job ends CANCELLED (or SUCCEEDED when it
    ended first, never FAILED); afterwards no launcher, trainer or child of one runs and no
    cgroup of any job is left."""
    seed = int(os.environ.get("TRAINYARD_FAULTS_SEED", time.time_ns() % 100000))
    rng = random.Random(seed)
    seen = {}
    # QUEUED
    fd.request("PUT", "/v1/admin/admission", {"paused": True})
    assert create(fd, "cq", "sleep", 30)[0] == 200
    seen["cq"] = fd.job("cq")["state"]
    cancel(fd, "cq")
    fd.request("PUT", "/v1/admin/admission", {"paused": False})
    # PREPARING: a package of its own, so the launcher builds a fresh environment first.
    pkg = make_package(tmp_path / "fresh", TRAINER + "# another package\n")
    fresh = upload_package(fd, build_sdist(pkg), bucket=BUCKET)
    body = {"jobId": "cp", "trainingInput": {
        "packageUris": [fresh], "pythonModule": "trainer.task", "region": "us-central1",
        "args": ["sleep", tag_of(fd, "cp"), fd.record, "30"]}}
    assert fd.request("POST", JOBS, body)[0] == 200
    seen["cp"] = fd.wait_state("cp", "PREPARING")["state"]
    cancel(fd, "cp")
    # RUNNING and CANCELLING
    assert create(fd, "cr", "family", 30)[0] == 200
    assert create(fd, "cc", "stubborn", 300)[0] == 200
    seen["cr"] = fd.wait_state("cr", "RUNNING")["state"]
    cancel(fd, "cr")
    fd.wait_state("cc", "RUNNING")
    wait_for(lambda: len(cmdline_pids(tag_of(fd, "cc"))) >= 3,
             what="the stubborn trainer and children")
    cancel(fd, "cc")
    seen["cc"] = fd.wait_state("cc", "CANCELLING")["state"]
    cancel(fd, "cc")  # again, while CANCELLING
    # Just finished
    assert create(fd, "cf", "quick")[0] == 200
    seen["cf"] = fd.wait_state("cf", TERMINAL)["state"]
    cancel(fd, "cf")
    # Random
    modes = ["quick", "sleep", "family", "stubborn"]
    plan = [("rnd_%02d" % i, rng.choice(modes), rng.uniform(0, 2.5)) for i in range(10)]
    for job_id, mode, _ in plan:
        assert create(fd, job_id, mode, 1.5 if mode == "sleep" else 30)[0] == 200
    t0 = time.time()
    for job_id, mode, delay in sorted(plan, key=lambda p: p[2]):
        time.sleep(max(0, t0 + delay - time.time()))
        seen[job_id] = fd.job(job_id)["state"]
        cancel(fd, job_id)
    assert {seen[j] for j in ("cq", "cp", "cr", "cc", "cf")} == {
        "QUEUED", "PREPARING", "RUNNING", "CANCELLING", "SUCCEEDED"}, seen
    ended = {}
    for job_id in seen:
        ended[job_id] = finish(fd, job_id, timeout=120)["state"]
    modes_of = dict((j, m) for j, m, _ in plan)
    for job_id, state in ended.items():
        could_finish = job_id == "cf" or modes_of.get(job_id) in ("quick", "sleep")
        assert state == "CANCELLED" or (state == "SUCCEEDED" and could_finish), \
            "seed %d: %s ended %s (was %s at cancel)" % (seed, job_id, state, seen[job_id])
    assert_nothing_left(fd, list(seen))
