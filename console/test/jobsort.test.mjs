// Unit tests of the Jobs page's sort (src/jobsort.ts) on `node --test`: esbuild turns the
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
  entryPoints: [path.join(here, "..", "src", "jobsort.ts")],
  bundle: true,
  format: "esm",
  outfile: out,
  logLevel: "warning",
});
const m = await import(pathToFileURL(out).href);

test("a URL sort becomes the API's orderBy", () => {
  assert.equal(m.orderByOf(""), "");
  assert.equal(m.orderByOf("jobId"), "jobId");
  assert.equal(m.orderByOf("-createTime"), "createTime desc");
  assert.equal(m.orderByOf("-state"), "state desc");
  assert.equal(m.orderByOf("startTime"), "startTime");
});

test("a key the daemon cannot order by is no order at all", () => {
  assert.equal(m.parseSort("duration"), null);
  assert.equal(m.orderByOf("-duration"), "");
  assert.equal(m.orderByOf("--jobId"), "");
  assert.equal(m.orderByOf("labels.owner"), "");
});

test("a header click sorts ascending, then descending, then ascending", () => {
  assert.equal(m.nextSort("", "jobId"), "jobId");
  assert.equal(m.nextSort("jobId", "jobId"), "-jobId");
  assert.equal(m.nextSort("-jobId", "jobId"), "jobId");
  assert.equal(m.nextSort("-jobId", "state"), "state");
  assert.equal(m.nextSort("duration", "createTime"), "createTime");
});
