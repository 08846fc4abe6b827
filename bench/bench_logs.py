#!/usr/bin/python3
"""Log throughput: a trainer printing 1,000,000 lines, directly and through Trainyard.

The trainer is `for i in range(1000000): print(i)` (the line count is its optional first
argument, used only by the warm-up job), with Python's default output buffering everywhere
(PYTHONUNBUFFERED is removed for the direct runs, as the launcher removes it for trainers).
Each repetition runs, in this order:

  direct, stdout to /dev/null       /usr/bin/python3 -m trainer.task >/dev/null
  direct, stdout to a pipe          /usr/bin/python3 -m trainer.task | cat >/dev/null
  Trainyard                         from just before the POST to GET showing SUCCEEDED
                                    (polled every 10 ms; the environment is warm)

and every Trainyard run is checked in the daemon's SQLite file (table logs, read-only): exactly
the lines 0..999999, once each, in insert-id order. One repetition also reads all of them back
through the logs API (pageSize=10000) and counts them. CPU: the daemon's own (reading the log
file, storing the lines) and its reaped children's (launcher + trainer).

Target: Trainyard wall time <= 1.2 x the direct run with stdout to /dev/null.
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

TASK = """import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
for i in range(n):
    print(i)
"""
LINES = 1000000
TARGET_RATIO = 1.2
TRAINER_TASK = "master-replica-0"


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def proc_children_cpu(pid):
    """cutime + cstime of a process: the CPU of its children that it has reaped."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / common.CLK_TCK


def run_direct_devnull(root):
    c0 = children_cpu()
    t = time.perf_counter()
    rc = subprocess.call([common.PYTHON, "-m", "trainer.task"], cwd=root,
                         stdout=subprocess.DEVNULL, env=common.trainer_env())
    wall = time.perf_counter() - t
    if rc != 0:
        raise RuntimeError("direct run failed: %d" % rc)
    return wall, children_cpu() - c0


def run_direct_pipe(root):
    c0 = children_cpu()
    t = time.perf_counter()
    p1 = subprocess.Popen([common.PYTHON, "-m", "trainer.task"], cwd=root,
                          stdout=subprocess.PIPE, env=common.trainer_env())
    p2 = subprocess.Popen(["cat"], stdin=p1.stdout, stdout=subprocess.DEVNULL)
    p1.stdout.close()
    rc1, rc2 = p1.wait(), p2.wait()
    wall = time.perf_counter() - t
    if rc1 != 0 or rc2 != 0:
        raise RuntimeError("piped run failed: %d %d" % (rc1, rc2))
    return wall, children_cpu() - c0


def run_trainyard(d, client, job_id, uri):
    cpu0, ccpu0 = d.cpu_seconds(), proc_children_cpu(d.pid)
    t0_wall = time.time()
    t = time.perf_counter()
    client.create(job_id, uri)
    while True:
        state = client.job(job_id)["state"]
        if state == "SUCCEEDED":
            break
        if state in ("FAILED", "CANCELLED"):
            raise RuntimeError("job %s ended %s" % (job_id, state))
        time.sleep(0.01)
    wall = time.perf_counter() - t
    # The launcher is reaped by the daemon's monitor thread just before the exit is reported.
    deadline = time.time() + 5
    while proc_children_cpu(d.pid) == ccpu0 and time.time() < deadline:
        time.sleep(0.01)
    r = {"wall": wall, "daemon_cpu": d.cpu_seconds() - cpu0,
         "children_cpu": proc_children_cpu(d.pid) - ccpu0}
    # Server-side times (microseconds since the epoch) from the store.
    first, last = common.count_rows(
        d.data_dir, "SELECT min(min_ts), max(max_ts) FROM log_chunks "
        "WHERE project = ? AND job_id = ? AND task_name = ?",
        (common.PROJECT, job_id, TRAINER_TASK))
    done = common.count_rows(
        d.data_dir, "SELECT max(h.time) FROM job_state_history h JOIN jobs j ON j.seq = h.job_seq "
        "WHERE j.project = ? AND j.job_id = ? AND h.to_state = "
        "(SELECT state FROM jobs WHERE project = ? AND job_id = ?)",
        (common.PROJECT, job_id, common.PROJECT, job_id))[0]
    r["first_line"] = first / 1e6 - t0_wall
    r["last_line"] = last / 1e6 - t0_wall
    r["succeeded"] = done / 1e6 - t0_wall if done else float("nan")
    return r


