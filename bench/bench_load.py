#!/usr/bin/python3
"""Load: running jobs printing steadily, log followers and an open-loop API mix at once (issue 17).

One trainyardd (authentication on, as by default; the benchmark acts as the bootstrap
administrator) runs --jobs jobs (default 50) whose trainers print numbered, time-stamped lines
(`L <n> <time.time()>`, flushed, --line-rate lines/s each, default 10) until the benchmark
creates a stop file, then `END <count>` and exit 0. The daemon is told to admit them all at once
(cpu_overcommit and memory_overcommit sized for --jobs BASIC jobs on this machine;
max_running_jobs = --jobs, so the jobs the API mix creates wait in the queue, as on a full
cluster, and are cancelled there).

While they run:
- --followers log followers (default 100; follower i follows job i mod --jobs), each a Python
  thread with its own keep-alive connection doing what `trainyard jobs stream-logs` does: a
  listing of the job's logs, then every --follow-interval seconds (default 1, the CLI's) a GET of
  the job and `logs?afterInsertId=<cursor>` pages until the job has ended;
- ty_loadgen (C++, bench/loadgen.cc) sends --rps requests per second (default 200), open loop
  (request k is due at start + k/rate; latency counts from the due time, so a stall shows even
  while the client waits: no coordinated omission), over --connections keep-alive connections
  (default 32) for --duration seconds (default 60): GET a running job (30%), list
  `state:RUNNING` (15%), list `labels.team=tN` (10%), a logs page (newest 100 lines, 30%),
  create a job and cancel it at once (10% of entries; two requests), and GET /healthz (5%,
  a control that touches no lock or store).

Then the stop file ends the trainers; every follower must have seen each of its job's lines
exactly once (lost and duplicated per follower), and the store (the logs API, read back) must
hold each job's lines 0..count-1 exactly once.

Printed: API p50/p99/max and errors by request, achieved rate, how late the client sent
(whether the load generator kept up), the worst seconds; followers' line latency (print to
seen, p50/p99/max) and their requests; daemon CPU (utime+stime from /proc), RSS (at the start,
end and peak) and threads; the load generator's and the followers' own CPU.

Targets: 0 API errors, 0 lines lost or duplicated (followers and store), API p99 <= 100 ms.
"""

import argparse
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

TASK = r'''import argparse
import os
import time

ap = argparse.ArgumentParser()
ap.add_argument("--rate", type=float, default=10.0)
ap.add_argument("--stop", required=True)
ap.add_argument("--max-seconds", type=float, default=3600.0)
a, _ = ap.parse_known_args()
period = 1.0 / a.rate
t0 = time.time()
n = 0
while not os.path.exists(a.stop) and time.time() - t0 < a.max_seconds:
    print("L %d %.6f" % (n, time.time()), flush=True)
    n += 1
    delay = t0 + n * period - time.time()
    if delay > 0:
        time.sleep(delay)
print("END %d" % n, flush=True)
'''

# name, weight, method, path, body (see ty_loadgen --mix); {J} is replaced by --jobs.
MIX = [
    # A control: /healthz takes no lock and reads no store, so when it is slow too the time went
    # to the HTTP server or the machine (CPU contention), not to the scheduler or SQLite.
    ("healthz", "5", "GET", "/healthz", ""),
    ("get", "30", "GET", "/v1/projects/{P}/jobs/load_{i%J}", ""),
    ("list_state", "15", "GET", "/v1/projects/{P}/jobs?filter=state%3ARUNNING&pageSize=50", ""),
    ("list_label", "10", "GET", "/v1/projects/{P}/jobs?filter=labels.team%3Dt{i%5}&pageSize=50",
     ""),
    ("logs_page", "30", "GET",
     "/v1/projects/{P}/jobs/load_{i%J}/logs?pageSize=100&orderBy=timestamp%20desc", ""),
    ("create", "10", "POST", "/v1/projects/{P}/jobs",
     '{"jobId":"cc_{i}","labels":{"team":"cc"},"trainingInput":{"packageUris":["{URI}"],'
     '"pythonModule":"trainer.task","region":"us-central1"}}'),
    ("cancel", "+", "POST", "/v1/projects/{P}/jobs/cc_{i}:cancel", "{}"),
]

