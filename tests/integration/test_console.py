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
from conftest import PROJECT, REPO, Daemon, build_sdist, make_package, upload_package, wait_for

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
    d.stop()


def sign_in(b, d, token=None):
    """Signs in through the console's form as the daemon's administrator (or `token`)."""
    b.goto(d.url + "/console/")
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


def test_sort_by_column(env, browser):
    b = browser
    b.goto(console(env, "jobs") + "?filter=" + urllib.parse.quote("jobId:paged_0*"))
    b.wait("document.querySelectorAll('#jobs-table tbody tr').length === 10")
    b.click("th a[data-sort=\"jobId\"]")
    b.wait("new URL(location.href).searchParams.get('sort') === 'jobId'")
    assert rows(b) == ["paged_%02d" % i for i in range(10)]
    b.click("th a[data-sort=\"jobId\"]")
    b.wait("new URL(location.href).searchParams.get('sort') === '-jobId'")
    assert rows(b) == ["paged_%02d" % i for i in reversed(range(10))]


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
