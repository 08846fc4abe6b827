"""The web console end to end: a real trainyardd on a free port with real jobs (trainers that
print, fail, run until cancelled; queued jobs for paging), and Debian's Chromium headless driven
over the DevTools protocol (cdp.py). Checks that the pages show the API's data, that filter,
paging, sort and bulk cancel work through the UI, that a job's page and its logs render (tail,
jump, severity filter, follow while printing), the serving headers, and that no page logs an
error (CSP violations, exceptions, failed requests). Screenshots of each page go to
$TRAINYARD_ARTIFACTS_DIR (default build/e2e-artifacts)."""

import gzip
import http.client
import json
import os
import time
import urllib.parse

import pytest

from cdp import Browser, find_chromium
from conftest import (PROJECT, REPO, Daemon, build_sdist, job_body, make_package, upload_package,
                      wait_for)

JOBS = "/v1/projects/%s/jobs" % PROJECT
ARTIFACTS = os.environ.get("TRAINYARD_ARTIFACTS_DIR", os.path.join(REPO, "build", "e2e-artifacts"))

# argv: LINES, SECONDS BETWEEN LINES, EXIT CODE. Prints "line I" on stdout; an exit code != 0
# prints a traceback-like ERROR tail on stderr first.
TRAINER = r"""
import sys, time
lines, pause, code = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
for i in range(lines):
    print("line %d" % i)
    if pause:
        sys.stdout.flush()
        time.sleep(pause)
sys.stdout.flush()
if code:
    print("Traceback (most recent call last):", file=sys.stderr)
    print("ValueError: console test failure", file=sys.stderr)
    sys.exit(code)
"""

MASTER = "master-replica-0"
PAGED = 60


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    if find_chromium() is None:
        pytest.fail("chromium is not installed: the console's browser tests need Debian's "
                    "chromium (scripts/install-deps.sh installs it)")
    root = tmp_path_factory.mktemp("console")
    data = root / "data"
    data.mkdir()
    cfg = root / "trainyardd.yaml"
    cfg.write_text("gpus: none\nnode_cpus: 16\nnode_memory: 64GiB\n")
    d = Daemon(str(data), extra_args=["--config", str(cfg)]).start()
    pkg = make_package(root / "pkg", TRAINER, name="printer")
    d.uri = upload_package(d, build_sdist(pkg), bucket="console-itest")

    def submit(job_id, lines, pause, code, labels=None):
        body = {"jobId": job_id, "trainingInput": {
            "packageUris": [d.uri], "pythonModule": "printer.task", "region": "us-central1",
            "args": [str(lines), str(pause), str(code)]}}
        if labels:
            body["labels"] = labels
        status, out = d.request("POST", JOBS, body)
        assert status == 200, out

    submit("ok_job", 3000, 0, 0, {"team": "vision"})
    submit("bad_job", 5, 0, 3)
    submit("long_job", 100000, 0.1, 0)
    d.wait_state("ok_job", "SUCCEEDED")
    d.wait_state("bad_job", "FAILED")
    d.wait_state("long_job", "RUNNING")
    # Queued jobs for paging and bulk cancel: admission paused keeps them QUEUED.
    status, _ = d.request("PUT", "/v1/admin/admission", {"paused": True})
    assert status == 200
    for i in range(PAGED):
        submit("paged_%02d" % i, 1, 0, 0, {"batch": "paged"})
    d.submit = submit
    b = Browser()
    d.browser = b
    sign_in(b, d)
    b.take_errors()  # the 401 that showed the sign-in form
    yield d
    b.close()
    d.request("PUT", "/v1/admin/admission", {"paused": False})
    stop_jobs(d)
    d.stop()


def stop_jobs(d):
    """Cancels what still runs or waits (long_job prints for hours): a daemon stop leaves its
    trainers running, as it must, and a test leaves nothing behind."""
    status, listed = d.request("GET", JOBS + "?pageSize=1000")
    assert status == 200, listed
    live = [j["jobId"] for j in listed.get("jobs", [])
            if j["state"] in ("QUEUED", "PREPARING", "RUNNING", "CANCELLING")]
    for job_id in live:
        d.request("POST", "%s/%s:cancel" % (JOBS, job_id))
    for job_id in live:
        d.wait_state(job_id, ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=120)


def sign_in(b, d, token=None, path="/console/"):
    """Signs in through the console's form as the daemon's administrator (or `token`), on the
    page at `path`."""
    b.goto(d.url + path)
    b.wait("document.querySelector('#signin-form')", what="the sign-in form")
    b.fill("#signin-token", token or d.token)
    b.submit("#signin-form")
    b.wait("document.querySelector('#session-email') && "
           "document.querySelector('#jobs-table, #jobs-empty')", what="the signed-in jobs page")


@pytest.fixture
def browser(env, request):
    b = env.browser
    b.take_errors()
    yield b
    b.screenshot(os.path.join(ARTIFACTS, request.node.name + ".png"))
    errors = b.take_errors()
    assert not errors, "the page logged errors: %s" % errors


def console(env, path):
    return env.url + "/console/projects/%s/%s" % (PROJECT, path)


def rows(b):
    return b.eval("Array.from(document.querySelectorAll('#jobs-table tbody tr'))"
                  ".map(r => r.dataset.job)")


def api_logs(env, job, **params):
    q = urllib.parse.urlencode(params)
    status, body = env.request("GET", "%s/%s/logs:lines?%s" % (JOBS, job, q))
    assert status == 200, body
    return body


# --- serving -------------------------------------------------------------------------------

def raw_get(env, path, headers=None):
    host, port = env.url.split("//")[1].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def test_serving_headers_redirects_and_caching(env):
    status, h, _ = raw_get(env, "/")
    assert status == 302 and h["location"] == "/console/"
    status, h, _ = raw_get(env, "/console/")
    assert status == 302 and h["location"] == "/console/projects/default/jobs"
    status, h, _ = raw_get(env, "/mlengine/jobs/ok_job?project=%s" % PROJECT)
    assert status == 302 and h["location"] == "/console/projects/%s/jobs/ok_job" % PROJECT
    # A deep link answers the application's index, never cached without revalidation.
    status, h, index = raw_get(env, "/console/projects/%s/jobs/ok_job/logs" % PROJECT)
    assert status == 200 and h["content-type"].startswith("text/html")
    assert h["cache-control"] == "no-cache" and h["etag"]
    assert "script-src 'self'" in h["content-security-policy"]
    assert h["x-content-type-options"] == "nosniff"
    assert "content-encoding" not in h  # no Accept-Encoding: identity
    status, h304, body = raw_get(env, "/console/projects/x/jobs", {"If-None-Match": h["etag"]})
    assert status == 304 and body == b""
    # The hashed assets: immutable, gzip'd at build time when the client accepts gzip.
    text = index.decode()
    js = text.split('src="')[1].split('"')[0]
    css = text.split('rel="stylesheet" href="')[1].split('"')[0]
    for asset in (js, css):
        status, h, plain = raw_get(env, asset)
        assert status == 200
        assert h["cache-control"] == "public, max-age=31536000, immutable"
        status, hz, gz = raw_get(env, asset, {"Accept-Encoding": "gzip, deflate, br"})
        assert status == 200 and hz["content-encoding"] == "gzip" and hz["vary"] == "Accept-Encoding"
        assert gzip.decompress(gz) == plain
    assert raw_get(env, js)[1]["content-type"].startswith("text/javascript")
    assert raw_get(env, css)[1]["content-type"].startswith("text/css")
    status, _, _ = raw_get(env, "/console/assets/main-NOSUCHFILE.js")
    assert status == 404


# --- signing in ----------------------------------------------------------------------------

def cookie_request(env, method, path, cookie, headers=None, body=None):
    host, port = env.url.split("//")[1].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    h = {"Cookie": cookie}
    h.update(headers or {})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, out


def test_session_cookie_is_httponly_and_needs_the_console_header(env):
    host = env.url.split("//")[1]
    # A wrong token is refused with 401 and sets nothing.
    status, h, _ = cookie_request(env, "POST", "/console/session", "",
                                  {"X-Trainyard-Console": "1", "Content-Type": "application/json"},
                                  json.dumps({"token": "ty1.0123456789abcdef.nope"}))
    assert status == 401 and "set-cookie" not in h
    # Without the console's header a sign-in is refused (a cross-site form cannot add it).
    status, _, _ = cookie_request(env, "POST", "/console/session", "",
                                  {"Content-Type": "application/json"},
                                  json.dumps({"token": env.token}))
    assert status == 403
    status, h, body = cookie_request(env, "POST", "/console/session", "",
                                     {"X-Trainyard-Console": "1",
                                      "Content-Type": "application/json", "Origin": env.url},
                                     json.dumps({"token": env.token}))
    assert status == 200, body
    cookie = h["set-cookie"]
    for attr in ("HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"):
        assert attr in cookie
    session = cookie.split(";")[0]
    assert session.startswith("ty_console_session=ty1.") and env.token not in session
    assert json.loads(body)["email"] and json.loads(body)["expireTime"]
    # The cookie reads...
    status, _, body = cookie_request(env, "GET", JOBS + "/ok_job", session)
    assert status == 200 and json.loads(body)["jobId"] == "ok_job"
    # ...but changes nothing without the console's header, or from another origin.
    cancel = JOBS + "/ok_job:cancel"
    status, _, _ = cookie_request(env, "POST", cancel, session)
    assert status == 401
    status, _, _ = cookie_request(env, "POST", cancel, session,
                                  {"X-Trainyard-Console": "1", "Origin": "http://evil.example"})
    assert status == 401
    status, _, body = cookie_request(env, "POST", cancel, session,
                                     {"X-Trainyard-Console": "1", "Origin": "http://" + host})
    assert status == 200, body  # authorized (a finished job's cancel is a no-op)
    # Signing out revokes the session's token: the cookie no longer works anywhere.
    status, h, _ = cookie_request(env, "DELETE", "/console/session", session,
                                  {"X-Trainyard-Console": "1"})
    assert status == 200 and "Max-Age=0" in h["set-cookie"]
    status, _, _ = cookie_request(env, "GET", JOBS + "/ok_job", session)
    assert status == 401