PAGE = 1000  # the CLI's page size


def write_mix(path, jobs, uri):
    with open(path, "w") as f:
        for name, weight, method, p, body in MIX:
            p = p.replace("{P}", common.PROJECT).replace("{i%J}", "{i%%%d}" % jobs)
            body = body.replace("{URI}", uri)
            f.write(" ".join(x for x in (name, weight, method, p, body) if x) + "\n")
    weights = [float(w) for _, w, *_ in MIX if w != "+"]
    follow_ups = sum(float(MIX[i - 1][1]) for i, m in enumerate(MIX) if m[1] == "+")
    return 1.0 + follow_ups / sum(weights)  # requests per mix entry


def message(entry):
    return (entry.get("jsonPayload") or {}).get("message") or entry.get("textPayload") or ""


class Lines:
    """The numbered lines of one job as a reader saw them."""

    def __init__(self):
        self.seen = {}  # n -> times seen
        self.end = None  # the count in the END line

    def take(self, text):
        """Returns the line's print time for `L n t` lines, else None."""
        parts = text.split()
        if len(parts) == 3 and parts[0] == "L":
            n = int(parts[1])
            self.seen[n] = self.seen.get(n, 0) + 1
            return float(parts[2])
        if len(parts) == 2 and parts[0] == "END":
            self.end = int(parts[1])
        return None

    def check(self, count):
        """(lost, duplicated) against lines 0..count-1."""
        lost = sum(1 for n in range(count) if n not in self.seen)
        dup = sum(v - 1 for v in self.seen.values() if v > 1)
        dup += sum(1 for n in self.seen if n >= count)  # seen but never printed: counted too
        return lost, dup


class Follower(threading.Thread):
    """`trainyard jobs stream-logs`: a listing, then the job and logs after the cursor every
    interval until the job has ended (src/cli/log_commands.cc, StreamJobLogs)."""

    def __init__(self, daemon, job, interval, abort):
        super().__init__(daemon=True)
        self.d, self.job, self.interval, self.abort = daemon, job, interval, abort
        self.lines = Lines()
        self.latencies = []  # seconds from print to seen, following phase only
        self.request_s = []  # each request's latency
        self.errors = 0
        self.finished = False

    def get(self, c, path):
        while not self.abort.is_set():
            t = time.perf_counter()
            try:
                status, body = c.request("GET", path)
            except (OSError, ValueError) as e:  # includes http.client errors (OSError) and JSON
                status, body = -1, str(e)
            self.request_s.append(time.perf_counter() - t)
            if status == 200 and isinstance(body, dict):
                return body
            self.errors += 1
            c.close()
            c = self.d.client()
            self.c = c
            self.abort.wait(0.5)
        return None

    def run(self):
        base = "/v1/projects/%s/jobs/%s" % (common.PROJECT, self.job)
        self.c = self.d.client()
        cursor, token = None, None
        while True:  # 1. the listing
            q = "pageSize=%d" % PAGE + ("&pageToken=" + urllib.parse.quote(token) if token else "")
            page = self.get(self.c, base + "/logs?" + q)
            if page is None:
                return
            if cursor is None:
                cursor = page.get("snapshotInsertId") or "0"
            for e in page.get("entries", []):
                self.lines.take(message(e))
            token = page.get("nextPageToken")
            if not token:
                break
        while True:  # 2. following
            job = self.get(self.c, base)
            if job is None:
                return
            ended = bool(job.get("endTime"))
            while True:
                page = self.get(self.c, base + "/logs?afterInsertId=%s&pageSize=%d" % (cursor, PAGE))
                if page is None:
                    return
                now = time.time()
                entries = page.get("entries", [])
                for e in entries:
                    t = self.lines.take(message(e))
                    if t is not None:
                        self.latencies.append(now - t)
                nxt = page.get("nextAfterInsertId")
                advanced = bool(nxt) and nxt != cursor
                if advanced:
                    cursor = nxt
                if len(entries) < PAGE or not advanced:
                    break
            if ended:
                self.finished = True
                self.c.close()
                return
            self.abort.wait(self.interval)


