"""The web console's performance targets (docs/console.md), measured in Debian's headless
Chromium against a real trainyardd whose store holds 100,000 jobs and a job with a 1,000,000-line
log (seeded by ty_console_seed):

  * API: a page of 50 jobs (unfiltered, and `state:FAILED AND labels.team=t3`), jobs:summary,
    logs:summary and logs:lines at random positions (p50/p95 over 40 requests); pages of 50 in
    each orderBy, with and without filters, against the default order (--sorted-only: only
    these, with no log and no trials seeded).
  * Jobs page: first contentful paint and the time until 50 rows are on screen, cold cache
    (5 loads).
  * Logs of the 1M-line job: time until the last line is on screen (opens at the tail), jumps
    to random lines (#line=N) until the line's text is shown, frame times while scrolling by
    ~100 lines per frame, JS heap after it all.
  * Trials of a finished tuning job with 1,000 trials of 50 reports each (--trials): the job
    GET and the trials route (sizes, p50/p95), the Trials tab until the table, the parallel
    coordinates and the scatter plot are on screen (cold cache) and until every metric curve
    is drawn, then sorting by a parameter, brushing an axis and selecting a trial (time from
    the input to the next frame with the change on screen).

  /usr/bin/python3 bench/bench_console.py [--jobs N] [--log-lines L] [--runs R] [--trials T]
                                          [--trials-only] [--sorted-only]
                                          [--compare-bin OTHER_TRAINYARDD]
"""

import argparse
import calendar
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from cdp import Browser  # noqa: E402
from common import Daemon, binary, machine_description, ms, percentile, table, verdict  # noqa

# Records, relative to navigation start, when a condition first holds (checked on every DOM
# change) and the page is interactive: the frame showing it has been rendered and the main
# thread is free again (a task queued from the next animation frame runs).
# window.__ty[name] = ms.
WATCH = """
window.__ty = {};
window.__tyWatch = (name, cond) => {
  let seen = false;
  const check = () => { try { if (!seen && cond()) { seen = true;
    requestAnimationFrame(() => setTimeout(() => { window.__ty[name] = performance.now(); }, 0)); } } catch (e) {} };
  new MutationObserver(check).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
};
if (location.pathname.endsWith('/jobs')) {
  window.__tyWatch('rows', () => document.querySelectorAll('#jobs-table tbody tr').length === 50);
}
if (location.pathname.endsWith('/trials')) {
  // How many trials a plot shows: a canvas's data-drawn, or (consoles before the canvas plots,
  // for --compare-bin) its SVG elements.
  window.__tyDrawn = (id, svg) => { const c = document.querySelector('#' + id + ' canvas');
    return c ? Number(c.dataset.drawn || 0) : document.querySelectorAll('#' + id + ' ' + svg).length; };
  window.__tyWatch('trials', () => document.querySelectorAll('#trials-body tr').length >= Math.min(50, window.__tyTrials - 1) &&
    window.__tyDrawn('trials-pc', 'path[data-trial]') === window.__tyTrials &&
    window.__tyDrawn('trials-scatter', 'circle[data-trial]') === window.__tyTrials);
  window.__tyWatch('curves', () => window.__tyDrawn('trials-curves', 'path[data-trial]') === window.__tyTrials);
}
if (location.pathname.endsWith('/logs')) {
  window.__tyWatch('tail', () => { const l = document.querySelector('.viewer .ln:last-child');
    return l && !l.classList.contains('loading') && l.dataset.line === String(window.__tyLines); });
}
"""


def timed(client, path, n=40):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        status, body = client.request("GET", path() if callable(path) else path)
        out.append(time.perf_counter() - t)
        assert status == 200, body
    return out


# Time from an input to the first frame that shows its effect: `act` runs, then frames are
# awaited until `done` holds.
INTERACT = """(async () => {
  const t = performance.now();
  %s;
  for (let i = 0; i < 600; i++) { await new Promise(r => requestAnimationFrame(r));
    if (%s) return performance.now() - t; }
  return -1; })()"""