def test_sign_in_form_and_sign_out(env, browser):
    b = browser
    b.goto(console(env, "jobs"))
    b.wait("document.querySelector('#session-email')")
    status, me = env.request("GET", "/console/session")
    assert b.eval("document.querySelector('#session-email').textContent") == me["email"]
    assert "ty_console_session" not in b.eval("document.cookie")  # HttpOnly
    b.click("#signout")
    b.wait("document.querySelector('#signin-form')", what="the sign-in form after sign-out")
    b.screenshot(os.path.join(ARTIFACTS, "signin.png"))
    b.fill("#signin-token", "ty1.0123456789abcdef.wrong")
    b.submit("#signin-form")
    b.wait("document.querySelector('#signin-error')")
    assert "not accepted" in b.eval("document.querySelector('#signin-error').textContent")
    sign_in(b, env)
    b.take_errors()  # the refused requests while signed out


# --- the Jobs page -------------------------------------------------------------------------

def test_jobs_page_shows_the_api_jobs(env, browser):
    b = browser
    b.goto(console(env, "jobs"))
    b.wait("document.querySelectorAll('#jobs-table tbody tr').length === 50")
    status, listed = env.request("GET", JOBS + "?pageSize=50")
    assert rows(b) == [j["jobId"] for j in listed["jobs"]]
    # The jobs that ran, through a filter in AI Platform's syntax typed into the URL.
    b.goto(console(env, "jobs") + "?filter=" + urllib.parse.quote("NOT labels.batch=paged"))
    b.wait("document.querySelector('#jobs-table tr[data-job=\"ok_job\"]')")
    assert rows(b) == ["long_job", "bad_job", "ok_job"]
    state = b.eval("document.querySelector('tr[data-job=\"bad_job\"] .badge').textContent")
    assert state == "FAILED"
    assert b.eval("document.querySelector('tr[data-job=\"ok_job\"] .badge').textContent") == \
        "SUCCEEDED"
    assert "team=vision" in b.eval("document.querySelector('tr[data-job=\"ok_job\"]').textContent")
    # The state chips carry the project's counts.
    status, summary = env.request("GET", JOBS + ":summary")
    assert summary["jobStateCounts"]["QUEUED"] == str(PAGED)
    b.wait("document.querySelector('#state-chips [data-state=\"QUEUED\"] b').textContent === '%d'"
           % PAGED)
    assert b.eval("document.querySelector('#state-chips [data-state=\"FAILED\"] b')"
                  ".textContent") == summary["jobStateCounts"]["FAILED"]


def test_filter_paging_and_url_state(env, browser):
    b = browser
    b.goto(console(env, "jobs"))
    b.wait("document.querySelector('#filter')")
    b.fill("#filter", "labels.batch=paged")
    b.submit("form.filter")
    b.wait("new URL(location.href).searchParams.get('filter') === 'labels.batch=paged'")
    b.wait("document.querySelectorAll('#jobs-table tbody tr').length === 50 && "
           "!document.querySelector('#jobs-table tr[data-job=\"ok_job\"]')")
    first_page = rows(b)
    assert all(j.startswith("paged_") for j in first_page)
    b.click("#page-next")
    b.wait("new URL(location.href).searchParams.get('pageToken')")
    b.wait("document.querySelectorAll('#jobs-table tbody tr').length === %d" % (PAGED - 50))
    second = rows(b)
    assert not set(second) & set(first_page)
    assert sorted(first_page + second) == ["paged_%02d" % i for i in range(PAGED)]
    # The view is in the URL: a reload shows the same page and filter.
    url = b.eval("location.href")
    b.goto(url)
    b.wait("document.querySelectorAll('#jobs-table tbody tr').length === %d" % (PAGED - 50))
    assert rows(b) == second
    assert b.eval("document.querySelector('#filter').value") == "labels.batch=paged"
    b.click("#page-first")
    b.wait("document.querySelectorAll('#jobs-table tbody tr').length === 50")
    # A state chip sets the filter.
    b.click("#state-chips [data-state=\"FAILED\"]")
    b.wait("new URL(location.href).searchParams.get('filter') === 'state:FAILED'")
    b.wait("JSON.stringify(Array.from(document.querySelectorAll('#jobs-table tbody tr'))"
           ".map(r => r.dataset.job)) === '[\"bad_job\"]'")
    # A filter the API refuses shows the API's message.
    b.fill("#filter", "state:NOPE")
    b.submit("form.filter")
    msg = b.wait("document.querySelector('#jobs-error') && "
                 "document.querySelector('#jobs-error').textContent")
    assert "NOPE" in msg
    b.take_errors()  # the refused request itself is the expected 400


def wait_rows(b, ids):
    """Waits until the table shows exactly `ids`, in order."""
    want = json.dumps(ids, separators=(",", ":"))  # as JSON.stringify writes it
    b.wait("JSON.stringify(Array.from(document.querySelectorAll('#jobs-table tbody tr'))"
           ".map(r => r.dataset.job)) === %s" % json.dumps(want), what="rows %s" % ids)


def test_sort_by_column(env, browser):
    b = browser
    b.goto(console(env, "jobs") + "?filter=" + urllib.parse.quote("jobId:paged_0*"))
    b.wait("document.querySelectorAll('#jobs-table tbody tr').length === 10")
    b.click("th a[data-sort=\"jobId\"]")
    b.wait("new URL(location.href).searchParams.get('sort') === 'jobId'")
    wait_rows(b, ["paged_%02d" % i for i in range(10)])
    b.click("th a[data-sort=\"jobId\"]")
    b.wait("new URL(location.href).searchParams.get('sort') === '-jobId'")
    wait_rows(b, ["paged_%02d" % i for i in reversed(range(10))])
    # The daemon cannot order by duration: its header is no sort link.
    assert b.eval("document.querySelector('th a[data-sort=\"duration\"]')") is None


def test_sort_is_over_every_job_so_the_next_page_continues_it(env, browser):
    # 60 jobs in pages of 50: the daemon sorts all of them (orderBy), not just the page shown.
    b = browser
    b.goto(console(env, "jobs") + "?filter=" + urllib.parse.quote("labels.batch=paged"))
    b.wait("document.querySelectorAll('#jobs-table tbody tr').length === 50")
    b.click("th a[data-sort=\"jobId\"]")
    b.wait("new URL(location.href).searchParams.get('sort') === 'jobId'")
    wait_rows(b, ["paged_%02d" % i for i in range(50)])
    b.click("#page-next")
    b.wait("new URL(location.href).searchParams.get('pageToken')")
    wait_rows(b, ["paged_%02d" % i for i in range(50, PAGED)])
    # A new order starts at its first page, and its second page continues it.
    b.click("th a[data-sort=\"jobId\"]")
    b.wait("new URL(location.href).searchParams.get('sort') === '-jobId' && "
           "!new URL(location.href).searchParams.get('pageToken')")
    wait_rows(b, ["paged_%02d" % i for i in reversed(range(PAGED - 50, PAGED))])
    b.click("#page-next")
    b.wait("new URL(location.href).searchParams.get('pageToken')")
    wait_rows(b, ["paged_%02d" % i for i in reversed(range(PAGED - 50))])
    # The view is in the URL: a reload shows the same sorted page; Previous goes back.
    b.goto(b.eval("location.href"))
    wait_rows(b, ["paged_%02d" % i for i in reversed(range(PAGED - 50))])
    assert b.eval("document.querySelector('th a.sorted').dataset.sort") == "jobId"
    b.click("#page-first")
    wait_rows(b, ["paged_%02d" % i for i in reversed(range(PAGED - 50, PAGED))])


def test_bulk_cancel(env, browser):
    b = browser
    b.goto(console(env, "jobs") + "?filter=" + urllib.parse.quote("jobId:paged_5*"))
    b.wait("document.querySelectorAll('#jobs-table tbody tr').length === 10")
    for i in range(3):
        b.click("tr[data-job=\"paged_5%d\"] input[type=checkbox]" % i)
    b.wait("document.querySelector('#bulk-cancel').textContent.includes('(3)')")
    b.click("#bulk-cancel")
    b.wait("document.querySelector('#confirm-cancel')")
    b.click("#confirm-yes")
    for i in range(3):
        env.wait_state("paged_5%d" % i, "CANCELLED", timeout=30)
    assert env.job("paged_53")["state"] == "QUEUED"
    b.wait("document.querySelector('tr[data-job=\"paged_50\"] .badge').textContent === "
           "'CANCELLED'", timeout=15)


# --- the Job page --------------------------------------------------------------------------

def test_job_page_of_a_failed_job_via_gcloud_link(env, browser):
    b = browser
    b.goto(env.url + "/mlengine/jobs/bad_job?project=" + PROJECT)
    b.wait("location.pathname === '/console/projects/%s/jobs/bad_job'" % PROJECT)
    job = env.job("bad_job")
    msg = b.wait("document.querySelector('#job-error-message') && "
                 "document.querySelector('#job-error-message').textContent")
    assert job["errorMessage"] in msg
    assert b.eval("document.querySelector('#ov-state td').textContent") == "FAILED"
    assert b.eval("document.querySelector('#job-replicas tr[data-role=\"master\"]') !== null")
    assert b.eval("document.querySelector('#job-cancel').disabled")
    # The state history: the API's changes, the last one FAILED with its reason.
    status, hist = env.request("GET", "%s/bad_job/history" % JOBS)
    assert status == 200, hist
    changes = hist["stateChanges"]
    assert changes[0]["state"] == "QUEUED" and changes[-1]["state"] == "FAILED"
    assert changes[-1]["time"] >= changes[0]["time"]
    shown = b.wait("document.querySelectorAll('#job-history tbody tr').length === %d && "
                   "Array.from(document.querySelectorAll('#job-history tbody tr'))"
                   ".map(r => r.dataset.state)" % len(changes))
    assert shown == [c["state"] for c in changes]
    out = env.cli("jobs", "history", "bad_job").stdout.splitlines()
    assert out[0].split() == ["TIME", "STATE", "REASON"]
    assert len(out) == len(changes) + 1  # one line each, a multi-line reason included
    assert [line.split()[1] for line in out[1:]] == [c["state"] for c in changes]
    assert changes[-1]["reason"].split("\n")[0] in out[-1]
    b.click("#tab-json")
    text = b.wait("document.querySelector('#job-json') && "
                  "document.querySelector('#job-json').textContent")
    assert json.loads(text) == job