class Monitor(threading.Thread):
    """Samples the daemon's RSS and threads and the machine's CPU every 0.25 s."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.stop = threading.Event()
        self.samples = []  # (time, rss_kb, threads)

    def run(self):
        while not self.stop.is_set():
            try:
                self.samples.append((time.time(), common.proc_status_kb(self.pid, "VmRSS"),
                                     common.proc_status_kb(self.pid, "Threads")))
            except OSError:
                return
            self.stop.wait(0.25)


def machine_busy():
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def descendants_cpu(pid):
    """utime + stime of every live descendant of pid (the launchers and their trainers)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(
            (int(entry), (int(fields[11]) + int(fields[12])) / common.CLK_TCK))
    total, todo = 0.0, [pid]
    while todo:
        for child, cpu in children.get(todo.pop(), []):
            total += cpu
            todo.append(child)
    return total


def server_latency(client):
    """{route: [count, sum, [bucket counts]]} of the daemon's request histogram (/metrics),
    and the bucket bounds."""
    status, text = client.raw("GET", "/metrics")
    routes, bounds = {}, []
    for line in text.decode().splitlines():
        if not line.startswith("trainyard_api_request_duration_seconds"):
            continue
        name, _, value = line.rpartition(" ")
        route = name.split("{", 1)[-1].split(',le="')[0].rstrip("}")  # method and route
        r = routes.setdefault(route, [0.0, 0.0, []])
        if "_bucket{" in name:
            le = name.split('le="', 1)[1].split('"', 1)[0]
            if le != "+Inf":
                r[2].append(float(value))
                if len(bounds) < len(r[2]):
                    bounds.append(float(le))
        elif "_sum{" in name:
            r[1] += float(value)
        elif "_count{" in name:
            r[0] += float(value)
    return routes, bounds


def server_summary(before, after, bounds):
    """(requests, mean s, bucket bound holding the p99, fraction over 100 ms) of every route
    between two server_latency() readings."""
    count = total = 0.0
    buckets = [0.0] * len(bounds)
    for route, (n, s, b) in after.items():
        n0, s0, b0 = before.get(route, (0.0, 0.0, [0.0] * len(b)))
        count += n - n0
        total += s - s0
        for i in range(min(len(b), len(buckets))):
            buckets[i] += b[i] - (b0[i] if i < len(b0) else 0.0)
    p99 = float("inf")
    for bound, c in zip(bounds, buckets):
        if count and c >= 0.99 * count:
            p99 = bound
            break
    over_100ms = 0.0
    for bound, c in zip(bounds, buckets):
        if bound == 0.1 and count:
            over_100ms = 1 - c / count
    return count, (total / count if count else 0.0), p99, over_100ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--followers", type=int, default=100)
    ap.add_argument("--rps", type=float, default=200, help="API requests per second")
    ap.add_argument("--duration", type=float, default=60, help="seconds of API load")
    ap.add_argument("--line-rate", type=float, default=10, help="lines/s each trainer prints")
    ap.add_argument("--follow-interval", type=float, default=1.0,
                    help="seconds between a follower's polls (the CLI's default: 1)")
    ap.add_argument("--connections", type=int, default=32, help="ty_loadgen's connections")
    ap.add_argument("--warmup", type=float, default=3, help="seconds of followers before the API")
    ap.add_argument("--quick", action="store_true",
                    help="5 jobs, 10 followers, 50 requests/s for 10 s")
    ap.add_argument("--keep", action="store_true", help="keep the data dir")
    ap.add_argument("--daemon-nice", type=int, default=0,
                    help="add this to the nice value of every trainyardd thread (negative needs "
                         "root): a diagnostic that tells the daemon's own stalls from CPU "
                         "contention on a shared machine")
    args = ap.parse_args()
    if args.quick:
        args.jobs, args.followers, args.rps, args.duration = 5, 10, 50, 10
    if common.loadgen_path() is None:
        common.loadgen(0, "GET", "/")  # exits with how to build it

    print("bench_load: %d jobs printing %.0f lines/s each, %d followers (every %.1f s), "
          "%.0f API requests/s for %.0f s" % (args.jobs, args.line_rate, args.followers,
                                              args.follow_interval, args.rps, args.duration))
    print("machine: %s" % common.machine_description())
    cpus = len(os.sched_getaffinity(0))
    with open("/proc/meminfo") as f:
        mem_gib = int(f.readline().split()[1]) / 1048576.0
    # BASIC jobs are one `standard` machine: 4 vCPUs, 15 GB. Count enough of both.
    cpu_over = max(32, math.ceil(args.jobs * 4 * 1.1 / cpus))
    mem_over = max(8, math.ceil(args.jobs * 16 * 1.1 / mem_gib))
    env = {"TRAINYARD_CPU_OVERCOMMIT": str(cpu_over),
           "TRAINYARD_MEMORY_OVERCOMMIT": str(mem_over),
           "TRAINYARD_MAX_RUNNING_JOBS": str(args.jobs)}
    print("daemon: auth on, cpu_overcommit %d, memory_overcommit %d, max_running_jobs %d" % (
        cpu_over, mem_over, args.jobs))

    # SIGTERM (timeout, run_all.sh) ends the trainers and the daemon too: see the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    work = tempfile.mkdtemp(prefix="trainyard-bench-load-")
    stop_file = os.path.join(work, "stop")
    abort = threading.Event()
    d = common.Daemon(auth=True, env=env, keep=args.keep).start()
    if args.daemon_nice:
        # Threads started later inherit their creator's value.
        for tid in os.listdir("/proc/%d/task" % d.pid):
            now = os.getpriority(os.PRIO_PROCESS, int(tid))
            os.setpriority(os.PRIO_PROCESS, int(tid), now + args.daemon_nice)
        print("daemon threads reniced by %+d" % args.daemon_nice)
    try:
        return run(args, d, work, stop_file, abort)
    finally:
        abort.set()
        open(stop_file, "a").close()  # the trainers end (their launchers outlive a daemon stop)
        time.sleep(0.5)
        d.stop()
        shutil.rmtree(work, ignore_errors=True)
        if args.keep:
            print("data dir kept: %s" % d.data_dir)