BRUSH = """(() => { const area = document.querySelector('[data-axis-area="p:lr"]');
  const r = area.getBoundingClientRect(); const x = r.left + r.width / 2;
  const ev = (type, y) => area.dispatchEvent(new PointerEvent(type, {bubbles: true, clientX: x,
    clientY: y, pointerId: 1}));
  ev('pointerdown', r.top + r.height * 0.2); ev('pointermove', r.top + r.height * 0.4);
  ev('pointerup', r.top + r.height * 0.6); })()"""


# The trials inside the brushes: a canvas's data-in, or the SVG lines of an older console.
INSIDE = """(() => { const c = document.querySelector('#trials-pc canvas');
  return c ? c.dataset.in.split(',').filter(x => x).length
           : document.querySelectorAll('#trials-pc path.in').length; })()"""


def bench_trials(targets, base, args):
    """The Trials tab of each (label, daemon) in `targets`: page loads alternate between them
    run by run, so a change in the machine's load hits each alike. Returns the page errors."""
    nt = args.trials
    rows = []
    job_path = base + "/tuned"
    c = targets[-1][1].client()
    for name, path in [("job GET, %d trials" % nt, job_path),
                       ("trials?pageSize=1000 (allMetrics)", job_path + "/trials?pageSize=1000"),
                       ("trials?pageSize=500 (the console's pages)",
                        job_path + "/trials?pageSize=500")]:
        status, body = c.request("GET", path)
        size = len(json.dumps(body))
        lat = timed(c, path, n=10)
        rows.append([name, "%.0f KB" % (size / 1024), ms(percentile(lat, 50)),
                     ms(percentile(lat, 95))])
    table("Trials API (ms; %d trials of 50 reports)" % nt, ["request", "body", "p50", "p95"], rows)
    b = Browser()
    b.send("Page.addScriptToEvaluateOnNewDocument",
           {"source": "window.__tyTrials = %d;\n%s" % (nt, WATCH)})
    b.send("Network.setCacheDisabled", {"cacheDisabled": True})
    got = {label: {k: [] for k in ("shown", "curves", "sort", "brush", "select", "heap")}
           for label, _ in targets}
    for _ in range(args.runs):
        for label, d in targets:
            m = got[label]
            b.goto(d.url + "/console/projects/bench/jobs/tuned/trials")
            b.wait("window.__ty.trials && window.__ty.curves", timeout=60)
            m["shown"].append(b.eval("window.__ty.trials") / 1000)
            m["curves"].append(b.eval("window.__ty.curves") / 1000)
            m["sort"].append(b.eval(INTERACT % (
                "document.querySelector('th a[data-sort=\"p:lr\"]').click()",
                "document.querySelector('th a[data-sort=\"p:lr\"]').classList.contains('on')"))
                / 1000)
            m["brush"].append(b.eval(INTERACT % (BRUSH, "%s < %d" % (INSIDE, nt))) / 1000)
            m["select"].append(b.eval(INTERACT % (
                "document.querySelector('#trials-body tr').click()",
                "document.querySelector('#trial-detail')")) / 1000)
            m["heap"].append(b.eval("performance.memory.usedJSHeapSize") / 1e6)
    errors = b.take_errors()
    b.close()
    for label, _ in targets:
        m = got[label]
        rows = [
            ["table (first rows) + parallel coordinates + scatter, interactive",
             ms(percentile(m["shown"], 50)), ms(max(m["shown"])), "1000",
             verdict(max(m["shown"]) <= 1.0)],
            ["every metric curve drawn (allMetrics, loaded after)",
             ms(percentile(m["curves"], 50)), ms(max(m["curves"])), "—", ""],
            ["sort by a parameter: next frame", ms(percentile(m["sort"], 50)),
             ms(max(m["sort"])), "100", verdict(max(m["sort"]) <= 0.1)],
            ["brush an axis: next frame", ms(percentile(m["brush"], 50)), ms(max(m["brush"])),
             "100", verdict(max(m["brush"]) <= 0.1)],
            ["select a trial: next frame", ms(percentile(m["select"], 50)),
             ms(max(m["select"])), "100", verdict(max(m["select"]) <= 0.1)],
        ]
        table("Trials tab, %s, %d trials (ms; cold cache page loads; %d runs)" % (
            label, nt, args.runs), ["measure", "p50", "max", "target", ""], rows)
        print("\nJS heap on the Trials tab (%s): %.1f MB" % (label, max(m["heap"])))
    if errors:
        print("page errors: %s" % errors)
    return errors