# --- logs ----------------------------------------------------------------------------------

def visible_lines(b):
    return b.eval("Array.from(document.querySelectorAll('.viewer .ln')).map(r => "
                  "[Number(r.dataset.line), r.querySelector('.msg').textContent])")


def test_logs_open_at_the_tail_and_jump(env, browser):
    b = browser
    b.goto(console(env, "jobs/ok_job/logs?task=" + MASTER))
    summary = env.request("GET", "%s/ok_job/logs:summary?taskName=%s" % (JOBS, MASTER))[1]
    n = int(summary["lineCount"])
    assert n >= 3000
    b.wait("document.querySelector('#log-count').textContent === '%s lines'" % format(n, ","))
    tail = api_logs(env, "ok_job", lineOffset=n - 1, pageSize=1, taskName=MASTER)
    b.wait("document.querySelector('.viewer .ln:last-child').dataset.line === '%d' && "
           "document.querySelector('.viewer .ln:last-child .msg').textContent === %s"
           % (n, json.dumps(tail["entries"][0]["jsonPayload"]["message"])))
    assert "line 2999" in [m for _, m in visible_lines(b)]
    # Only about a screenful of rows exists, whatever the log's length.
    assert b.eval("document.querySelectorAll('.viewer .ln').length") < 80
    # Jump to a line: it shows the server's line at that position.
    want = api_logs(env, "ok_job", lineOffset=1233, pageSize=1, taskName=MASTER)
    want = want["entries"][0]["jsonPayload"]["message"]
    b.fill("#log-jump", "1234")
    b.submit(".viewer form.inline")
    b.wait("document.querySelector('.viewer .ln[data-line=\"1234\"] .msg') && "
           "document.querySelector('.viewer .ln[data-line=\"1234\"] .msg').textContent === %s"
           % json.dumps(want))
    assert b.eval("location.hash") == "#line=1234"
    got = dict(visible_lines(b))
    for line in (1234, 1240):
        exp = api_logs(env, "ok_job", lineOffset=line - 1, pageSize=1, taskName=MASTER)
        assert got[line] == exp["entries"][0]["jsonPayload"]["message"]
    # A permalink opens at its line.
    b.goto(console(env, "jobs/ok_job/logs?task=%s#line=20" % MASTER))
    b.wait("document.querySelector('.viewer .ln.sel[data-line=\"20\"]')")


def test_logs_severity_filter(env, browser):
    b = browser
    b.goto(console(env, "jobs/bad_job/logs"))
    b.wait("document.querySelector('#log-count').textContent.endsWith(' lines')")
    b.eval("(() => { const s = document.querySelector('#log-severity'); s.value = 'ERROR'; "
           "s.dispatchEvent(new Event('change', {bubbles: true})); })()")
    b.wait("new URL(location.href).searchParams.get('severity') === 'ERROR'")
    status, body = env.request("GET", "%s/bad_job/logs?afterInsertId=0&minSeverity=ERROR" % JOBS)
    errors = [e["jsonPayload"]["message"] for e in body["entries"]]
    assert any("ValueError: console test failure" in m for m in errors)
    b.wait("document.querySelector('#log-count').textContent === '%d lines'" % len(errors))
    shown = b.wait("(() => { const r = Array.from(document.querySelectorAll('.viewer .ln'));"
                   " return r.length && r.every(x => x.classList.contains('sev-ERROR') || "
                   "x.classList.contains('sev-CRITICAL')) && r.map(x => "
                   "x.querySelector('.msg').textContent); })()")
    assert shown == errors[-len(shown):]


def test_logs_time_filter(env, browser):
    """From / to: the lines in a time range (the API's startTime / endTime), in the URL as UTC,
    shown in the inputs as local time; the download is of the same lines."""
    import datetime
    b = browser
    # The printer at 10 lines a second: its lines' times differ.
    wait_for(lambda: len(api_logs(env, "long_job", lineOffset=0, pageSize=40,
                                  taskName=MASTER)["entries"]) >= 40, what="40 lines")
    entries = api_logs(env, "long_job", lineOffset=0, pageSize=40, taskName=MASTER)["entries"]
    t = lambda e: datetime.datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00"))
    lo, hi = t(entries[10]), t(entries[30])
    inside = [e["jsonPayload"]["message"] for e in entries if lo <= t(e) < hi]
    assert 0 < len(inside) < len(entries)
    since, until = entries[10]["timestamp"], entries[30]["timestamp"]
    b.goto(console(env, "jobs/long_job/logs?" + urllib.parse.urlencode(
        {"task": MASTER, "since": since, "until": until})))
    b.wait("document.querySelector('#log-count').textContent === %s"
           % json.dumps("%s lines" % format(len(inside), ",")))
    last = b.wait("(() => { const l = document.querySelector('.viewer .ln:last-child .msg'); "
                  "return l && l.textContent; })()")
    assert last == inside[-1]
    local = b.eval("document.querySelector('#log-since').value")
    assert local == b.eval("(() => { const d = new Date(%s); const p = n => String(n)"
                           ".padStart(2, '0'); return d.getFullYear() + '-' + p(d.getMonth() + 1)"
                           " + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + "
                           "p(d.getMinutes()) + ':' + p(d.getSeconds()); })()" % json.dumps(since))
    href = b.eval("document.querySelector('#log-download').getAttribute('href')")
    assert "startTime=" in href and "endTime=" in href
    text = b.eval("fetch(%s).then(r => r.text())" % json.dumps(href))
    assert [line.split("\t")[-1] for line in text.splitlines()] == inside
    # Choosing a time in the input (the viewer's zone) sets the UTC bound in the URL.
    b.eval("(() => { const i = document.querySelector('#log-since'); i.value = %s; "
           "i.dispatchEvent(new Event('change', {bubbles: true})); })()" % json.dumps(local))
    b.wait("new URL(location.href).searchParams.get('since') === %s" % json.dumps(
        lo.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")))


def test_logs_follow_a_running_job_then_cancel_it(env, browser):
    b = browser
    b.goto(console(env, "jobs/long_job/logs?task=" + MASTER))
    b.wait("document.querySelector('#log-follow') && "
           "document.querySelector('#log-follow').textContent === 'following'")
    last = lambda: b.eval(  # noqa: E731
        "(() => { const m = document.querySelector('.viewer .ln:last-child .msg'); "
        "return m ? m.textContent : ''; })()")
    first = b.wait("(() => { const m = document.querySelector('.viewer .ln:last-child .msg'); "
                   "return m && m.textContent.startsWith('line ') && m.textContent; })()")
    # The trainer prints ten lines a second: the tail moves on without a reload.
    wait_for(lambda: last().startswith("line ") and
             int(last().split()[1]) >= int(first.split()[1]) + 10,
             timeout=15, what="the followed tail to move")
    # Cancel from the job page.
    b.click("#tab-overview")
    b.wait("document.querySelector('#job-cancel') && !document.querySelector('#job-cancel')"
           ".disabled")
    b.click("#job-cancel")
    b.wait("document.querySelector('#confirm-cancel')")
    b.click("#confirm-yes")
    env.wait_state("long_job", "CANCELLED", timeout=60)
    b.wait("document.querySelector('h1 .badge').textContent === 'CANCELLED'", timeout=15)


# --- the Trials tab and the Queue page (their own daemon: admission is not paused there) -----

# A tuning trainer: reports 5 intermediate values (steps 1..5) of an objective of its
# parameters, the last one the trial's result, and prints a line naming its trial.
TUNER = r"""
import math, os, sys
import hypertune
params = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
lr, layers, opt = float(params["lr"]), int(params["layers"]), params["opt"]
final = abs(math.log10(lr) + 2.5) + 0.1 * layers + (0.3 if opt == "sgd" else 0.0)
print("tuning trial %s starts" % os.environ["CLOUD_ML_TRIAL_ID"], flush=True)
ht = hypertune.HyperTune()
for step in range(1, 6):
    ht.report_hyperparameter_tuning_metric(hyperparameter_metric_tag="loss",
                                           metric_value=final * (1 + 1.0 / step) - final / 5,
                                           global_step=step)
"""

# argv: SECONDS. Sleeps, for the queue page's running job.
SLEEPER = r"""
import sys, time
print("sleeping", flush=True)
time.sleep(float(sys.argv[1]))
"""

TRIALS = 6
GPU_CUSTOM = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4",
              "masterConfig": {"acceleratorConfig": {"count": "1", "type": "NVIDIA_TESLA_T4"}}}


@pytest.fixture(scope="module")
def tenv(tmp_path_factory):
    if find_chromium() is None:
        pytest.fail("chromium is not installed (scripts/install-deps.sh installs it)")
    root = tmp_path_factory.mktemp("console-trials")
    data = root / "data"
    data.mkdir()
    cfg = root / "trainyardd.yaml"
    cfg.write_text("gpus: 2xNVIDIA_TESLA_T4\nnode_cpus: 16\nnode_memory: 64GiB\n"
                   "max_running_jobs: 1\n")
    d = Daemon(str(data), extra_args=["--config", str(cfg)]).start()
    tuner = upload_package(d, build_sdist(make_package(root / "tuner", TUNER, name="tuner")),
                           bucket="console-trials")
    d.sleeper = upload_package(
        d, build_sdist(make_package(root / "sleeper", SLEEPER, name="sleeper")),
        bucket="console-trials")
    body = {"jobId": "tune_job", "trainingInput": {
        "packageUris": [tuner], "pythonModule": "tuner.task", "region": "us-central1",
        "hyperparameters": {
            "goal": "MINIMIZE", "hyperparameterMetricTag": "loss", "maxTrials": TRIALS,
            "maxParallelTrials": 2, "algorithm": "RANDOM_SEARCH",
            "params": [
                {"parameterName": "lr", "type": "DOUBLE", "minValue": 0.0001, "maxValue": 0.1,
                 "scaleType": "UNIT_LOG_SCALE"},
                {"parameterName": "layers", "type": "INTEGER", "minValue": 1, "maxValue": 8,
                 "scaleType": "UNIT_LINEAR_SCALE"},
                {"parameterName": "opt", "type": "CATEGORICAL",
                 "categoricalValues": ["adam", "sgd"]}]}}}
    status, out = d.request("POST", JOBS, body)
    assert status == 200, out
    d.wait_state("tune_job", "SUCCEEDED", timeout=300)
    b = Browser()
    d.browser = b
    sign_in(b, d)
    b.take_errors()
    yield d
    b.close()
    stop_jobs(d)
    d.stop()


@pytest.fixture
def tbrowser(tenv, request):
    b = tenv.browser
    b.take_errors()
    yield b
    b.screenshot(os.path.join(ARTIFACTS, request.node.name + ".png"))
    # Both themes: the same page with the dark colour scheme.
    b.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme",
                                                         "value": "dark"}]})
    b.screenshot(os.path.join(ARTIFACTS, request.node.name + "-dark.png"))
    b.send("Emulation.setEmulatedMedia", {"features": []})
    errors = b.take_errors()
    assert not errors, "the page logged errors: %s" % errors