def run(args, d, work, stop_file, abort):
    c = d.client()
    uri = common.stage_package(c, TASK, "load")
    t_create = time.time()
    for k in range(args.jobs):
        body = common.job_body("load_%d" % k, uri, ["--rate", str(args.line_rate),
                                                   "--stop", stop_file])
        body["labels"] = {"team": "t%d" % (k % 5)}
        c.check("POST", "/v1/projects/%s/jobs" % common.PROJECT, body)
    jobs = ["load_%d" % k for k in range(args.jobs)]
    deadline = time.time() + 600
    while True:
        states = [c.job(j)["state"] for j in jobs]
        running = states.count("RUNNING")
        if running == len(jobs):
            break
        bad = [s for s in states if s in ("FAILED", "CANCELLED", "SUCCEEDED")]
        if bad or time.time() > deadline:
            sys.exit("jobs did not all start: %s" % {s: states.count(s) for s in set(states)})
        time.sleep(0.5)
    print("all %d jobs RUNNING %.1f s after the first create (load average %s)" % (
        len(jobs), time.time() - t_create, common.load_average()))

    mon = Monitor(d.pid)
    mon.start()
    followers = [Follower(d, jobs[i % len(jobs)], args.follow_interval, abort)
                 for i in range(args.followers)]
    for f in followers:
        f.start()
        time.sleep(min(0.01, args.follow_interval / max(1, args.followers)))
    time.sleep(args.warmup)

    mix_path = os.path.join(work, "mix.txt")
    per_entry = write_mix(mix_path, args.jobs, uri)
    threads0 = common.proc_status_kb(d.pid, "Threads")
    rss0 = d.rss_kb()
    cpu0, self0, busy0 = d.cpu_seconds(), common.self_cpu_seconds(), machine_busy()
    kids0 = descendants_cpu(d.pid)
    server0, _ = server_latency(c)
    t0 = time.time()
    report = common.loadgen(d.port, "", "", connections=args.connections,
                            duration=args.duration, rate=args.rps / per_entry, mix=mix_path,
                            headers=["Authorization: Bearer " + d.admin_token()])
    wall = time.time() - t0
    cpu = d.cpu_seconds() - cpu0
    self_cpu = common.self_cpu_seconds() - self0
    busy1 = machine_busy()
    kids = descendants_cpu(d.pid) - kids0
    server1, bounds = server_latency(c)
    rss1, hwm, fds = d.rss_kb(), d.hwm_kb(), open_fds(d.pid)
    threads1 = common.proc_status_kb(d.pid, "Threads")
    load_samples = [s for s in mon.samples if t0 <= s[0] <= t0 + wall]

    # End the trainers; the followers stop once their job has ended.
    open(stop_file, "w").close()
    t_stop = time.time()
    deadline = time.time() + 300
    while True:
        states = [c.job(j)["state"] for j in jobs]
        if all(s in ("SUCCEEDED", "FAILED", "CANCELLED") for s in states):
            break
        if time.time() > deadline:
            sys.exit("jobs did not end after the stop file: %s" % {
                s: states.count(s) for s in set(states)})
        time.sleep(0.25)
    for f in followers:
        f.join(timeout=max(1.0, deadline - time.time()))
    mon.stop.set()
    ended_s = time.time() - t_stop
    failed = {j: s for j, s in zip(jobs, states) if s != "SUCCEEDED"}

    # The store: each job's lines read back through the logs API (a listing).
    stored = {}
    for j in jobs:
        lines, token = Lines(), None
        while True:
            q = "pageSize=10000" + ("&pageToken=" + urllib.parse.quote(token) if token else "")
            page = c.check("GET", "/v1/projects/%s/jobs/%s/logs?%s" % (common.PROJECT, j, q))
            for e in page.get("entries", []):
                lines.take(message(e))
            token = page.get("nextPageToken")
            if not token:
                break
        stored[j] = lines
    store_lost = store_dup = no_end = 0
    total_lines = 0
    for j, lines in stored.items():
        if lines.end is None:
            no_end += 1
            count = max(lines.seen) + 1 if lines.seen else 0
        else:
            count = lines.end
        total_lines += count
        lost, dup = lines.check(count)
        store_lost += lost
        store_dup += dup
    f_lost = f_dup = f_bad = f_unfinished = f_errors = 0
    lat, freq = [], []
    for f in followers:
        s = stored[f.job]
        count = s.end if s.end is not None else (max(s.seen) + 1 if s.seen else 0)
        lost, dup = f.lines.check(count)
        if f.lines.end != s.end:
            lost += 1  # the END line
        f_lost += lost
        f_dup += dup
        f_bad += 1 if lost or dup else 0
        f_unfinished += 0 if f.finished else 1
        f_errors += f.errors
        lat += f.latencies
        freq += f.request_s

    # --- Report ----------------------------------------------------------------------------
    lg = report
    ops = lg.get("ops", {})
    errors = lg["requests"] - lg["ok"]
    rows = []
    for name, v in ops.items():
        bad = {k: n for k, n in v["status"].items() if not k.startswith("2")}
        rows.append([name, v["requests"], "%.2f" % v["latency_ms"]["p50"],
                     "%.2f" % v["latency_ms"]["p99"], "%.1f" % v["latency_ms"]["max"],
                     v["requests"] - v["ok"], " ".join("%s:%d" % kv for kv in bad.items())])
    rows.append(["all", lg["requests"], "%.2f" % lg["latency_ms"]["p50"],
                 "%.2f" % lg["latency_ms"]["p99"], "%.1f" % lg["latency_ms"]["max"], errors, ""])
    common.table("API, open loop at %.0f requests/s over %d connections for %.0f s (ms from the "
                 "due time)" % (args.rps, args.connections, args.duration),
                 ["request", "n", "p50", "p99", "max", "errors", "non-2xx"], rows)
    worst = sorted(lg.get("timeline", []), key=lambda b: -b[3])[:5]
    n, mean, p99, over = server_summary(server0, server1, bounds)
    print("the daemon's own timing of the same window (/metrics, handler time, all routes incl. "
          "followers'): %d requests, mean %.2f ms, p99 <= %s ms, %.2f%% over 100 ms" % (
              n, 1000 * mean, "%g" % (1000 * p99), 100 * over))
    print("achieved %.1f requests/s (%d in %.1f s); client sent late by p50 %.2f / p99 %.2f / "
          "max %.1f ms; worst seconds (second: requests, errors, max ms): %s" % (
              lg["requests"] / lg["elapsed_s"], lg["requests"], lg["elapsed_s"],
              lg["send_lag_ms"]["p50"], lg["send_lag_ms"]["p99"], lg["send_lag_ms"]["max"],
              ", ".join("%d: %d, %d, %.0f" % tuple(b) for b in sorted(worst))))

    per_follower = ["%d of %d followers saw every line of their job exactly once" % (
        args.followers - f_bad, args.followers)]
    common.table("Logs: %d jobs x %.0f lines/s, %d followers every %.1f s" % (
        args.jobs, args.line_rate, args.followers, args.follow_interval),
        ["measure", "value", "target"],
        [["lines printed (END counts)", total_lines, ""],
         ["store: lost / duplicated / jobs without END", "%d / %d / %d" % (
             store_lost, store_dup, no_end), "0 / 0 / 0"],
         ["followers: lost / duplicated (sum over followers)", "%d / %d" % (f_lost, f_dup),
          "0 / 0"],
         ["followers with a loss or duplicate / unfinished", "%d / %d" % (f_bad, f_unfinished),
          "0 / 0"],
         ["follower line latency p50 / p99 / max (print to seen)", "%.0f / %.0f / %.0f ms" % (
             1000 * common.percentile(lat, 50), 1000 * common.percentile(lat, 99),
             1000 * (max(lat) if lat else float("nan"))), "poll interval + pipeline"],
         ["follower requests: n, p50 / p99 / max, errors", "%d, %.1f / %.1f / %.0f ms, %d" % (
             len(freq), 1000 * common.percentile(freq, 50), 1000 * common.percentile(freq, 99),
             1000 * (max(freq) if freq else float("nan")), f_errors), "0 errors"],
         ["jobs ended after the stop file (not SUCCEEDED)", "%.1f s (%d)" % (
             ended_s, len(failed)), ""]])
    print(per_follower[0])

    rss_peak_load = max([s[1] for s in load_samples] or [rss1])
    thr_peak = max([s[2] for s in load_samples] or [threads1])
    busy = (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1])
    common.table("Processes during the %.0f s of API load" % wall, ["measure", "value"],
                 [["daemon CPU (utime+stime)", "%.1f s = %.2f cores" % (cpu, cpu / wall)],
                  ["daemon RSS: start / end / peak sampled / VmHWM", "%.0f / %.0f / %.0f / %.0f MB" % (
                      rss0 / 1024, rss1 / 1024, rss_peak_load / 1024, hwm / 1024)],
                  ["daemon threads: start / end / peak sampled", "%d / %d / %d" % (
                      threads0, threads1, thr_peak)],
                  ["daemon RSS / threads every 10 s", " ".join(
                      "%.0f/%d" % (x[1] / 1024, x[2]) for x in load_samples[::40])],
                  ["daemon open fds at the end", fds],
                  ["launchers + trainers CPU (descendants)", "%.1f s = %.2f cores" % (
                      kids, kids / wall)],
                  ["ty_loadgen CPU (its getrusage)", "%.1f s = %.2f cores" % (
                      lg["client_cpu_s"], lg["client_cpu_s"] / wall)],
                  ["followers (this Python process) CPU", "%.1f s = %.2f cores" % (
                      self_cpu, self_cpu / wall)],
                  ["machine CPU busy (all cores, /proc/stat)", "%.0f%% of %d cores" % (
                      100 * busy, os.cpu_count())],
                  ["load average after", common.load_average()]])
    if failed:
        print("jobs not SUCCEEDED: %s" % failed)

    ok_errors = errors == 0
    ok_lines = store_lost == 0 and store_dup == 0 and no_end == 0 and f_lost == 0 and f_dup == 0
    ok_p99 = lg["latency_ms"]["p99"] <= 100
    print("targets: API errors 0: %s; lines lost/duplicated 0: %s; API p99 <= 100 ms: %s" % (
        common.verdict(ok_errors), common.verdict(ok_lines), common.verdict(ok_p99)))
    # A benchmark fails when something breaks (errors, lost lines, followers that never
    # finished, jobs that failed), not when it is slow.
    return 0 if ok_errors and ok_lines and not failed and f_unfinished == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
