"""Operating the daemon (issue 15 item 1): one daemon per data dir, --pidfile,
`trainyard admin stop`, a clean SIGTERM that leaves replicas running for the next start, and
--print-config output that loads back."""

import os
import subprocess

from conftest import (BIN, PROJECT, Daemon, build_sdist, job_body, make_package, upload_package,
                      wait_for)


def processes_with(marker):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(pid))
            except OSError:
                pass
    return found


def cli(*args, timeout=120):
    return subprocess.run([os.path.join(BIN, "trainyard")] + list(args), capture_output=True,
                          text=True, timeout=timeout)


def test_second_daemon_on_a_data_dir_refuses_naming_the_first(tmp_path):
    data = str(tmp_path / "data")
    os.makedirs(data)
    first = Daemon(data, extra_args=["--admission-paused"]).start()
    try:
        pkg = make_package(tmp_path, "print('never runs')\n")
        uri = upload_package(first, build_sdist(pkg))
        base = "/v1/projects/%s/jobs" % PROJECT
        assert first.request("POST", base, job_body("queued_1", uri))[0] == 200
        # The second one is not paused: without the lock it would recover and run queued_1.
        second = subprocess.run(
            [os.path.join(BIN, "trainyardd"), "--listen", "127.0.0.1:0", "--data-dir", data],
            capture_output=True, text=True, timeout=60)
        assert second.returncode != 0
        assert "pid %d" % first.proc.pid in second.stderr, second.stderr
        assert "listening on" not in second.stdout
        with open(os.path.join(data, "trainyardd.lock")) as f:
            assert f.read().strip() == str(first.proc.pid)
        # The first keeps serving, and its job was not touched.
        assert first.get_status("/readyz") == 200
        assert first.job("queued_1")["state"] == "QUEUED"
        assert first.request("POST", base, job_body("queued_2", uri))[0] == 200
        assert first.job("queued_2")["state"] == "QUEUED"
    finally:
        first.stop()


def test_admin_stop_leaves_replicas_running_for_the_next_start(tmp_path):
    data = str(tmp_path / "data")
    os.makedirs(data)
    pidfile = str(tmp_path / "trainyardd.pid")
    d = Daemon(data, extra_args=["--pidfile", pidfile]).start()
    try:
        with open(pidfile) as f:
            assert int(f.read()) == d.proc.pid
        marker = "ty-ops-survivor-%d" % os.getpid()
        # The trainer prints half of its lines, then waits for a file the test makes once the
        # daemon is back: it runs through the stop and the restart on any machine.
        pkg = make_package(tmp_path, """
            import os, sys, time
            release = sys.argv[2]
            for i in range(20):
                print("tick %d" % i, flush=True)
            deadline = time.time() + 300
            while not os.path.exists(release) and time.time() < deadline:
                time.sleep(0.05)
            for i in range(20, 40):
                print("tick %d" % i, flush=True)
        """)
        uri = upload_package(d, build_sdist(pkg))
        base = "/v1/projects/%s/jobs" % PROJECT
        release = str(tmp_path / "release")
        assert d.request("POST", base, job_body("survivor", uri, args=[marker, release]))[0] == 200
        d.wait_state("survivor", "RUNNING")
        wait_for(lambda: processes_with(marker), timeout=60, what="the trainer process")

        p = cli("admin", "stop", "--data-dir", data, "--timeout", "60s")
        assert p.returncode == 0, p.stderr
        assert "Stopped trainyardd (pid %d)" % d.proc.pid in p.stderr
        # Stopped means gone: the process has exited (cleanly) when the command returns.
        assert d.proc.wait(timeout=5) == 0
        assert not os.path.exists(pidfile)
        # The replica was not killed with the daemon.
        assert processes_with(marker), "the trainer died with the daemon"
        # Stopping again is not an error: nothing runs on the data dir.
        p = cli("admin", "stop", "--data-dir", data)
        assert p.returncode == 0 and "No trainyardd is running" in p.stderr, p.stderr

        d.start()  # re-attaches the running replica
        assert d.job("survivor")["state"] == "RUNNING"
        open(release, "w").close()
        job = d.wait_state("survivor", ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=90)
        assert job["state"] == "SUCCEEDED", job
        ticks = [e["jsonPayload"]["message"] for e in d.logs("survivor")
                 if e["jsonPayload"]["message"].startswith("tick")]
        assert ticks == ["tick %d" % i for i in range(40)]
    finally:
        d.stop()


def test_admin_stop_refuses_a_bad_timeout(tmp_path):
    p = cli("admin", "stop", "--data-dir", str(tmp_path), "--timeout", "soon")
    assert p.returncode != 0 and "--timeout" in p.stderr, p.stderr


def test_print_config_loads_back_unchanged(tmp_path):
    daemon = os.path.join(BIN, "trainyardd")
    data = str(tmp_path / "data #1")
    printed = subprocess.run([daemon, "--data-dir", data, "--print-config"], capture_output=True,
                             text=True, timeout=30, check=True).stdout
    config = tmp_path / "config.yaml"
    config.write_text(printed)
    again = subprocess.run([daemon, "--config", str(config), "--print-config"],
                           capture_output=True, text=True, timeout=30)
    assert again.returncode == 0, again.stderr
    assert again.stdout == printed