def api_trials(env, job, **params):
    q = urllib.parse.urlencode(params)
    status, body = env.request("GET", "%s/%s/trials?%s" % (JOBS, job, q))
    assert status == 200, body
    return body


def test_trials_api_fills_all_metrics_and_pages(tenv):
    job = tenv.job("tune_job")
    stored = job["trainingOutput"]["trials"]
    assert len(stored) == TRIALS and not any("allMetrics" in t for t in stored)
    page = api_trials(tenv, "tune_job", pageSize=4)
    assert [t["trialId"] for t in page["trials"]] == ["1", "2", "3", "4"]
    assert page["hyperparameterMetricTag"] == "loss"
    rest = api_trials(tenv, "tune_job", pageSize=4, pageToken=page["nextPageToken"])
    assert [t["trialId"] for t in rest["trials"]] == ["5", "6"] and "nextPageToken" not in rest
    for t in page["trials"] + rest["trials"]:
        same = next(s for s in stored if s["trialId"] == t["trialId"])
        steps = [m["trainingStep"] for m in t["allMetrics"]]
        assert steps == ["1", "2", "3", "4", "5"], t
        # The last report is the finalMetric; the rest of the trial is the job's own.
        assert t["allMetrics"][-1] == same["finalMetric"]
        assert {k: v for k, v in t.items() if k != "allMetrics"} == same
        assert list(t).index("allMetrics") == list(t).index("finalMetric") + 1
    one = api_trials(tenv, "tune_job", trialId="3")
    assert [t["trialId"] for t in one["trials"]] == ["3"]
    # Bad input names its parameter.
    for q, field in (("pageSize=-1", "pageSize"), ("pageToken=x", "pageToken"),
                     ("nope=1", "nope")):
        status, body = tenv.request("GET", "%s/tune_job/trials?%s" % (JOBS, q))
        assert status == 400 and field in body["error"]["message"], body
    status, _ = tenv.request("GET", "%s/no_such_job/trials" % JOBS)
    assert status == 404
    # The CLI reads it too.
    out = tenv.cli("jobs", "trials", "tune_job").stdout
    assert out.splitlines()[0].split()[:5] == ["TRIAL", "STATE", "OBJECTIVE", "STEP", "REPORTS"]
    assert len(out.splitlines()) == TRIALS + 1
    js = json.loads(tenv.cli("jobs", "trials", "tune_job", "--trial", "2",
                             "--format", "json").stdout)
    assert len(js["trials"]) == 1 and len(js["trials"][0]["allMetrics"]) == 5


def drawn(b, plot, what="drawn"):
    """What a canvas plot drew: its data-drawn count, or the ids of data-in / data-best."""
    v = b.eval("(() => { const c = document.querySelector('#%s canvas'); "
               "return c ? (c.dataset.%s ?? null) : null; })()" % (plot, what))
    if v is None or what == "best":
        return v
    return int(v) if what == "drawn" else [x for x in v.split(",") if x]


def painted(b, plot):
    """How many of a canvas plot's pixels are not transparent (0: it drew nothing)."""
    return b.eval("(() => { const c = document.querySelector('#%s canvas'); "
                  "const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; "
                  "let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })()"
                  % plot)


def trial_rows(b):
    return b.eval("Array.from(document.querySelectorAll('#trials-body tr'))"
                  ".map(r => r.dataset.trial)")


def test_trials_tab_table_best_sort_plots(tenv, tbrowser):
    b = tbrowser
    trials = tenv.job("tune_job")["trainingOutput"]["trials"]
    value = {t["trialId"]: t["finalMetric"]["objectiveValue"] for t in trials}
    best = min(value, key=lambda k: (value[k], int(k)))  # goal MINIMIZE
    b.goto(console(tenv, "jobs/tune_job"))
    b.wait("document.querySelector('#tab-trials')")
    b.click("#tab-trials")
    b.wait("location.pathname.endsWith('/jobs/tune_job/trials') && "
           "document.querySelectorAll('#trials-body tr').length === %d" % (TRIALS - 1))
    assert b.eval("document.querySelector('#trials-best tr').dataset.trial") == best
    assert b.eval("document.querySelector('#trials-best-id').textContent") == best
    assert b.eval("document.querySelector('#trials-goal').textContent") == "MINIMIZE"
    # Default order: best first for the goal (ascending loss), the best pinned above.
    others = sorted((k for k in value if k != best), key=lambda k: (value[k], int(k)))
    assert trial_rows(b) == others
    # Sort by a parameter, both ways; the best stays pinned.
    lr = {t["trialId"]: float(t["hyperparameters"]["lr"]) for t in trials}
    b.click("th a[data-sort=\"p:lr\"]")
    b.wait("new URL(location.href).searchParams.get('sort') === 'p:lr'")
    assert trial_rows(b) == sorted(others, key=lambda k: (lr[k], int(k)))
    b.click("th a[data-sort=\"p:lr\"]")
    b.wait("new URL(location.href).searchParams.get('sort') === '-p:lr'")
    assert trial_rows(b) == sorted(others, key=lambda k: (-lr[k], int(k)))
    assert b.eval("document.querySelector('#trials-best tr').dataset.trial") == best
    # Plots (canvas): a line per trial in the parallel coordinates, a point per trial in the
    # scatter, a curve per trial from allMetrics; each canvas has pixels on it.
    assert drawn(b, "trials-pc") == TRIALS and drawn(b, "trials-scatter") == TRIALS
    b.wait("document.querySelector('#trials-curves canvas').dataset.drawn === '%d'" % TRIALS)
    for plot in ("trials-pc", "trials-scatter", "trials-curves"):
        assert painted(b, plot) > 500, plot
    assert drawn(b, "trials-pc", "best") == best and drawn(b, "trials-curves", "best") == best
    # Another parameter for the scatter plot (in the URL).
    b.eval("(() => { const s = document.querySelector('#scatter-param'); s.value = 'p:layers'; "
           "s.dispatchEvent(new Event('change', {bubbles: true})); })()")
    b.wait("new URL(location.href).searchParams.get('x') === 'p:layers'")
    # Keyboard: j selects the first row (the best), j again the next.
    b.eval("document.activeElement && document.activeElement.blur()")
    b.eval("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'j'}))")
    b.wait("new URL(location.href).searchParams.get('trial') === %s" % json.dumps(best))
    b.eval("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'j'}))")
    b.wait("new URL(location.href).searchParams.get('trial') === %s" % json.dumps(
        sorted(others, key=lambda k: (-lr[k], int(k)))[0]))
    assert b.eval("document.querySelector('#trials-curves path.sel') !== null")
    assert b.eval("document.querySelector('#trial-detail') !== null")
    # A click on a point of the canvas selects its trial: the best one's point, where the
    # overlay drew it when j selected it.
    b.eval("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'k'}))")
    b.wait("new URL(location.href).searchParams.get('trial') === %s" % json.dumps(best))
    # (Its offset in the plot: the page's layout changes when the selection is cleared.)
    dx, dy = b.eval("(() => { const c = document.querySelector('#trials-scatter circle.sel'); "
                    "const r = c.getBoundingClientRect(); const p = document.querySelector("
                    "'#trials-scatter').getBoundingClientRect(); "
                    "return [r.left + r.width / 2 - p.left, r.top + r.height / 2 - p.top]; })()")
    b.eval("history.replaceState(null, '', location.pathname + '?x=p:layers'); "
           "window.dispatchEvent(new PopStateEvent('popstate'))")
    b.wait("!document.querySelector('#trial-detail')")
    x, y = b.eval("(() => { const p = document.querySelector('#trials-scatter'); "
                  "p.scrollIntoView({block: 'center'}); const r = p.getBoundingClientRect(); "
                  "return [r.left + %f, r.top + %f]; })()" % (dx, dy))
    b.mouse_click(x, y)
    b.wait("new URL(location.href).searchParams.get('trial') === %s" % json.dumps(best),
           what="the clicked point's trial selected")


def brush(b, axis, lo, hi):
    """Drags on an axis of the parallel coordinates from position lo to hi (0 = bottom)."""
    b.eval("""((axis, lo, hi) => {
      const area = document.querySelector('[data-axis-area="' + axis + '"]');
      const r = area.getBoundingClientRect();
      const y = (t) => r.top + 4 * r.height / (r.height + 8) + (1 - t) * (r.height - 8 * r.height / (r.height + 8));
      const x = r.left + r.width / 2;
      const ev = (type, t) => area.dispatchEvent(new PointerEvent(type, {bubbles: true,
        clientX: x, clientY: y(t), pointerId: 1}));
      ev('pointerdown', lo); ev('pointermove', (lo + hi) / 2); ev('pointermove', hi);
      ev('pointerup', hi);
    })(%s, %f, %f)""" % (json.dumps(axis), lo, hi))


