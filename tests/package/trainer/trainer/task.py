"""The package test's trainer: prints --lines lines, then waits for --wait-for to exist."""
import argparse
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--lines", type=int, default=1)
parser.add_argument("--wait-for", default="")
parser.add_argument("--job-dir", default="")
args = parser.parse_args()
for i in range(args.lines):
    print("line %d of %d" % (i, args.lines))
if args.wait_for:
    while not os.path.exists(args.wait_for):
        time.sleep(0.1)
    print("go found")
