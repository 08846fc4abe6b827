// Unit tests of the Trials tab's logic (src/trialmodel.ts) on `node --test`: esbuild turns the
// TypeScript module into a temporary ES module first (no browser, no network).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "ty-console-test-")), "m.mjs");
await esbuild.build({
  entryPoints: [path.join(here, "..", "src", "trialmodel.ts")],
  bundle: true,
  format: "esm",
  outfile: out,
  logLevel: "warning",
});
const m = await import(pathToFileURL(out).href);
fs.rmSync(path.dirname(out), { recursive: true, force: true });

const trial = (id, state, value, params, step = "5") => ({
  trialId: String(id),
  state,
  hyperparameters: params,
  ...(value === undefined ? {} : { finalMetric: { trainingStep: step, objectiveValue: value } }),
});
const specs = [
  { parameterName: "lr", type: "DOUBLE", minValue: 0.0001, maxValue: 0.1, scaleType: "UNIT_LOG_SCALE" },
  { parameterName: "layers", type: "INTEGER", minValue: 1, maxValue: 8 },
  { parameterName: "opt", type: "CATEGORICAL", categoricalValues: ["adam", "sgd"] },
];
const rows = m.rowsOf([
  trial(1, "SUCCEEDED", 0.5, { lr: "0.01", layers: "2", opt: "sgd" }),
  trial(2, "SUCCEEDED", 0.2, { lr: "0.001", layers: "8", opt: "adam" }),
  trial(3, "FAILED", undefined, { lr: "0.1", layers: "1", opt: "adam" }),
  trial(4, "SUCCEEDED", 0.9, { lr: "0.0001", layers: "4", opt: "sgd" }),
  trial(5, "SUCCEEDED", 0.2, { lr: "0.05", layers: "3", opt: "sgd" }),
  trial(6, "RUNNING", 0.05, { lr: "0.02", layers: "5", opt: "adam" }),
]);
const ids = (rs) => rs.map((r) => r.id);

test("the best trial follows the goal, among succeeded trials, ties to the lower id", () => {
  assert.equal(m.bestTrial(rows, "MAXIMIZE").id, "4");
  assert.equal(m.bestTrial(rows, "MINIMIZE").id, "2"); // 6 is lower but still running
  assert.equal(m.bestTrial([], "MAXIMIZE"), undefined);
  assert.equal(m.goalOf({ trainingInput: { hyperparameters: {} } }), "MAXIMIZE");
  assert.equal(m.goalOf({ trainingInput: { hyperparameters: { goal: "MINIMIZE" } } }), "MINIMIZE");
});

test("sorting by a metric or any parameter, missing values last both ways", () => {
  assert.deepEqual(ids(m.sortRows(rows, "objective", specs)), ["6", "2", "5", "1", "4", "3"]);
  assert.deepEqual(ids(m.sortRows(rows, "-objective", specs)), ["4", "1", "2", "5", "6", "3"]);
  // Numbers as numbers ("8" > "10" would be a string sort), categories in their spec order.
  assert.deepEqual(ids(m.sortRows(rows, "p:layers", specs)), ["3", "1", "5", "4", "6", "2"]);
  assert.deepEqual(ids(m.sortRows(rows, "-p:lr", specs)), ["3", "5", "6", "1", "2", "4"]);
  assert.deepEqual(ids(m.sortRows(rows, "p:opt", specs)), ["2", "3", "6", "1", "4", "5"]);
  assert.deepEqual(ids(m.sortRows(rows, "id", specs)), ["1", "2", "3", "4", "5", "6"]);
});

test("axes: log scale, the spec's range, categories, the objective last", () => {
  const axes = m.axesOf(specs, rows);
  assert.deepEqual(axes.map((a) => a.key), ["p:lr", "p:layers", "p:opt", "objective"]);
  const [lr, layers, opt, obj] = axes;
  assert.equal(lr.log, true);
  assert.ok(Math.abs(lr.pos(rows[0]) - 2 / 3) < 1e-9); // 0.01 in [1e-4, 1e-1], log scale
  assert.equal(layers.pos(rows[1]), 1);
  assert.equal(opt.pos(rows[0]), 1);
  assert.equal(opt.pos(rows[1]), 0);
  assert.equal(obj.pos(rows[2]), undefined); // failed: no objective
  assert.equal(obj.pos(rows[3]), 1);
  assert.equal(lr.valueAt(0), "1.00e-4");
  assert.equal(opt.valueAt(1), "sgd");
});

test("brushes filter trials and survive the URL", () => {
  const axes = m.axesOf(specs, rows);
  assert.deepEqual(ids(m.brushed(rows, axes, {})), ids(rows));
  const sgd = m.brushed(rows, axes, { "p:opt": [0.5, 1] });
  assert.deepEqual(ids(sgd), ["1", "4", "5"]);
  // Two axes: both must hold; a trial without a value on a brushed axis is out.
  const both = m.brushed(rows, axes, { "p:opt": [0.5, 1], objective: [0, 0.3] });
  assert.deepEqual(ids(both), ["5"]); // 0.2 in [0.05, 0.9] is at 0.18, 0.5 at 0.53
  const text = m.formatBrushes({ "p:opt": [0.5, 1], objective: [0, 0.25] });
  assert.equal(text, "p:opt:0.500:1.000,objective:0.000:0.250");
  assert.deepEqual(m.parseBrushes(text), { "p:opt": [0.5, 1], objective: [0, 0.25] });
  assert.deepEqual(m.parseBrushes("objective:0.9:0.1,junk,x:a:b"), { objective: [0.1, 0.9] });
  assert.deepEqual(m.parseBrushes(null), {});
});