def test_trials_brushing_filters(tenv, tbrowser):
    b = tbrowser
    trials = tenv.job("tune_job")["trainingOutput"]["trials"]
    b.goto(console(tenv, "jobs/tune_job/trials"))
    b.wait("document.querySelector('#trials-pc canvas[data-drawn=\"%d\"]')" % TRIALS)
    assert len(drawn(b, "trials-pc", "in")) == TRIALS
    # Brush the upper half of the categorical axis `opt`: only the sgd trials stay.
    brush(b, "p:opt", 0.6, 1.0)
    b.wait("new URL(location.href).searchParams.get('brush')")
    sgd = sorted(t["trialId"] for t in trials if t["hyperparameters"]["opt"] == "sgd")
    b.wait("document.querySelector('#trials-pc canvas').dataset.in.split(',').length === %d"
           % len(sgd))
    assert sorted(drawn(b, "trials-pc", "in")) == sgd
    assert sorted(drawn(b, "trials-scatter", "in")) == sgd
    body = set(trial_rows(b))
    assert body <= set(sgd) and len(body) >= len(sgd) - 1  # the best may be pinned above
    # The view is in the URL: a reload keeps the brush.
    b.goto(b.eval("location.href"))
    b.wait("document.querySelector('#trials-pc canvas[data-drawn]') && document.querySelector("
           "'#trials-pc canvas').dataset.in.split(',').length === %d" % len(sgd))
    b.wait("document.querySelector('#trials-pc rect.brush[data-brush=\"p:opt\"]')")
    b.click("#trials-clear")
    b.wait("document.querySelector('#trials-pc canvas').dataset.in.split(',').length === %d"
           % TRIALS)
    # The keyboard form: focus the axis, a key starts a range in the middle, arrows move it, +
    # widens it, Escape clears it. The adam trials sit at the bottom of `opt`, sgd at the top.
    adam = sorted(t["trialId"] for t in trials if t["hyperparameters"]["opt"] == "adam")
    b.eval("document.querySelector('[data-axis-area=\"p:opt\"]').focus()")
    b.press("ArrowDown")
    b.wait("new URL(location.href).searchParams.get('brush') === 'p:opt:0.400:0.600'")
    for _ in range(4):
        b.press("ArrowDown")
    b.wait("new URL(location.href).searchParams.get('brush') === 'p:opt:0.000:0.200'")
    b.wait("document.querySelector('#trials-pc canvas').dataset.in === %s"
           % json.dumps(",".join(sorted(adam, key=int))))
    b.press("+")
    b.wait("new URL(location.href).searchParams.get('brush') === 'p:opt:0.000:0.250'")
    assert b.eval("document.activeElement.dataset.axisArea") == "p:opt"
    b.press("Escape")
    b.wait("!new URL(location.href).searchParams.get('brush')")


def test_trials_page_at_common_widths(tenv, tbrowser):
    """The Trials tab does not scroll sideways at any common width (its table scrolls in its
    own box), and its canvases are redrawn to their new size; screenshots in widths/."""
    b = tbrowser
    b.goto(console(tenv, "jobs/tune_job/trials"))
    b.wait("document.querySelector('#trials-pc canvas[data-drawn=\"%d\"]')" % TRIALS)
    try:
        for width in WIDTHS:
            b.viewport(width, 900)
            b.wait("window.innerWidth === %d" % width)
            over = b.eval("document.documentElement.scrollWidth - "
                          "document.documentElement.clientWidth")
            assert over <= 0, "trials at %d px scrolls sideways by %d px" % (width, over)
            # The canvas's pixels follow its box (a redraw after the resize).
            b.wait("(() => { const c = document.querySelector('#trials-pc canvas'); return "
                   "Math.abs(c.width - c.getBoundingClientRect().width * devicePixelRatio) < 2; "
                   "})()", what="the parallel coordinates redrawn at %d px" % width)
            assert painted(b, "trials-pc") > 200
            b.screenshot(os.path.join(ARTIFACTS, "widths", "trials-%d.png" % width))
    finally:
        b.viewport(None, None)


def test_trial_logs_link_filters_by_trial(tenv, tbrowser):
    b = tbrowser
    b.goto(console(tenv, "jobs/tune_job/trials"))
    b.wait("document.querySelector('#trials-body tr[data-trial=\"3\"] a.trial-logs')")
    b.click("#trials-body tr[data-trial=\"3\"] a.trial-logs, "
            "#trials-best tr[data-trial=\"3\"] a.trial-logs")
    b.wait("location.pathname.endsWith('/jobs/tune_job/logs') && "
           "new URL(location.href).searchParams.get('trial') === '3'")
    summary = tenv.request("GET", "%s/tune_job/logs:summary?trialId=3" % JOBS)[1]
    n = int(summary["lineCount"])
    assert n > 0
    b.wait("document.querySelector('#log-count').textContent === '%s lines'" % format(n, ","))
    b.wait("document.querySelector('#log-trial') && "
           "document.querySelector('#log-trial').value === '3'")
    texts = b.wait("(() => { const r = Array.from(document.querySelectorAll('.viewer .ln'));"
                   " return r.length && r.every(x => !x.classList.contains('loading')) && "
                   "r.map(x => x.querySelector('.tk').textContent + '|' + "
                   "x.querySelector('.msg').textContent); })()")
    assert any("tuning trial 3 starts" in t for t in texts), texts
    assert not any("tuning trial 2 starts" in t for t in texts)
    assert all(t.split("|")[0].endswith(" t3") for t in texts), texts


def test_queue_page_shows_running_and_waiting(tenv, tbrowser):
    b = tbrowser
    for job_id in ("gpu_runner", "gpu_waiter"):
        body = job_body(job_id, tenv.sleeper, args=["120"], module="sleeper.task", **GPU_CUSTOM)
        status, out = tenv.request("POST", JOBS, body)
        assert status == 200, out
    tenv.wait_state("gpu_runner", "RUNNING", timeout=120)
    api = tenv.request("GET", JOBS + ":queue")[1]
    assert api["admission"] == {"paused": False, "maxRunningJobs": 1}
    assert [j["jobId"] for j in api["admitted"]] == ["gpu_runner"]
    runner = api["admitted"][0]
    assert runner["replicas"][0]["taskName"] == MASTER and runner["replicas"][0]["gpus"] == 1
    held = runner["replicas"][0]["gpuIndices"][0]
    gpu = next(g for g in api["gpus"] if g["index"] == held)
    assert gpu["inUse"] and gpu["jobId"] == "gpu_runner" and gpu["taskName"] == MASTER
    assert api["node"]["gpus"] == 2 and api["node"]["freeGpus"] == 1
    assert api["node"]["scope"] == "node" and api["node"]["vcpus"] > 0
    waiter = api["queued"][0]
    assert waiter["jobId"] == "gpu_waiter" and waiter["jobPosition"] == "1"
    assert "running-jobs limit" in waiter["waitReason"]
    assert waiter["waitReason"] == tenv.job("gpu_waiter")["waitReason"]

    b.goto(console(tenv, "jobs"))
    b.wait("document.querySelector('#nav-queue')")
    b.click("#nav-queue")
    b.wait("location.pathname.endsWith('/queue') && "
           "document.querySelector('#queue-running tr[data-job=\"gpu_runner\"]')")
    row = b.eval("document.querySelector('#queue-running tr[data-job=\"gpu_runner\"]')"
                 ".textContent")
    assert "RUNNING" in row and MASTER in row and "on GPU %d" % held in row
    assert b.eval("document.querySelector('#queue-gpus tr[data-gpu=\"%d\"]').textContent"
                  % held).find("gpu_runner") >= 0
    reason = b.wait("document.querySelector('#queue-waiting tr[data-job=\"gpu_waiter\"] "
                    ".reason') && document.querySelector('#queue-waiting "
                    "tr[data-job=\"gpu_waiter\"] .reason').textContent")
    assert reason == waiter["waitReason"]
    assert b.eval("document.querySelector('#queue-admission-state').textContent") == "admitting"
    assert "1 of 2 in use" in b.eval("document.querySelector('#cap-gpu').textContent")
    # The CLI shows the same.
    out = tenv.cli("jobs", "queue").stdout
    assert "Admission: admitting" in out and "gpu_runner" in out and "gpu_waiter" in out
    assert "running-jobs limit" in out
    # The job pages say the same: why the queued one waits, what the running one holds.
    b.goto(console(tenv, "jobs/gpu_waiter"))
    wait = b.wait("document.querySelector('#ov-wait td') && "
                  "document.querySelector('#ov-wait td').textContent")
    assert wait == waiter["waitReason"]
    assert b.eval("document.querySelector('#ov-position td').textContent") == "1"
    b.goto(console(tenv, "jobs/gpu_runner"))
    holds = b.wait("document.querySelector('#ov-allocation td') && "
                   "document.querySelector('#ov-allocation td').textContent")
    assert "1 GPU (GPU %d)" % held in holds, holds
    b.goto(console(tenv, "queue"))
    b.wait("document.querySelector('#queue-admission-state')")
    # Paused admission shows on the page at the next refresh.
    tenv.request("PUT", "/v1/admin/admission", {"paused": True})
    b.wait("document.querySelector('#queue-admission-state').textContent === 'paused'",
           timeout=10)
    tenv.request("PUT", "/v1/admin/admission", {"paused": False})
    for job_id in ("gpu_runner", "gpu_waiter"):
        tenv.request("POST", "%s/%s:cancel" % (JOBS, job_id), {})


# --- storage browser, clone, labels, log search and download, fields= and ETag/304 ---------

def auth_get(env, path, headers=None):
    h = {"Authorization": "Bearer " + env.token}
    h.update(headers or {})
    return raw_get(env, path, h)


def allow_downloads(b, path):
    """Saves the page's downloads into `path` (headless Chromium refuses them otherwise)."""
    os.makedirs(path, exist_ok=True)
    b.call("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(path),
                                           "eventsEnabled": True})


def downloaded(path, name, timeout=30):
    """The bytes of a finished download named `name` in `path`."""
    target = os.path.join(str(path), name)
    wait_for(lambda: os.path.exists(target) and
             not os.path.exists(target + ".crdownload"), timeout=timeout,
             what="the download of %s" % name)
    with open(target, "rb") as f:
        return f.read()


