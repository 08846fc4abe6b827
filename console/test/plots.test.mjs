// Unit tests of the canvas plots' geometry (src/plots.ts) on `node --test`: hit tests of lines
// and points (what a click on a canvas selects) and the keyboard form of a brush.
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
  entryPoints: [path.join(here, "..", "src", "plots.ts")],
  bundle: true,
  format: "esm",
  outfile: out,
  logLevel: "warning",
});
const m = await import(pathToFileURL(out).href);
fs.rmSync(path.dirname(out), { recursive: true, force: true });

test("segment distance: inside, past either end, degenerate", () => {
  assert.equal(m.segmentDistance2([5, 3], [0, 0], [10, 0]), 9);
  assert.equal(m.segmentDistance2([-3, 4], [0, 0], [10, 0]), 25);
  assert.equal(m.segmentDistance2([13, 4], [0, 0], [10, 0]), 25);
  assert.equal(m.segmentDistance2([3, 4], [0, 0], [0, 0]), 25);
});

test("nearestLine picks the closest polyline within the limit, across gaps", () => {
  const lines = [
    { id: "a", runs: [[[0, 0], [100, 0]]] },
    { id: "b", runs: [[[0, 10], [50, 10]], [[80, 10], [100, 10]]] },
    { id: "c", runs: [[[200, 200]]] },
  ];
  assert.equal(m.nearestLine(lines, [50, 3], 8), "a");
  assert.equal(m.nearestLine(lines, [50, 8], 8), "b");
  // In b's gap: a is 8.5 away (beyond the limit), b's runs end 15 away.
  assert.equal(m.nearestLine(lines, [65, 8.5], 8), "");
  assert.equal(m.nearestLine(lines, [90, 9], 8), "b");
  assert.equal(m.nearestLine(lines, [203, 204], 8), "c"); // a one-point run
  assert.equal(m.nearestLine([], [0, 0], 8), "");
  // A tie goes to the first.
  assert.equal(m.nearestLine(lines, [50, 5], 8), "a");
});

test("nearestPoint", () => {
  const pts = [
    { id: "1", at: [10, 10] },
    { id: "2", at: [20, 10] },
  ];
  assert.equal(m.nearestPoint(pts, [14, 10], 8), "1");
  assert.equal(m.nearestPoint(pts, [16, 11], 8), "2");
  assert.equal(m.nearestPoint(pts, [15, 30], 8), "");
});

test("shade buckets cover [0, 1] and clamp", () => {
  assert.equal(m.shadeBucket(0), 0);
  assert.equal(m.shadeBucket(1), m.SHADES - 1);
  assert.equal(m.shadeBucket(-1), 0);
  assert.equal(m.shadeBucket(0.5), Math.floor(m.SHADES / 2));
});

test("brushKey: start, move, clamp, resize, clear, other keys", () => {
  assert.deepEqual(m.brushKey(undefined, "ArrowUp"), [0.4, 0.6]);
  assert.deepEqual(m.brushKey(undefined, "ArrowDown"), [0.4, 0.6]);
  assert.deepEqual(m.brushKey([0.4, 0.6], "ArrowUp"), [0.5, 0.7]);
  assert.deepEqual(m.brushKey([0.4, 0.6], "ArrowDown"), [0.3, 0.5]);
  assert.deepEqual(m.brushKey([0.8, 0.95], "ArrowUp"), [0.85, 1]); // kept inside, same width
  assert.deepEqual(m.brushKey([0.05, 0.2], "ArrowDown"), [0, 0.15]);
  assert.deepEqual(m.brushKey([0.4, 0.6], "+"), [0.35, 0.65]);
  assert.deepEqual(m.brushKey([0.4, 0.6], "-"), [0.45, 0.55]);
  const tiny = m.brushKey([0.49, 0.51], "-");
  assert.ok(tiny[1] - tiny[0] >= 0.019 && tiny[0] < 0.5 && tiny[1] > 0.5, String(tiny));
  assert.equal(m.brushKey([0.4, 0.6], "Escape"), null);
  assert.equal(m.brushKey([0.4, 0.6], "Delete"), null);
  assert.equal(m.brushKey(undefined, "Escape"), undefined);
  assert.equal(m.brushKey([0.4, 0.6], "x"), undefined);
});
