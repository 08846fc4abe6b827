#!/usr/bin/python3
"""Start overhead of a custom-container replica: through Trainyard vs a bare `podman run`.

The image is the example trainer image (examples/container/build.sh); the command prints
time.time() as the container's first line. Both sides run in the same benchmark, alternating,
N times each:

  bare podman run    `podman run --rm --network=host --entrypoint python3 IMAGE -c ...` from
                     just before the exec to the container's first line (its own time.time())
  Trainyard          a BASIC job with masterConfig.imageUri and containerCommand, from just
                     before the POST to the container's first line; also POST -> SUCCEEDED seen

Target (issue 5): Trainyard's start overhead <= 1.2x the bare podman run (medians).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

IMAGE = "localhost/trainyard-example:1"
FIRST_LINE = "import time; print('started %.6f' % time.time(), flush=True)"
TARGET = 1.2


def podman_env(data_dir):
    env = dict(os.environ)
    conf = os.path.join(data_dir, "containers.conf")  # written by trainyardd for podman
    if os.path.exists(conf):
        env.setdefault("CONTAINERS_CONF", conf)
    return env


def bare_run(env):
    t0 = time.time()
    out = subprocess.run(["podman", "run", "--rm", "--network=host", "--entrypoint", "python3",
                          IMAGE, "-c", FIRST_LINE], capture_output=True, text=True, env=env,
                         check=True, timeout=120).stdout
    started = float(out.split()[1])
    return started - t0, time.time() - t0


def trainyard_run(client, job_id):
    t0 = time.time()
    client.check("POST", "/v1/projects/%s/jobs" % common.PROJECT, {
        "jobId": job_id,
        "trainingInput": {"region": "us-central1",
                          "masterConfig": {"imageUri": IMAGE,
                                           "containerCommand": ["python3", "-c", FIRST_LINE]}}})
    job = client.wait_state(job_id, ["SUCCEEDED", "FAILED", "CANCELLED"], timeout=120,
                            interval=0.005)
    done = time.time() - t0
    if job["state"] != "SUCCEEDED":
        raise SystemExit("job %s: %s" % (job_id, job))
    started = None
    for e in client.logs(job_id).get("entries", []):
        msg = e["jsonPayload"]["message"]
        if msg.startswith("started "):
            started = float(msg.split()[1])
    return started - t0, done


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if shutil.which("podman") is None:
        raise SystemExit("bench_containers: podman is not installed (scripts/install-deps.sh)")
    print("bench_containers: %s, %d runs each, alternating" % (IMAGE, args.runs))
    print("machine: %s; load average %s" % (common.machine_description(), common.load_average()))
    with common.Daemon(env={"TRAINYARD_GPUS": "none"}) as d:
        env = podman_env(d.data_dir)
        if subprocess.run(["podman", "image", "exists", IMAGE], env=env).returncode != 0:
            raise SystemExit("bench_containers: build %s first (examples/container/build.sh)"
                             % IMAGE)
        client = d.client()
        bare_run(env)  # warm the image's layers in the page cache
        trainyard_run(client, "ctr_warm")
        bare, ty, ty_done = [], [], []
        for i in range(args.runs):
            bare.append(bare_run(env)[0])
            first, done = trainyard_run(client, "ctr_%d" % i)
            ty.append(first)
            ty_done.append(done)
    rows = [
        ("bare podman run -> first line", common.ms(common.median(bare)),
         common.ms(max(bare)), " ".join(common.ms(x) for x in bare)),
        ("Trainyard POST -> first line", common.ms(common.median(ty)), common.ms(max(ty)),
         " ".join(common.ms(x) for x in ty)),
        ("Trainyard POST -> SUCCEEDED seen", common.ms(common.median(ty_done)),
         common.ms(max(ty_done)), " ".join(common.ms(x) for x in ty_done)),
    ]
    common.table("Container start, ms (N=%d)" % args.runs, ["measure", "median", "max", "runs"],
                 rows)
    ratio = common.median(ty) / common.median(bare)
    print("target: Trainyard start <= %.1fx a bare podman run (medians): %.2fx -> %s"
          % (TARGET, ratio, common.verdict(ratio <= TARGET)))
    print(json.dumps({"bare_ms": [round(x * 1000, 1) for x in bare],
                      "trainyard_ms": [round(x * 1000, 1) for x in ty]}))


if __name__ == "__main__":
    main()