def put_object(env, bucket, name, data):
    status, body = env.request("POST", "/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (
        bucket, urllib.parse.quote(name, safe="")), raw=data)
    assert status == 200, body


def test_fields_masks_get_and_list_answers(env):
    status, full = env.request("GET", JOBS + "?pageSize=5")
    assert status == 200
    status, masked = env.request(
        "GET", JOBS + "?pageSize=5&fields=" + urllib.parse.quote("jobs(jobId,state),nextPageToken"))
    assert status == 200, masked
    assert masked == {"jobs": [{"jobId": j["jobId"], "state": j["state"]} for j in full["jobs"]],
                      "nextPageToken": full["nextPageToken"]}
    status, job = env.request("GET", JOBS + "/ok_job?fields=jobId,labels,trainingInput/args")
    assert status == 200, job
    assert job == {"jobId": "ok_job", "labels": env.job("ok_job")["labels"],
                   "trainingInput": {"args": ["3000", "0", "0"]}}
    # Routes that refuse unknown parameters take it too (it is a system parameter).
    status, summary = env.request("GET", JOBS + "/ok_job/logs:summary?fields=lineCount")
    assert status == 200 and list(summary) == ["lineCount"], summary
    # A mask that does not parse: 400 INVALID_ARGUMENT naming `fields`.
    for bad in ("jobs(jobId", "jobs//state", "a,,b", ""):
        status, err = env.request("GET", JOBS + "?fields=" + urllib.parse.quote(bad))
        assert status == 400, (bad, err)
        assert err["error"]["status"] == "INVALID_ARGUMENT"
        assert err["error"]["details"][0]["fieldViolations"][0]["field"] == "fields"
        assert "fields" in err["error"]["message"]


def test_etag_and_304_on_the_routes_the_console_polls(env):
    for path in (JOBS + "/ok_job", JOBS + "?pageSize=50", JOBS + ":summary",
                 JOBS + "?pageSize=50&fields=" + urllib.parse.quote("jobs(jobId,state)"),
                 JOBS + "/ok_job/logs:summary"):
        status, h, body = auth_get(env, path)
        assert status == 200 and body, path
        etag = h["etag"]
        assert etag.startswith('"') and h["cache-control"] == "private, no-cache"
        for sent in (etag, "W/" + etag, '"other", ' + etag):
            status, h2, body2 = auth_get(env, path, {"If-None-Match": sent})
            assert status == 304 and body2 == b"" and h2["etag"] == etag, (path, sent)
        status, _, again = auth_get(env, path, {"If-None-Match": '"not-it"'})
        assert status == 200 and again == body
    # A change makes the old tag miss: the new answer comes with a new tag.
    status, h, _ = auth_get(env, JOBS + "/ok_job")
    job = env.job("ok_job")
    status, _ = env.request("PATCH", JOBS + "/ok_job?updateMask=labels",
                            {"labels": dict(job["labels"], etagtest="1"), "etag": job["etag"]})
    assert status == 200
    status, h2, body = auth_get(env, JOBS + "/ok_job", {"If-None-Match": h["etag"]})
    assert status == 200 and h2["etag"] != h["etag"]
    assert json.loads(body)["labels"]["etagtest"] == "1"
    job = env.job("ok_job")
    status, _ = env.request("PATCH", JOBS + "/ok_job?updateMask=labels",
                            {"labels": {"team": "vision"}, "etag": job["etag"]})
    assert status == 200
    # Errors carry no tag.
    status, h, _ = auth_get(env, JOBS + "/nope")
    assert status == 404 and "etag" not in h


def test_log_search_and_download_api(env):
    n = int(env.request("GET", "%s/ok_job/logs:summary?taskName=%s" % (JOBS, MASTER))[1][
        "lineCount"])
    messages = [e["jsonPayload"]["message"] for e in env.logs("ok_job")
                if e["resource"]["labels"]["task_name"] == MASTER]
    assert len(messages) == n
    want = [i for i, m in enumerate(messages) if "line 29" in m.lower()]
    assert len(want) == 111  # line 29, 290..299, 2900..2999
    q = "%s/ok_job/logs:search?taskName=%s&text=%s" % (JOBS, MASTER, urllib.parse.quote("LINE 29"))
    status, first = env.request("GET", q + "&countMatches=true")
    assert status == 200, first
    assert [int(m["lineOffset"]) for m in first["matches"]] == want[:1]
    assert first["totalMatches"] == "111" and first["matchIndex"] == "0"
    assert first["matches"][0]["entry"]["jsonPayload"]["message"] == messages[want[0]]
    status, page = env.request("GET", q + "&afterLineOffset=%d&pageSize=1000" % want[0])
    assert [int(m["lineOffset"]) for m in page["matches"]] == want[1:]
    status, back = env.request("GET", q + "&beforeLineOffset=%d&pageSize=3&countMatches=true"
                               % want[50])
    assert [int(m["lineOffset"]) for m in back["matches"]] == want[47:50][::-1]
    assert back["matchIndex"] == "49"
    status, err = env.request("GET", q + "&afterLineOffset=1&beforeLineOffset=5")
    assert status == 400 and "beforeLineOffset" in err["error"]["message"]
    # The download: every line of the task as text, streamed, never compressed by the server.
    status, h, body = auth_get(env, "%s/ok_job/logs:download?taskName=%s&format=message" % (
        JOBS, MASTER), {"Accept-Encoding": "gzip, deflate, br"})
    assert status == 200
    assert h["content-type"] == "text/plain; charset=utf-8" and "content-encoding" not in h
    assert h["content-disposition"] == 'attachment; filename="ok_job-master-replica-0.log"'
    assert h["transfer-encoding"] == "chunked"
    assert body.decode().split("\n")[:-1] == messages
    status, h, body = auth_get(env, "%s/ok_job/logs:download" % JOBS)
    lines = body.decode().split("\n")[:-1]
    assert len(lines) == int(env.request("GET", JOBS + "/ok_job/logs:summary")[1]["lineCount"])
    assert any(line.split("\t")[1:] == ["INFO", MASTER, "line 2999"] for line in lines)
    status, _, _ = auth_get(env, JOBS + "/nope/logs:download")
    assert status == 404
    # The CLI reads both.
    out = env.cli("jobs", "logs", "ok_job", "--download", "--task-name", MASTER, "--format",
                  "message").stdout
    assert out.split("\n")[:-1] == messages
    out = env.cli("jobs", "logs", "ok_job", "--task-name", MASTER, "--search", "line 299").stdout
    found = [line.split(":", 1)[0] for line in out.splitlines()]
    assert found == [str(i + 1) for i, m in enumerate(messages) if "line 299" in m]


def test_storage_browser_and_download(env, browser, tmp_path):
    b = browser
    bucket = "console-itest"
    put_object(env, bucket, "data/a.txt", b"hello from the storage browser\n" * 100)
    put_object(env, bucket, "data/sub/b.bin", bytes(range(256)))
    for i in range(120):
        put_object(env, bucket, "many/obj_%03d.txt" % i, b"x" * i)
    b.goto(console(env, "storage"))
    b.wait("document.querySelector('#buckets-table tr[data-bucket=\"%s\"] a')" % bucket)
    b.click("#buckets-table tr[data-bucket=\"%s\"] a" % bucket)
    b.wait("document.querySelector('#objects-table tr[data-folder=\"data/\"]')")
    folders = b.eval("Array.from(document.querySelectorAll('#objects-table tr[data-folder]'))"
                     ".map(r => r.dataset.folder)")
    assert folders == ["data/", "many/", "packages/"]
    b.click("#objects-table tr[data-folder=\"data/\"] a")
    b.wait("document.querySelector('#objects-table tr[data-object=\"data/a.txt\"]')")
    assert b.eval("location.pathname") == "/console/storage/%s/data/" % bucket
    assert b.eval("document.querySelector('#storage-location').textContent") == \
        "gs://%s/data/" % bucket
    assert b.eval("Array.from(document.querySelectorAll('#objects-table tr[data-folder]'))"
                  ".map(r => r.dataset.folder)") == ["data/sub/"]
    row = "#objects-table tr[data-object=\"data/a.txt\"]"
    assert b.eval("document.querySelector('%s td:nth-child(2)').title" % row) == "3,100 bytes"
    # The link streams the object; the session cookie authorizes the GET.
    allow_downloads(b, tmp_path)
    b.click(row + " a.download")
    assert downloaded(tmp_path, "a.txt") == b"hello from the storage browser\n" * 100
    status, h, _ = raw_get(env, "/storage/v1/b/%s/o/data%%2Fa.txt?alt=media" % bucket,
                           {"Authorization": "Bearer " + env.token})
    assert status == 200 and h["content-security-policy"].startswith("sandbox")
    # Into a sub-folder and back through the crumbs.
    b.click("#objects-table tr[data-folder=\"data/sub/\"] a")
    b.wait("document.querySelector('#objects-table tr[data-object=\"data/sub/b.bin\"]')")
    b.click("#storage-crumbs a[data-prefix=\"data/\"]")
    b.wait("document.querySelector('#objects-table tr[data-object=\"data/a.txt\"]')")
    # 120 objects: pages of 100.
    b.goto(env.url + "/console/storage/%s/many/" % bucket)
    b.wait("document.querySelectorAll('#objects-table tr[data-object]').length === 100")
    first = b.eval("Array.from(document.querySelectorAll('#objects-table tr[data-object]'))"
                   ".map(r => r.dataset.object)")
    b.click("#objects-next")
    b.wait("document.querySelectorAll('#objects-table tr[data-object]').length === 20")
    second = b.eval("Array.from(document.querySelectorAll('#objects-table tr[data-object]'))"
                    ".map(r => r.dataset.object)")
    assert first + second == ["many/obj_%03d.txt" % i for i in range(120)]
    b.click("#objects-prev")
    b.wait("document.querySelectorAll('#objects-table tr[data-object]').length === 100")


