#!/usr/bin/env bash
# The main job: installs dependencies, builds, starts trainyardd on its embedded defaults (if it
# is not running already), and runs the sample scikit-learn trainer end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
scripts/install-deps.sh
scripts/build.sh

BIN="$REPO/build/bin"
export TRAINYARD_ENDPOINT=${TRAINYARD_ENDPOINT:-http://127.0.0.1:8470}
DATA_DIR=${TRAINYARD_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/trainyard}

if curl -fsS "$TRAINYARD_ENDPOINT/readyz" >/dev/null 2>&1; then
  echo "==> trainyardd is already running at $TRAINYARD_ENDPOINT"
else
  mkdir -p "$DATA_DIR"
  echo "==> Starting trainyardd at $TRAINYARD_ENDPOINT (data dir $DATA_DIR, log $DATA_DIR/trainyardd.log)"
  nohup "$BIN/trainyardd" --data-dir "$DATA_DIR" >>"$DATA_DIR/trainyardd.log" 2>&1 &
  for _ in $(seq 100); do
    curl -fsS "$TRAINYARD_ENDPOINT/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS "$TRAINYARD_ENDPOINT/readyz" >/dev/null || { echo "trainyardd did not start; see $DATA_DIR/trainyardd.log"; exit 1; }
fi

BUCKET=gs://trainyard-quickstart
JOB=quickstart_$(date +%Y%m%d_%H%M%S)
"$BIN/trainyard" buckets create "$BUCKET" 2>/dev/null || true
echo "==> Submitting the sample trainer as job $JOB"
echo "    trainyard jobs submit training $JOB --package-path examples/sklearn/trainer \\"
echo "      --module-name trainer.task --staging-bucket $BUCKET --job-dir $BUCKET/$JOB \\"
echo "      --region us-central1 --stream-logs -- --epochs 5"
"$BIN/trainyard" jobs submit training "$JOB" --package-path examples/sklearn/trainer \
  --module-name trainer.task --staging-bucket "$BUCKET" --job-dir "$BUCKET/$JOB" \
  --region us-central1 --stream-logs -- --epochs 5
echo "==> Job $JOB:"
"$BIN/trainyard" jobs describe "$JOB"
echo "==> The model is in $BUCKET/$JOB ($DATA_DIR/buckets/${BUCKET#gs://}/$JOB):"
ls -l "$DATA_DIR/buckets/${BUCKET#gs://}/$JOB"
echo "==> The web console: $TRAINYARD_ENDPOINT/ (authentication is on: sign in with the administrator's"
echo "    token in $DATA_DIR/admin-token; the trainyard CLI on this machine reads that file itself)"
echo "==> Done. trainyardd keeps running at $TRAINYARD_ENDPOINT; stop it with: $BIN/trainyard admin stop --data-dir $DATA_DIR"