def bench_sorted_pages(c, base, args):
    """Pages of 50 in each orderBy (the daemon sorts every job; keyset page tokens), without and
    with filters, against the listing's own order (newest first). Each row: 40 requests, the
    first page and then the next 39 by their tokens (a keyset page costs the same anywhere)."""
    orders = [("(none: newest first)", "")] + [
        (k + d, k + d) for k in ("createTime", "startTime", "endTime", "jobId", "state")
        for d in ("", " desc")]
    for _ in range(3):  # the daemon's first reads of the database (cold caches) not counted
        c.request("GET", base + "?pageSize=50")
    # The seeded jobs were created one second apart: a floor 1,000 seconds before the newest
    # keeps the last 1,000 (the store reads just those through the createTime index).
    _, newest = c.request("GET", base + "?pageSize=1&orderBy=createTime%20desc")
    created = newest["jobs"][0]["createTime"]
    floor = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(
        calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")) - 999))
    filters = [("", ""), ("state:FAILED", "state:FAILED"),
               ("labels.team=t3 (10%, no index)", "labels.team=t3"),
               ("state:FAILED AND labels.team=t3 (none: reads all)",
                "state:FAILED AND labels.team=t3"),
               ("createTime>= the last 1,000", 'createTime>="%s"' % floor),
               ("the last 1,000 AND state:FAILED AND labels.team=t3 (none)",
                'createTime>="%s" AND state:FAILED AND labels.team=t3' % floor)]
    rows = []
    for fname, ftext in filters:
        for oname, order_by in orders:
            token = [None]

            def path():
                q = {"pageSize": "50"}
                if ftext:
                    q["filter"] = ftext
                if order_by:
                    q["orderBy"] = order_by
                if token[0]:
                    q["pageToken"] = token[0]
                return base + "?" + urllib.parse.urlencode(q)

            lat = []
            for _ in range(40 if "none" not in fname else 10):
                t = time.perf_counter()
                status, body = c.request("GET", path())
                lat.append(time.perf_counter() - t)
                assert status == 200, body
                token[0] = body.get("nextPageToken")
            rows.append([fname or "(no filter)", oname, ms(percentile(lat, 50)), ms(max(lat)),
                         verdict(max(lat) <= 0.100) if not ftext else ""])
    table("API: list pages of 50 in an order (ms, %d jobs; keep-alive round trip on localhost, "
          "40 requests: the first page then the next ones; 10 for the filter matching none)"
          % args.jobs, ["filter", "orderBy", "p50", "max", "max <= 100 ms"], rows)


def conditional_get(d, path, headers=None):
    """(status, body bytes, headers, seconds) of one GET on a fresh keep-alive connection."""
    import http.client
    host, port = d.url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    h = dict(headers or {})
    if getattr(d, "token", None):
        h["Authorization"] = "Bearer " + d.token
    t = time.perf_counter()
    conn.request("GET", path, headers=h)
    r = conn.getresponse()
    body = r.read()
    took = time.perf_counter() - t
    conn.close()
    return r.status, body, {k.lower(): v for k, v in r.getheaders()}, took


def bench_search_download_etag(d, c, base, n):
    """logs:search over the big log, logs:download's rate, and what fields= and 304 save."""
    rows = []
    log = base + "/big_log/logs"
    mid = n // 2
    for name, path in [
            ("search: next match 5 lines ahead",
             lambda: log + ":search?text=line%%20%d%%20&afterLineOffset=%d" % (
                 (lambda k: (k + 5, k))(random.randrange(n - 10)))),
            ("search: no match (a full pass over %d lines)" % n, log + ":search?text=nowhere"),
            ("search: next + count (k of n, full pass)",
             log + ":search?text=line%%20%d%%20&afterLineOffset=0&countMatches=true" % mid),
            ("search: previous, %d lines back" % (n - 10),
             log + ":search?text=line%%205%%20&beforeLineOffset=%d" % (n - 1))]:
        lat = timed(c, path, n=10)
        rows.append([name, ms(percentile(lat, 50)), ms(max(lat))])
    table("logs:search on the %d-line log (ms, 10 requests)" % n, ["request", "p50", "max"], rows)

    rows = []
    for name, q in [("text (time, severity, task, message)", ""), ("format=message", "?format=message")]:
        runs = []
        for _ in range(3):
            status, body, h, took = conditional_get(d, log + ":download" + q)
            assert status == 200 and body.count(b"\n") == n, (status, body[:200])
            runs.append((took, len(body)))
        took, size = sorted(runs)[1]
        rows.append([name, "%.0f" % (size / 1e6), "%.2f" % took, "%.0f" % (size / 1e6 / took),
                     "%.2f" % (n / took / 1e6)])
    table("logs:download of %d lines (median of 3, streamed, identity)" % n,
          ["format", "MB", "s", "MB/s", "M lines/s"], rows)

    rows = []
    list_path = base + "?pageSize=50"
    masked = list_path + "&fields=" + urllib.parse.quote(
        "jobs(jobId,state,jobPosition,createTime,startTime,endTime,labels,trainingInput("
        "scaleTier,masterType,workerType,workerCount,parameterServerType,parameterServerCount,"
        "hyperparameters/maxTrials),trainingOutput/completedTrialCount),nextPageToken")
    for name, path in [("list, 50 jobs", list_path), ("list, 50 jobs, console's fields=", masked),
                       ("jobs:summary", base + ":summary"), ("job GET", base + "/big_log")]:
        full, fresh = [], []
        size = 0
        etag = ""
        for _ in range(20):
            status, body, h, took = conditional_get(d, path)
            assert status == 200
            size, etag = len(body), h["etag"]
            full.append(took)
            status, body, h, took = conditional_get(d, path, {"If-None-Match": etag})
            assert status == 304 and body == b""
            fresh.append(took)
        rows.append([name, str(size), "0", ms(percentile(full, 50)), ms(percentile(fresh, 50))])
    table("Polling: 200 against 304 (If-None-Match), body bytes and p50 ms of 20",
          ["request", "200 bytes", "304 bytes", "200 ms", "304 ms"], rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=100000)
    ap.add_argument("--log-lines", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--trials-only", action="store_true",
                    help="only the Trials measurements (seeds --jobs and --log-lines all the same)")
    ap.add_argument("--compare-bin", metavar="TRAINYARDD",
                    help="also measure the Trials tab as another trainyardd binary (e.g. a build "
                    "of an earlier commit) serves it, on the same data, before this build's")
    ap.add_argument("--sorted-only", action="store_true",
                    help="only the job list pages in each orderBy (seeds no log and no trials)")
    args = ap.parse_args()
    if args.sorted_only:
        args.log_lines, args.trials = 0, 0
    print(machine_description())
    data = tempfile.mkdtemp(prefix="trainyard-console-bench-")
    t = time.time()
    subprocess.run([binary("ty_console_seed"), data, "--jobs", str(args.jobs), "--log-lines",
                    str(args.log_lines), "--trials", str(args.trials)], check=True)
    print("seeded in %.0f s" % (time.time() - t))
    base = "/v1/projects/bench/jobs"
    if args.trials and args.compare_bin:
        shutil.copytree(data, data + "-compare")  # before any daemon opens it
    d = Daemon(data_dir=data).start()
    c = d.client()
    n = args.log_lines
    if args.sorted_only:
        try:
            bench_sorted_pages(c, base, args)
        finally:
            d.stop()
            shutil.rmtree(data, ignore_errors=True)
        return 0
    if args.trials:
        targets = [("this build", d)]
        other = None
        if args.compare_bin:
            # The other binary on a copy of the same data, running beside this one.
            import common
            own = common.binary
            common.binary = lambda name: (os.path.abspath(args.compare_bin)
                                          if name == "trainyardd" else own(name))
            try:
                other = Daemon(data_dir=data + "-compare").start()
            finally:
                common.binary = own
            targets.insert(0, (args.compare_bin, other))
        try:
            errors = bench_trials(targets, base, args)
        finally:
            if other:
                other.stop()
                shutil.rmtree(data + "-compare", ignore_errors=True)
        if args.trials_only:
            d.stop()
            shutil.rmtree(data, ignore_errors=True)
            return 1 if errors else 0
    rows = []
    for name, path, target in [
            ("list, 50 jobs", base + "?pageSize=50", 0.100),
            ("list, state:FAILED AND labels.team=t3", base + "?pageSize=50&filter=" +
             "state%3AFAILED%20AND%20labels.team%3Dt3", 0.250),
            ("jobs:summary", base + ":summary", 0.100),
            ("logs:summary, %d lines" % n, base + "/big_log/logs:summary", 0.100),
            ("logs:lines, 1000 at a random offset",
             lambda: base + "/big_log/logs:lines?pageSize=1000&lineOffset=%d" %
             random.randrange(n), 0.300)]:
        lat = timed(c, path)
        rows.append([name, ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms(target),
                     verdict(percentile(lat, 95) <= target)])
    table("API (ms, %d jobs, one job with %d log lines)" % (args.jobs, n),
          ["request", "p50", "p95", "target p95", ""], rows)
    bench_sorted_pages(c, base, args)
    bench_search_download_etag(d, c, base, n)

    b = Browser()
    b.send("Page.addScriptToEvaluateOnNewDocument",
           {"source": "window.__tyLines = %d;\n%s" % (n, WATCH)})
    b.send("Network.setCacheDisabled", {"cacheDisabled": True})
    fcp, shown = [], []
    for _ in range(args.runs):
        b.goto(d.url + "/console/projects/bench/jobs")
        b.wait("window.__ty.rows", timeout=30)
        shown.append(b.eval("window.__ty.rows") / 1000)
        fcp.append(b.eval("performance.getEntriesByName('first-contentful-paint')[0].startTime")
                   / 1000)
    tail = []
    for _ in range(args.runs):
        b.goto(d.url + "/console/projects/bench/jobs/big_log/logs")
        b.wait("window.__ty.tail", timeout=30)
        tail.append(b.eval("window.__ty.tail") / 1000)
    b.send("Network.setCacheDisabled", {"cacheDisabled": False})
    jumps = []
    for _ in range(20):
        line = random.randrange(1, n + 1)
        jumps.append(b.eval("""(async (n) => {
          const t = performance.now(); location.hash = '#line=' + n;
          for (;;) { await new Promise(r => requestAnimationFrame(r));
            const e = document.querySelector('.ln[data-line="' + n + '"]');
            if (e && !e.classList.contains('loading')) return performance.now() - t; } })(%d)"""
                            % line) / 1000)
    frames = b.eval("""(async () => {
      const el = document.querySelector('.viewer .scroll'); el.scrollTop = 0;
      await new Promise(r => requestAnimationFrame(r));
      const out = []; let last = performance.now();
      for (let i = 0; i < 300; i++) { el.scrollTop += 97 * 18;
        await new Promise(r => requestAnimationFrame(r));
        const now = performance.now(); out.push(now - last); last = now; }
      return out; })()""")
    frames = [f / 1000 for f in frames]
    heap = b.eval("performance.memory.usedJSHeapSize") / 1e6
    errors = b.take_errors()
    b.close()
    d.stop()
    shutil.rmtree(data, ignore_errors=True)
    rows = [
        ["Jobs page: first contentful paint", ms(percentile(fcp, 50)), ms(max(fcp)), "500",
         verdict(max(fcp) <= 0.5)],
        ["Jobs page: 50 rows on screen", ms(percentile(shown, 50)), ms(max(shown)), "1000",
         verdict(max(shown) <= 1.0)],
        ["Logs: open at the tail (%d lines)" % n, ms(percentile(tail, 50)), ms(max(tail)), "1000",
         verdict(max(tail) <= 1.0)],
        ["Logs: jump to a random line (20)", ms(percentile(jumps, 50)),
         ms(percentile(jumps, 95)), "300", verdict(percentile(jumps, 95) <= 0.3)],
        ["Logs: frame while scrolling (300)", ms(percentile(frames, 50)),
         ms(percentile(frames, 95)), "33", verdict(percentile(frames, 95) <= 0.033)],
    ]
    table("Browser (ms; cold cache for page loads; %d runs)" % args.runs,
          ["measure", "p50", "p95/max", "target", ""], rows)
    print("\nJS heap after the jumps and scrolling: %.1f MB (target <= 64 MB)" % heap)
    if errors:
        print("page errors: %s" % errors)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