def test_clone_a_job_with_an_edited_argument(env, browser):
    b = browser
    source = env.job("ok_job")
    b.goto(console(env, "jobs/ok_job"))
    b.wait("document.querySelector('#job-clone')")
    b.click("#job-clone")
    spec = json.loads(b.wait("document.querySelector('#clone-spec') && "
                             "document.querySelector('#clone-spec').value"))
    assert spec["jobId"].startswith("ok_job_") and spec["jobId"] != "ok_job"
    assert spec["trainingInput"] == source["trainingInput"]
    assert spec["labels"] == source["labels"]
    # A refused spec: the API's message and the field it names.
    bad = dict(spec, jobId="ok_clone_bad", trainingInput=dict(spec["trainingInput"], args=[7]))
    b.fill("#clone-spec", json.dumps(bad, indent=2))
    b.submit("#clone-form")
    field = b.wait("document.querySelector('#clone-fields li') && "
                   "document.querySelector('#clone-fields li').dataset.field")
    assert field == "job.training_input.args[0]"
    assert "TYPE_STRING" in b.eval("document.querySelector('#clone-error').textContent")
    b.take_errors()  # the expected 400
    # An edited argument: the new job has it, and everything else of the source's spec.
    good = dict(spec, jobId="ok_clone", trainingInput=dict(spec["trainingInput"],
                                                           args=["5", "0", "0"]))
    b.fill("#clone-spec", json.dumps(good, indent=2))
    b.submit("#clone-form")
    b.wait("location.pathname === '/console/projects/%s/jobs/ok_clone'" % PROJECT)
    b.wait("document.querySelector('#job-id').textContent === 'ok_clone'")
    clone = env.job("ok_clone")
    assert clone["trainingInput"] == dict(source["trainingInput"], args=["5", "0", "0"])
    assert clone["labels"] == source["labels"]
    status, _ = env.request("POST", JOBS + "/ok_clone:cancel", {})  # admission is paused
    assert status == 200


def label_row(b, key):
    """The selector of the label editor's row holding `key`."""
    i = b.wait("(() => { const r = Array.from(document.querySelectorAll('#labels-form tr'))"
               ".find(r => r.querySelector('.label-key').value === %s); "
               "return r ? r.dataset.row : false; })()" % json.dumps(key))
    return "#labels-form tr[data-row=\"%s\"]" % i


def test_edit_labels_with_the_etag(env, browser):
    b = browser
    b.goto(console(env, "jobs/ok_job"))
    b.wait("document.querySelector('#labels-edit')")
    b.click("#labels-edit")
    b.wait("document.querySelector('#labels-form tr[data-row=\"0\"] .label-key').value === 'team'")
    b.fill("#labels-form tr[data-row=\"0\"] .label-value", "speech")
    b.click("#label-add")
    b.wait("document.querySelector('#labels-form tr[data-row=\"1\"]')")
    b.fill("#labels-form tr[data-row=\"1\"] .label-key", "owner")
    b.fill("#labels-form tr[data-row=\"1\"] .label-value", "alice")
    b.submit("#labels-form")
    b.wait("document.querySelector('#job-labels .label[data-key=\"owner\"]')")
    assert env.job("ok_job")["labels"] == {"team": "speech", "owner": "alice"}
    # Someone else changes the job while the editor is open: 409, a clear message, the job
    # read again, the draft kept; saving again applies it.
    b.click("#labels-edit")
    b.wait("document.querySelector('#labels-form')")
    job = env.job("ok_job")
    status, _ = env.request("PATCH", JOBS + "/ok_job?updateMask=labels",
                            {"labels": {"team": "other"}, "etag": job["etag"]})
    assert status == 200
    b.fill(label_row(b, "owner") + " .label-value", "bob")
    b.submit("#labels-form")
    msg = b.wait("document.querySelector('#labels-error') && "
                 "document.querySelector('#labels-error').textContent")
    assert "changed since you began editing" in msg and "team=other" in msg
    assert env.job("ok_job")["labels"] == {"team": "other"}
    b.take_errors()  # the expected 409
    b.submit("#labels-form")
    b.wait("document.querySelector('#job-labels .label[data-key=\"owner\"]') && "
           "document.querySelector('#job-labels .label[data-key=\"owner\"]').textContent === "
           "'owner=bob'")
    assert env.job("ok_job")["labels"] == {"team": "speech", "owner": "bob"}
    # Back to the fixture's labels (removing a row).
    b.click("#labels-edit")
    b.wait("document.querySelector('#labels-form')")
    b.click(label_row(b, "owner") + " .label-remove")
    b.fill(label_row(b, "team") + " .label-value", "vision")
    b.submit("#labels-form")
    b.wait("!document.querySelector('#job-labels .label[data-key=\"owner\"]') && "
           "document.querySelector('#job-labels .label[data-key=\"team\"]')")
    assert env.job("ok_job")["labels"] == {"team": "vision"}


def selected_line(b):
    return b.eval("(() => { const e = document.querySelector('.viewer .ln.sel'); "
                  "return e ? Number(e.dataset.line) : null; })()")


def test_log_search_next_and_previous(env, browser):
    b = browser
    q = "%s/ok_job/logs:search?taskName=%s&text=line%%2029&pageSize=1000" % (JOBS, MASTER)
    want = [int(m["lineOffset"]) + 1 for m in env.request("GET", q)[1]["matches"]]
    assert len(want) == 111
    b.goto(console(env, "jobs/ok_job/logs?task=%s#line=1" % MASTER))
    b.wait("document.querySelector('.viewer .ln.sel[data-line=\"1\"]')")
    b.fill("#log-search", "LINE 29")
    b.submit("#log-search-form")
    b.wait("document.querySelector('#log-search-status').textContent === '1 of 111'")
    assert selected_line(b) == want[0] and b.eval("location.hash") == "#line=%d" % want[0]
    assert b.eval("new URL(location.href).searchParams.get('q')") == "LINE 29"
    marked = b.eval("document.querySelector('.viewer .ln.sel mark').textContent")
    assert marked == "line 29"
    b.click("#log-search-next")
    b.wait("document.querySelector('#log-search-status').textContent === '2 of 111'")
    assert selected_line(b) == want[1]
    # Far down the log (not loaded yet): the server finds it.
    b.fill("#log-jump", "2950")
    b.submit(".viewer form.inline")
    b.wait("document.querySelector('.viewer .ln.sel[data-line=\"2950\"]')")
    b.click("#log-search-next")
    k = want.index(min(w for w in want if w > 2950))
    b.wait("document.querySelector('#log-search-status').textContent === '%d of 111'" % (k + 1))
    assert selected_line(b) == want[k]
    b.click("#log-search-prev")
    b.wait("document.querySelector('#log-search-status').textContent === '%d of 111'" % k)
    assert selected_line(b) == want[k - 1]
    # Before the first match, previous goes round to the last.
    b.fill("#log-jump", "2")
    b.submit(".viewer form.inline")
    b.wait("document.querySelector('.viewer .ln.sel[data-line=\"2\"]')")
    b.click("#log-search-prev")
    b.wait("document.querySelector('#log-search-status').textContent === "
           "'111 of 111 (from the bottom)'")
    assert selected_line(b) == want[-1]
    b.fill("#log-search", "no such text anywhere")
    b.submit("#log-search-form")
    b.wait("document.querySelector('#log-search-status').textContent === 'no match'")


def test_log_download_from_the_viewer(env, browser, tmp_path):
    b = browser
    b.goto(console(env, "jobs/ok_job/logs?task=" + MASTER))
    b.wait("document.querySelector('#log-count').textContent.endsWith(' lines')")
    allow_downloads(b, tmp_path)
    b.click("#log-download")
    text = downloaded(tmp_path, "ok_job-master-replica-0.log").decode()
    lines = text.split("\n")[:-1]
    n = int(env.request("GET", "%s/ok_job/logs:summary?taskName=%s" % (JOBS, MASTER))[1][
        "lineCount"])
    assert len(lines) == n
    first = api_logs(env, "ok_job", lineOffset=0, pageSize=1, taskName=MASTER)["entries"][0]
    assert lines[0] == "\t".join([first["timestamp"], first["severity"], MASTER,
                                  first["jsonPayload"]["message"]])
    last = api_logs(env, "ok_job", lineOffset=n - 1, pageSize=1, taskName=MASTER)["entries"][0]
    assert lines[-1].endswith("\t" + last["jsonPayload"]["message"])
    assert any(line.endswith("\tline 2999") for line in lines)


# --- usability: widths, keyboard, themes, time zones, empty states, errors, a denied action --

PAGES = [  # (name, path under /console/, what shows the page is ready)
    ("jobs", "projects/%s/jobs" % PROJECT, "#jobs-table"),
    ("job", "projects/%s/jobs/ok_job" % PROJECT, "#job-history"),
    ("logs", "projects/%s/jobs/ok_job/logs" % PROJECT, ".viewer .ln:not(.loading)"),
    ("json", "projects/%s/jobs/ok_job/json" % PROJECT, "#job-json"),
    ("clone", "projects/%s/jobs:new?from=ok_job" % PROJECT, "textarea.spec"),
    ("queue", "projects/%s/queue" % PROJECT, "#queue-capacity"),
    ("storage", "projects/%s/storage" % PROJECT, "#buckets-table, #buckets-empty"),
    ("bucket", "storage/console-itest", "#objects-table, #objects-empty"),
]
WIDTHS = (375, 768, 1280, 1920)