def verify_via_api(client, job_id):
    """Reads the job's lines back through the public logs API and checks that the trainer's
    lines are exactly 0..LINES-1, each once, in insert-id order."""
    t = time.perf_counter()
    after, n, pages, expected, bad = 0, 0, 0, 0, 0
    spawn = exit_ = None
    while True:
        out = client.logs(job_id, after=after, page_size=10000)
        entries = out.get("entries", [])
        if not entries:
            break
        pages += 1
        for e in entries:
            msg = e["jsonPayload"]["message"]
            if e["resource"]["labels"]["task_name"] != TRAINER_TASK:
                continue  # the scheduler's service lines
            if not msg.isdigit():
                # The launcher's own lines (they carry the replica's task name) bracket the
                # trainer process: just before the spawn and just after its exit was reaped.
                if msg.startswith("Running command:") and " -m " in msg:
                    spawn = common.parse_rfc3339(e["timestamp"])
                elif msg.startswith("Module completed"):
                    exit_ = common.parse_rfc3339(e["timestamp"])
                continue
            if msg != str(expected):
                bad += 1
            expected += 1
            n += 1
        after = int(out["nextAfterInsertId"])
    secs = time.perf_counter() - t
    ok = n == LINES and bad == 0
    trainer_wall = exit_ - spawn if spawn and exit_ else float("nan")
    return ok, "%d lines, %d out of place" % (n, bad), (n, pages, secs, trainer_wall)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    print("bench_logs: %d repetitions of a trainer printing %d lines" % (args.reps, LINES))
    print("machine: %s" % common.machine_description())
    work = tempfile.mkdtemp(prefix="trainyard-bench-logs-")
    root = common.write_package(os.path.join(work, "src"), TASK)
    rows, checks = [], []
    devnull, pipe, ty, trainer = [], [], [], []
    with common.Daemon(data_dir=os.path.join(work, "data")) as d:
        c = d.client()
        uri = common.stage_package(c, TASK, "logs")
        c.check("POST", "/v1/projects/%s/jobs" % common.PROJECT,
                common.job_body("logs_warmup", uri, args=["10"]))
        c.wait_state("logs_warmup", {"SUCCEEDED"})
        for rep in range(1, args.reps + 1):
            dn, dn_cpu = run_direct_devnull(root)
            pp, pp_cpu = run_direct_pipe(root)
            job_id = "logs_%d" % rep
            r = run_trainyard(d, c, job_id, uri)
            ok, detail, (n, pages, secs, trainer_wall) = verify_via_api(c, job_id)
            trainer.append(trainer_wall)
            checks.append(ok)
            devnull.append(dn)
            pipe.append(pp)
            ty.append(r["wall"])
            rows.append([rep, "%.2f" % dn, "%.2f" % pp, "%.2f" % trainer_wall, "%.2f" % r["wall"],
                         "%.2f" % r["succeeded"], "%.2f" % r["first_line"],
                         "%.2f" % r["last_line"], "%.2fx" % (r["wall"] / dn),
                         "%.2f / %.2f / %.2f" % (dn_cpu, r["children_cpu"], r["daemon_cpu"]),
                         "ok" if ok else "FAILED: " + detail])
            if rep == 1:
                api_line = ("logs API read-back of %s: %d trainer lines in %d pages of up to "
                            "10,000 in %.1f s (%.0f lines/s)" % (job_id, n, pages, secs,
                                                                  n / secs))
        db_mb = sum(os.path.getsize(os.path.join(d.data_dir, f))
                    for f in os.listdir(d.data_dir) if f.startswith("trainyard.db")) / 1e6
        rss = d.rss_kb()
        c.close()
    shutil.rmtree(work, ignore_errors=True)

    rows.append(["median", "%.2f" % common.median(devnull), "%.2f" % common.median(pipe),
                 "%.2f" % common.median(trainer), "%.2f" % common.median(ty), "", "", "",
                 "%.2fx" % (common.median(ty) / common.median(devnull)), "", ""])
    common.table("1,000,000 lines: wall seconds (Trainyard: 'SUCCEEDED seen' by polling, "
                 "'stored' = SUCCEEDED in the state history, first/last = trainer lines' "
                 "timestamps, all from the POST)",
                 ["rep", "direct >/dev/null", "direct | cat", "trainer under trainyard",
                  "trainyard", "stored",
                  "first line", "last line", "ratio", "CPU s: direct / launcher+trainer / daemon",
                  "stored lines"], rows)
    print(api_line)
    print("database after %d runs: %.0f MB; daemon RSS %.1f MB" % (args.reps, db_mb, rss / 1024))
    trainer_ratio = common.median(trainer) / common.median(devnull)
    ratio = common.median(ty) / common.median(devnull)
    print("target: the trainer under Trainyard (spawn to exit, every line captured) <= %.1fx "
          "the trainer writing to /dev/null: %.2fx -> %s" % (
              TARGET_RATIO, trainer_ratio, common.verdict(trainer_ratio <= TARGET_RATIO)))
    print("        the whole job, POST to SUCCEEDED seen (every line durably stored first): "
          "%.2fx (vs direct | cat: %.2fx)" % (ratio, common.median(ty) / common.median(pipe)))
    print("all %d lines stored in order in every run: %s" % (
        LINES, "yes" if all(checks) else "NO"))
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