def test_every_page_is_readable_at_common_widths(env, browser):
    """No page scrolls sideways at phone, tablet, laptop and desktop widths (wide tables scroll
    in their own box), text stays at least 12 px; a screenshot of each page at each width goes
    to the artifacts (widths/PAGE-WIDTH.png)."""
    b = browser
    try:
        for name, path, ready in PAGES:
            b.goto(env.url + "/console/" + path)
            b.wait("document.querySelector(%s)" % json.dumps(ready), what=name + " ready")
            for width in WIDTHS:
                b.viewport(width, 900)
                b.wait("window.innerWidth === %d" % width)
                over = b.eval("document.documentElement.scrollWidth - "
                              "document.documentElement.clientWidth")
                wide = b.eval("""Array.from(document.querySelectorAll('body *')).filter(e => {
                  const r = e.getBoundingClientRect(); return r.width && r.right >
                  document.documentElement.clientWidth + 0.5 && !e.closest('table'); })
                  .slice(0, 5).map(e => e.tagName + '#' + e.id + '.' + e.className)""")
                assert over <= 0, "%s at %d px scrolls sideways by %d px: %s" % (
                    name, width, over, wide)
                small = b.eval("""Array.from(document.querySelectorAll('main *, header *'))
                  .filter(e => e.childNodes.length && Array.from(e.childNodes).some(
                    n => n.nodeType === 3 && n.textContent.trim()) && e.getClientRects().length)
                  .map(e => parseFloat(getComputedStyle(e).fontSize)).filter(f => f < 11.5).length""")
                assert small == 0, "%s at %d px has text under 12 px" % (name, width)
                b.screenshot(os.path.join(ARTIFACTS, "widths", "%s-%d.png" % (name, width)))
            b.viewport(None, None)
    finally:
        b.viewport(None, None)


def focused(b):
    return b.eval("(() => { const e = document.activeElement; if (!e || e === document.body) "
                  "return ''; return e.id || e.getAttribute('href') || e.getAttribute('aria-label')"
                  " || e.tagName; })()")


def tab_until(b, predicate, limit=120):
    """Presses Tab until `predicate` (JS, on document.activeElement as `e`) holds; returns the
    focus path."""
    seen = []
    for _ in range(limit):
        b.press("Tab")
        seen.append(focused(b))
        if b.eval("(() => { const e = document.activeElement; return !!(e && (%s)); })()"
                  % predicate):
            return seen
    raise AssertionError("Tab never reached %s; focus went %s" % (predicate, seen))


def test_keyboard_only_jobs_to_job_to_logs(env, browser):
    """The console with the keyboard alone: the skip link first, the header's pages, "/" to
    the filter, a job opened with Enter, its tabs, the log viewer's Home / End, and a focus
    ring on whatever has the focus."""
    b = browser
    b.goto(console(env, "jobs"))
    b.wait("document.querySelector('#jobs-table')")
    path = tab_until(b, "e.classList.contains('skip')", limit=3)
    assert len(path) == 1, path  # the first stop
    ring = b.eval("getComputedStyle(document.activeElement).outlineStyle")
    assert ring != "none", "no focus ring on the skip link"
    b.press("Enter")
    b.wait("document.activeElement && document.activeElement.id === 'app'")
    # "/" focuses the filter; typing and Enter apply it.
    b.press("/")
    b.wait("document.activeElement && document.activeElement.id === 'filter'")
    b.send("Input.insertText", {"text": "state:FAILED"})
    b.press("Enter")
    b.wait("new URL(location.href).searchParams.get('filter') === 'state:FAILED' && "
           "document.querySelectorAll('#jobs-table tbody tr').length === 1")
    # Tab from the filter to the job's link; Enter opens it.
    tab_until(b, "e.getAttribute('href') && e.getAttribute('href').endsWith('/jobs/bad_job')")
    assert b.eval("getComputedStyle(document.activeElement).outlineStyle") != "none"
    b.press("Enter")
    b.wait("location.pathname.endsWith('/jobs/bad_job') && document.querySelector('#tab-logs')")
    # Every control of the job page is reachable: Cancel (disabled: the job ended) is skipped,
    # Clone and the tabs are not.
    seen = tab_until(b, "e.id === 'tab-logs'")
    assert "job-clone" in seen and "job-cancel" not in seen, seen
    b.press("Enter")
    b.wait("location.pathname.endsWith('/jobs/bad_job/logs') && "
           "document.querySelector('.viewer .ln:not(.loading)')")
    n = int(env.request("GET", "%s/bad_job/logs:summary" % JOBS)[1]["lineCount"])
    tab_until(b, "e.classList.contains('scroll')")
    b.press("Home")
    b.wait("document.querySelector('.viewer .ln.sel[data-line=\"1\"], "
           ".viewer .ln[data-line=\"1\"]:not(.loading)')")
    b.press("End")
    b.wait("document.querySelector('.viewer .ln[data-line=\"%d\"]:not(.loading)')" % n)


def test_themes_follow_the_system(env, browser):
    b = browser
    b.goto(console(env, "jobs/ok_job"))
    b.wait("document.querySelector('#job-overview')")
    bg = "getComputedStyle(document.body).backgroundColor"
    fg = "getComputedStyle(document.body).color"
    try:
        b.send("Emulation.setEmulatedMedia",
               {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
        assert (b.eval(bg), b.eval(fg)) == ("rgb(255, 255, 255)", "rgb(31, 35, 40)")
        # The system turns dark: the open page follows, no reload.
        b.send("Emulation.setEmulatedMedia",
               {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        assert (b.eval(bg), b.eval(fg)) == ("rgb(13, 17, 23)", "rgb(230, 237, 243)")
        b.screenshot(os.path.join(ARTIFACTS, "job-dark.png"))
    finally:
        b.send("Emulation.setEmulatedMedia", {"features": []})


def test_times_in_the_viewers_zone_with_utc_on_hover(env, browser):
    import datetime
    b = browser
    job = env.job("ok_job")
    created = datetime.datetime.fromisoformat(job["createTime"].replace("Z", "+00:00"))
    for zone, offset in (("Asia/Kolkata", 330), ("America/Sao_Paulo", -180)):
        b.send("Emulation.setTimezoneOverride", {"timezoneId": zone})
        try:
            b.goto(console(env, "jobs/ok_job"))
            text = b.wait("(() => { const r = Array.from(document.querySelectorAll("
                          "'#job-overview tr')).find(r => r.querySelector('th').textContent === "
                          "'Created'); return r && r.querySelector('td span') && "
                          "[r.querySelector('td span').textContent, "
                          "r.querySelector('td span').title]; })()")
            local = created + datetime.timedelta(minutes=offset)
            assert text[0] == local.strftime("%Y-%m-%d %H:%M:%S"), (zone, text)
            assert text[1] == created.strftime("%Y-%m-%d %H:%M:%S UTC"), (zone, text)
            # The jobs list and the state history say the same.
            hist = b.wait("document.querySelector('#job-history time') && "
                          "[document.querySelector('#job-history time').textContent, "
                          "document.querySelector('#job-history time').title]")
            assert hist == text
        finally:
            b.send("Emulation.setTimezoneOverride", {"timezoneId": ""})


def test_empty_states_say_what_to_do_and_errors_what_failed(env, browser):
    b = browser
    # A project without jobs: how to submit one.
    b.goto(env.url + "/console/projects/nothing-here/jobs")
    text = b.wait("document.querySelector('#jobs-empty') && "
                  "document.querySelector('#jobs-empty').textContent")
    assert "No jobs in project nothing-here" in text and "trainyard jobs submit" in text
    # A filter that matches nothing: clear it.
    b.goto(console(env, "jobs?filter=" + urllib.parse.quote("jobId:zzz_no_such*")))
    text = b.wait("document.querySelector('#jobs-empty') && "
                  "document.querySelector('#jobs-empty').textContent")
    assert "No job matches this filter" in text
    # Its queue: nothing runs, nothing waits.
    b.goto(env.url + "/console/projects/nothing-here/queue")
    b.wait("document.querySelector('#queue-running-empty') && "
           "document.querySelector('#queue-waiting-empty')")
    # An unknown job: the page says which and why.
    b.goto(console(env, "jobs/no_such_job"))
    text = b.wait("document.querySelector('#job-error') && "
                  "document.querySelector('#job-error').textContent")
    assert "no_such_job" in text and "not found" in text.lower(), text
    errors = b.take_errors()
    assert errors and all("404" in str(e) for e in errors), errors
    # An unknown page: where to go instead.
    b.goto(env.url + "/console/projects/%s/nowhere" % PROJECT)
    text = b.wait("document.querySelector('main h1') && "
                  "document.querySelector('main').textContent")
    assert "Not found" in text and "jobs" in text


def test_a_denied_action_says_which_permission(env, browser):
    """Signed in as a viewer (roles/ml.viewer): the pages read, and cancelling a job is refused
    with the API's message naming the permission; nothing changes."""
    b = browser
    email = "console-viewer@example.com"
    status, out = env.request("POST", "/v1/admin/principals", {"email": email, "kind": "user"})
    assert status in (200, 409), out
    status, tok = env.request("POST", "/v1/admin/principals/%s/tokens" % email,
                              {"description": "console test"})
    assert status == 200, tok
    status, policy = env.request("POST", "/v1/projects/%s:getIamPolicy" % PROJECT, {})
    bindings = policy.get("bindings", [])
    bindings.append({"role": "roles/ml.viewer", "members": ["user:" + email]})
    status, out = env.request("POST", "/v1/projects/%s:setIamPolicy" % PROJECT,
                              {"policy": {"bindings": bindings, "etag": policy.get("etag", "")}})
    assert status == 200, out
    target = "paged_59"
    assert env.job(target)["state"] == "QUEUED"
    try:
        b.eval("fetch('/console/session', {method: 'DELETE', headers: "
               "{'X-Trainyard-Console': '1'}})")
        sign_in(b, env, token=tok["token"], path="/console/projects/%s/jobs" % PROJECT)
        b.take_errors()
        assert b.eval("document.querySelector('#session-email').textContent") == email
        b.goto(console(env, "jobs/" + target))
        b.wait("document.querySelector('#job-cancel') && "
               "!document.querySelector('#job-cancel').disabled")
        b.click("#job-cancel")
        b.wait("document.querySelector('#confirm-yes')")
        b.click("#confirm-yes")
        text = b.wait("document.querySelector('#action-error') && "
                      "document.querySelector('#action-error').textContent")
        assert "Could not cancel %s" % target in text and "ml.jobs.cancel" in text, text
        errors = b.take_errors()
        assert errors and all("403" in str(e) for e in errors), errors
        assert env.job(target)["state"] == "QUEUED"
    finally:
        b.eval("fetch('/console/session', {method: 'DELETE', headers: "
               "{'X-Trainyard-Console': '1'}})")
        sign_in(b, env)
        b.take_errors()
