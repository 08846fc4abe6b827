// The Trials tab of a hyperparameter tuning job (docs/console.md "Trials"): a table sortable by
// any parameter or metric with the best trial pinned, parallel coordinates with brushing, a
// parameter-vs-objective scatter plot and each trial's metric curve (allMetrics, from
// GET …/jobs/J/trials, loaded page by page after the rest is on screen). The lines and points
// are drawn on canvas (plots.ts), axes, brushes and the selection in SVG on top; no chart
// library. Every view state is in the URL: sort, brushes, the scatter's parameter and the
// selected trial.
import { Component, ComponentChildren } from "preact";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, enc, Job, jobPath, TERMINAL } from "./api";
import { duration, localTime, utcTitle } from "./format";
import { StateBadge } from "./jobs";
import {
  brushKey,
  eventPoint,
  nearestLine,
  nearestPoint,
  onRedrawNeeded,
  prepareCanvas,
  Pt,
  SHADES,
  shadeBucket,
  Size,
  themeColor,
} from "./plots";
import { navigate, withParams } from "./router";
import {
  Axis,
  axesOf,
  bestTrial,
  brushed,
  Brushes,
  formatBrushes,
  goalOf,
  Metric,
  paramSpecs,
  parseBrushes,
  rampColor,
  rowsOf,
  sortRows,
  Trial,
  TrialRow,
} from "./trialmodel";

const METRICS_POLL_MS = 5000;
// Rows rendered at first and added by "Show more": 1,000 rows would cost several frames on
// every sort and brush, and a screen shows fewer.
const TABLE_ROWS = 50;
const MORE_ROWS = 200;

// Renders `render()` again only when one of `deps` changed (by identity): with 1,000 trials,
// selecting one must not re-diff every line, point and row. Handlers inside read the URL, not
// props, so they never go stale.
class Memo extends Component<{ deps: unknown[]; render: () => ComponentChildren }> {
  shouldComponentUpdate(next: { deps: unknown[] }) {
    const d = this.props.deps;
    return next.deps.length !== d.length || next.deps.some((x, i) => x !== d[i]);
  }
  render() {
    return this.props.render();
  }
}

interface TrialsPage {
  trials?: Trial[];
  nextPageToken?: string;
}

// Every trial's allMetrics, in pages of METRICS_PAGE trials, each page shown as it arrives (the
// first curves appear while the daemon still reads the rest); refreshed while the job runs.
const METRICS_PAGE = 500;
function useAllMetrics(project: string, id: string, running: boolean, tick: number) {
  const [metrics, setMetrics] = useState<Map<string, Metric[]>>(new Map());
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState("");
  const last = useRef(0);
  useEffect(() => {
    if (tick === 0) return;
    if (running && Date.now() - last.current < METRICS_POLL_MS && metrics.size > 0) return;
    last.current = Date.now();
    let live = true;
    (async () => {
      const out = new Map<string, Metric[]>();
      const first = metrics.size === 0;
      let token = "";
      do {
        const q = `?pageSize=${METRICS_PAGE}${token ? `&pageToken=${enc(token)}` : ""}`;
        const page = await api<TrialsPage>("GET", `${jobPath(project, id)}/trials${q}`);
        for (const t of page.trials ?? []) out.set(t.trialId, t.allMetrics ?? []);
        token = page.nextPageToken ?? "";
        // A first load shows each page; a refresh swaps the whole set at the end.
        if (live && first && token) setMetrics(new Map(out));
      } while (token && live);
      if (live) {
        setMetrics(out);
        setLoading(false);
        setError("");
      }
    })().catch((e) => {
      if (!live) return;
      setLoading(false);
      setError(`Could not read the trials' intermediate reports: ${(e as Error).message}`);
    });
    return () => {
      live = false;
    };
  }, [project, id, running, tick]);
  return { metrics, loading, error };
}

// Geometry of the parallel-coordinates plot (viewBox units; the SVG and the canvas under it
// scale to their box).
const PC = { w: 1000, h: 320, left: 50, right: 50, top: 28, bottom: 30 };
const pcX = (i: number, n: number) =>
  n <= 1 ? PC.w / 2 : PC.left + (i * (PC.w - PC.left - PC.right)) / (n - 1);
const pcY = (t: number) => PC.top + (1 - t) * (PC.h - PC.top - PC.bottom);

// The objective's position for the colour ramp: 0 = worst for the goal, 1 = best.
function objectiveT(axis: Axis, r: TrialRow, minimize: boolean): number | undefined {
  const p = axis.pos(r);
  return p === undefined ? undefined : minimize ? 1 - p : p;
}

function objectiveShade(axis: Axis, r: TrialRow, minimize: boolean): string {
  const t = objectiveT(axis, r, minimize);
  return t === undefined ? "var(--muted)" : rampColor(t);
}

function traceRuns(ctx: CanvasRenderingContext2D, runs: Pt[][]) {
  for (const run of runs) {
    ctx.moveTo(run[0][0], run[0][1]);
    if (run.length === 1) ctx.lineTo(run[0][0] + 0.01, run[0][1]);
    for (let i = 1; i < run.length; i++) ctx.lineTo(run[i][0], run[i][1]);
  }
}

function pathOf(runs: Pt[][]): string {
  return runs
    .map((run) => run.map((p, i) => `${i ? "L" : "M"}${p[0].toFixed(1)} ${p[1].toFixed(1)}`).join(""))
    .join("");
}

// Strokes the lines in colour buckets of the objective (a few dozen strokes for 1,000 lines).
function strokeByShade(
  ctx: CanvasRenderingContext2D,
  lines: { runs: Pt[][]; t?: number }[],
  muted: string,
) {
  const buckets: { runs: Pt[][] }[][] = Array.from({ length: SHADES + 1 }, () => []);
  for (const l of lines) buckets[l.t === undefined ? SHADES : shadeBucket(l.t)].push(l);
  buckets.forEach((ls, b) => {
    if (ls.length === 0) return;
    ctx.strokeStyle = b === SHADES ? muted : rampColor((b + 0.5) / SHADES);
    ctx.beginPath();
    for (const l of ls) traceRuns(ctx, l.runs);
    ctx.stroke();
  });
}

// A <canvas> under an SVG overlay, redrawn by `draw` after every render whose `deps` changed,
// on resizes and when the colour scheme changes. Its size comes from a ResizeObserver (which
// runs after layout, before paint), so drawing never forces a layout of the page.
function useCanvas(draw: (c: HTMLCanvasElement, size: Size) => void, deps: unknown[]) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const size = useRef<Size | null>(null);
  const latest = useRef(draw);
  latest.current = draw;
  useLayoutEffect(() => {
    if (canvas.current && size.current) draw(canvas.current, size.current);
  }, deps);
  useEffect(() => {
    const c = canvas.current;
    if (!c) return;
    return onRedrawNeeded(c, (s) => {
      size.current = s;
      if (canvas.current) latest.current(canvas.current, s);
    });
  }, []);
  return canvas;
}

function ParallelCoordinates(props: {
  rows: TrialRow[];
  axes: Axis[];
  inside: Set<string>;
  brushes: Brushes;
  selected: string;
  best?: string;
  minimize: boolean;
  onBrush: (key: string, range: [number, number] | null) => void;
  onSelect: (id: string) => void;
}) {
  const { rows, axes, inside, brushes, selected, best, minimize } = props;
  const svg = useRef<SVGSVGElement>(null);
  // The drag in progress: a ref for the event handlers (events can outrun renders), state for
  // drawing it.
  const [drag, setDragState] = useState<{ key: string; from: number; to: number } | null>(null);
  const dragRef = useRef<{ key: string; from: number; to: number } | null>(null);
  const setDrag = (d: { key: string; from: number; to: number } | null) => {
    dragRef.current = d;
    setDragState(d);
  };
  const objective = axes[axes.length - 1];
  // Each trial's polyline (runs of points: a missing value leaves a gap), once per data change.
  const lines = useMemo(
    () =>
      rows.map((r) => {
        const runs: Pt[][] = [];
        let run: Pt[] = [];
        axes.forEach((a, i) => {
          const p = a.pos(r);
          if (p === undefined) {
            if (run.length) runs.push(run);
            run = [];
            return;
          }
          run.push([pcX(i, axes.length), pcY(p)]);
        });
        if (run.length) runs.push(run);
        return { id: r.id, runs, t: objectiveT(objective, r, minimize) };
      }),
    [rows, axes, minimize],
  );
  const canvas = useCanvas(
    (c, size) => {
      const ctx = prepareCanvas(c, size, PC);
      if (!ctx) return;
      const muted = themeColor(c, "--muted", "#888");
      const ins = lines.filter((l) => inside.has(l.id));
      ctx.lineWidth = 1.2;
      ctx.globalAlpha = 0.35;
      ctx.strokeStyle = themeColor(c, "--line", "#ccc");
      ctx.beginPath();
      for (const l of lines) if (!inside.has(l.id)) traceRuns(ctx, l.runs);
      ctx.stroke();
      ctx.globalAlpha = 0.55;
      strokeByShade(ctx, ins, muted);
      const b = ins.find((l) => l.id === best);
      if (b) {
        ctx.globalAlpha = 1;
        ctx.lineWidth = 2.5;
        strokeByShade(ctx, [b], muted);
      }
      // What is drawn, for tests and tools (the plot's text alternative is the table).
      c.dataset.drawn = String(lines.length);
      c.dataset.in = ins.map((l) => l.id).join(",");
      c.dataset.best = b ? b.id : "";
    },
    [lines, inside, best],
  );
  const posOf = (clientY: number): number => {
    const box = svg.current!.getBoundingClientRect();
    const y = ((clientY - box.top) * PC.h) / box.height;
    return Math.max(0, Math.min(1, 1 - (y - PC.top) / (PC.h - PC.top - PC.bottom)));
  };
  const shown = (key: string): [number, number] | undefined =>
    drag && drag.key === key
      ? [Math.min(drag.from, drag.to), Math.max(drag.from, drag.to)]
      : brushes[key];
  const sel = lines.find((l) => l.id === selected);
  return (
    <div
      class="plot"
      id="trials-pc"
      onClick={(e) => {
        if ((e.target as Element).closest(".brush-area")) return;
        const at = eventPoint(e, svg.current!, PC);
        const id = nearestLine(lines.filter((l) => inside.has(l.id)), at, 8);
        if (id) props.onSelect(id);
      }}
    >
      <canvas ref={canvas} class="lines" />
      <svg
        ref={svg}
        class="chart pc"
        viewBox={`0 0 ${PC.w} ${PC.h}`}
        role="img"
        aria-label="Parallel coordinates: one line per trial across every parameter and the objective; drag on an axis, or focus it and use the arrow keys, to filter"
      >
        {sel && <path class="sel overlay" data-sel={sel.id} d={pathOf(sel.runs)} />}
        {axes.map((a, i) => {
          const x = pcX(i, axes.length);
          const b = shown(a.key);
          return (
            <g class="axis" data-axis={a.key}>
              <line x1={x} x2={x} y1={pcY(0)} y2={pcY(1)} />
              <text x={x} y={PC.top - 12} class="axis-label">
                {a.label}
                {a.log ? " (log)" : ""}
              </text>
              <text x={x + 4} y={pcY(1) + 4} class="tick">
                {a.valueAt(1)}
              </text>
              <text x={x + 4} y={pcY(0) + 4} class="tick">
                {a.valueAt(0)}
              </text>
              {b && (
                <rect
                  class="brush"
                  data-brush={a.key}
                  x={x - 8}
                  width={16}
                  y={pcY(b[1])}
                  height={Math.max(2, pcY(b[0]) - pcY(b[1]))}
                />
              )}
              <rect
                class="brush-area"
                data-axis-area={a.key}
                x={x - 14}
                width={28}
                y={pcY(1) - 4}
                height={pcY(0) - pcY(1) + 8}
                tabindex={0} /* lowercase: an SVG element's attribute, not a property */
                aria-label={`${a.label} axis: arrow keys move a range filter, + and - resize it, Escape clears it`}
                onKeyDown={(e) => {
                  // From the URL, not props: keys can come faster than renders.
                  const now = parseBrushes(new URL(location.href).searchParams.get("brush"));
                  const next = brushKey(now[a.key], e.key);
                  if (next === undefined) return;
                  e.preventDefault();
                  props.onBrush(a.key, next);
                }}
                onPointerDown={(e) => {
                  (e.currentTarget as Element).setPointerCapture?.(e.pointerId);
                  const t = posOf(e.clientY);
                  setDrag({ key: a.key, from: t, to: t });
                }}
                onPointerMove={(e) => {
                  const d = dragRef.current;
                  if (d && d.key === a.key) setDrag({ ...d, to: posOf(e.clientY) });
                }}
                onPointerUp={(e) => {
                  const drag = dragRef.current;
                  if (!drag || drag.key !== a.key) return;
                  const to = posOf(e.clientY);
                  setDrag(null);
                  // A click without a drag clears the axis' brush.
                  if (Math.abs(to - drag.from) < 0.01) props.onBrush(a.key, null);
                  else props.onBrush(a.key, [Math.min(drag.from, to), Math.max(drag.from, to)]);
                }}
              />
            </g>
          );
        })}
      </svg>
    </div>
  );
}

const SC = { w: 500, h: 300, left: 56, right: 16, top: 12, bottom: 34 };
const scX = (t: number) => SC.left + t * (SC.w - SC.left - SC.right);
const scY = (t: number) => SC.top + (1 - t) * (SC.h - SC.top - SC.bottom);

function Frame(props: { x: Axis | null; y: { lo: string; hi: string }; xLabel: string; yLabel: string }) {
  return (
    <g class="frame">
      <line x1={scX(0)} x2={scX(1)} y1={scY(0)} y2={scY(0)} />
      <line x1={scX(0)} x2={scX(0)} y1={scY(0)} y2={scY(1)} />
      <text x={scX(0)} y={SC.h - 16} class="tick">
        {props.x ? props.x.valueAt(0) : ""}
      </text>
      <text x={scX(1)} y={SC.h - 16} class="tick end">
        {props.x ? props.x.valueAt(1) : ""}
      </text>
      <text x={(scX(0) + scX(1)) / 2} y={SC.h - 2} class="axis-label">
        {props.xLabel}
      </text>
      <text x={SC.left - 4} y={scY(0)} class="tick end">
        {props.y.lo}
      </text>
      <text x={SC.left - 4} y={scY(1) + 8} class="tick end">
        {props.y.hi}
      </text>
      <text x={SC.left + 6} y={SC.top + 10} class="axis-label start">
        {props.yLabel}
      </text>
    </g>
  );
}

function Scatter(props: {
  rows: TrialRow[];
  x: Axis;
  objective: Axis;
  selected: string;
  best?: string;
  minimize: boolean;
  onSelect: (id: string) => void;
}) {
  const { rows, x, objective, selected, best, minimize } = props;
  const svg = useRef<SVGSVGElement>(null);
  const points = useMemo(() => {
    const out: { id: string; at: Pt; t?: number; r: TrialRow }[] = [];
    for (const r of rows) {
      const px = x.pos(r);
      const py = objective.pos(r);
      if (px === undefined || py === undefined) continue;
      out.push({ id: r.id, at: [scX(px), scY(py)], t: objectiveT(objective, r, minimize), r });
    }
    return out;
  }, [rows, x, objective, minimize]);
  const canvas = useCanvas(
    (c, size) => {
      const ctx = prepareCanvas(c, size, SC);
      if (!ctx) return;
      const buckets: Pt[][] = Array.from({ length: SHADES + 1 }, () => []);
      for (const p of points) buckets[p.t === undefined ? SHADES : shadeBucket(p.t)].push(p.at);
      ctx.lineWidth = 0.5;
      ctx.strokeStyle = themeColor(c, "--bg", "#fff");
      const muted = themeColor(c, "--muted", "#888");
      buckets.forEach((pts, b) => {
        if (pts.length === 0) return;
        ctx.fillStyle = b === SHADES ? muted : rampColor((b + 0.5) / SHADES);
        ctx.beginPath();
        for (const [px, py] of pts) {
          ctx.moveTo(px + 3.5, py);
          ctx.arc(px, py, 3.5, 0, 2 * Math.PI);
        }
        ctx.fill();
        ctx.stroke();
      });
      const b = points.find((p) => p.id === best);
      if (b) {
        ctx.lineWidth = 2;
        ctx.strokeStyle = themeColor(c, "--ok", "#1a7f37");
        ctx.beginPath();
        ctx.arc(b.at[0], b.at[1], 3.5, 0, 2 * Math.PI);
        ctx.stroke();
      }
      c.dataset.drawn = String(points.length);
      c.dataset.in = points.map((p) => p.id).join(",");
      c.dataset.best = b ? b.id : "";
    },
    [points, best],
  );
  const sel = points.find((p) => p.id === selected);
  const near = (e: MouseEvent) => nearestPoint(points, eventPoint(e, svg.current!, SC), 8);
  return (
    <div
      class="plot"
      id="trials-scatter"
      onClick={(e) => {
        const id = near(e);
        if (id) props.onSelect(id);
      }}
      onMouseMove={(e) => {
        // The point under the pointer, as a tooltip.
        const p = points.find((q) => q.id === near(e));
        (e.currentTarget as HTMLElement).title = p
          ? `Trial ${p.id}: ${x.label} = ${p.r.params[x.key.slice(2)] ?? ""}, objective = ${p.r.objective}`
          : "";
      }}
    >
      <canvas ref={canvas} class="points" />
      <svg ref={svg} class="chart scatter" viewBox={`0 0 ${SC.w} ${SC.h}`} role="img"
        aria-label={`${x.label} against the objective, one point per trial`}>
        <Frame x={x} y={{ lo: objective.valueAt(0), hi: objective.valueAt(1) }} xLabel={x.label}
          yLabel="objective" />
        {sel && (
          <circle class="sel overlay" data-sel={sel.id} cx={sel.at[0]} cy={sel.at[1]} r={6}
            fill={objectiveShade(objective, sel.r, minimize)} />
        )}
      </svg>
    </div>
  );
}

function Curves(props: {
  rows: TrialRow[];
  metrics: Map<string, Metric[]>;
  loading: boolean;
  selected: string;
  best?: string;
  onSelect: (id: string) => void;
}) {
  const { rows, metrics, selected, best } = props;
  const svg = useRef<SVGSVGElement>(null);
  // Each trial's reports as sorted (step, value) points, parsed once per metrics change (a
  // brush only picks among them).
  const parsed = useMemo(() => {
    const out = new Map<string, [number, number][]>();
    metrics.forEach((ms, id) => {
      const pts: [number, number][] = [];
      for (const m of ms) {
        const s = Number(m.trainingStep ?? 0);
        const v = m.objectiveValue;
        if (typeof v !== "number" || !isFinite(v) || isNaN(s)) continue;
        pts.push([s, v]);
      }
      pts.sort((a, b) => a[0] - b[0]);
      if (pts.length) out.set(id, pts);
    });
    return out;
  }, [metrics]);
  const series = useMemo(() => {
    let s0 = Infinity, s1 = -Infinity, v0 = Infinity, v1 = -Infinity;
    const raw: { id: string; pts: [number, number][] }[] = [];
    for (const r of rows) {
      const pts = parsed.get(r.id);
      if (!pts) continue;
      for (const [s, v] of pts) {
        if (s < s0) s0 = s;
        if (s > s1) s1 = s;
        if (v < v0) v0 = v;
        if (v > v1) v1 = v;
      }
      raw.push({ id: r.id, pts });
    }
    const fx = (s: number) => scX(s1 === s0 ? 0.5 : (s - s0) / (s1 - s0));
    const fy = (v: number) => scY(v1 === v0 ? 0.5 : (v - v0) / (v1 - v0));
    const out = raw.map((c) => ({ id: c.id, runs: [c.pts.map((p): Pt => [fx(p[0]), fy(p[1])])] }));
    return { out, s0, s1, v0, v1 };
  }, [rows, parsed]);
  const { out, s0, s1, v0, v1 } = series;
  const canvas = useCanvas(
    (c, size) => {
      const ctx = prepareCanvas(c, size, SC);
      if (!ctx) return;
      ctx.lineWidth = 1;
      ctx.globalAlpha = 0.45;
      ctx.strokeStyle = themeColor(c, "--muted", "#888");
      ctx.beginPath();
      for (const l of out) if (l.id !== best) traceRuns(ctx, l.runs);
      ctx.stroke();
      // The best trial last, on top.
      const b = out.find((l) => l.id === best);
      if (b) {
        ctx.globalAlpha = 1;
        ctx.lineWidth = 2;
        ctx.strokeStyle = themeColor(c, "--ok", "#1a7f37");
        ctx.beginPath();
        traceRuns(ctx, b.runs);
        ctx.stroke();
      }
      c.dataset.drawn = String(out.length);
      c.dataset.in = out.map((l) => l.id).join(",");
      c.dataset.best = b ? b.id : "";
    },
    [series, best],
  );
  const fmt = (x: number) => String(Number(x.toPrecision(4)));
  const sel = out.find((c) => c.id === selected);
  const empty = out.length === 0;
  return (
    <>
      {empty && !props.loading && (
        <p class="muted" id="trials-curves-empty">
          No intermediate reports yet: a trainer reports them with hypertune's
          report_hyperparameter_tuning_metric(global_step=…).
        </p>
      )}
      <div
        class={"plot" + (empty ? " hidden" : "")}
        id="trials-curves"
        onClick={(e) => {
          const id = nearestLine(out, eventPoint(e, svg.current!, SC), 6);
          if (id) props.onSelect(id);
        }}
      >
        <canvas ref={canvas} class="curves" />
        <svg ref={svg} class="chart curves" viewBox={`0 0 ${SC.w} ${SC.h}`} role="img"
          aria-label="The objective reported at each training step, one line per trial">
          {!empty && (
            <Frame x={null} y={{ lo: fmt(v0), hi: fmt(v1) }}
              xLabel={`training step ${fmt(s0)} – ${fmt(s1)}`} yLabel="objective" />
          )}
          {sel && <path class="curve sel overlay" data-sel={sel.id} d={pathOf(sel.runs)} />}
        </svg>
      </div>
    </>
  );
}

export function TrialsPanel(props: { project: string; job: Job; url: URL }) {
  const { project, job, url } = props;
  const running = !TERMINAL.has(job.state);
  // The curves' data (megabytes for 1,000 trials) is asked for once the table and plots are on
  // screen, so reading it (daemon) and parsing it (browser) does not delay them.
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const t = window.setTimeout(() => setTick((x) => x + 1), 0);
    return () => clearTimeout(t);
  }, [job]);
  const { metrics, loading, error } = useAllMetrics(project, job.jobId, running, tick);
  const specs = useMemo(() => paramSpecs(job), [job.trainingInput]);
  const trials = (job.trainingOutput?.trials ?? []) as Trial[];
  const rows = useMemo(() => rowsOf(trials), [job.trainingOutput]);
  const goal = goalOf(job);
  const minimize = goal === "MINIMIZE";
  const best = useMemo(() => bestTrial(rows, goal), [rows, goal]);
  const axes = useMemo(() => axesOf(specs, rows), [specs, rows]);
  const sort = url.searchParams.get("sort") ?? (minimize ? "objective" : "-objective");
  const brushText = url.searchParams.get("brush");
  const brushes = useMemo(() => parseBrushes(brushText), [brushText]);
  const selected = url.searchParams.get("trial") ?? "";
  const inside = useMemo(() => brushed(rows, axes, brushes), [rows, axes, brushes]);
  const insideIds = useMemo(() => new Set(inside.map((r) => r.id)), [inside]);
  const sorted = useMemo(() => sortRows(inside, sort, specs), [inside, sort, specs]);
  const xKey = url.searchParams.get("x") ?? axes[0]?.key ?? "";
  const xAxis = axes.find((a) => a.key === xKey && a.key !== "objective") ?? axes[0];
  const objective = axes[axes.length - 1];
  const base = `/console/projects/${enc(project)}/jobs/${enc(job.jobId)}`;

  const set = (changes: Record<string, string | null>) =>
    navigate(withParams(new URL(location.href), changes), true);
  const select = (id: string) =>
    set({ trial: id === new URL(location.href).searchParams.get("trial") ? null : id });
  const [limit, setLimit] = useState(TABLE_ROWS);
  const limitRef = useRef(limit);
  limitRef.current = limit;
  const onBrush = (key: string, range: [number, number] | null) => {
    const next = { ...parseBrushes(new URL(location.href).searchParams.get("brush")) };
    if (range) next[key] = range;
    else delete next[key];
    set({ brush: formatBrushes(next) || null });
  };

  // Keyboard: j / k move the selection through the table's order, l opens its logs.
  const order = useRef<TrialRow[]>([]);
  order.current = best ? [best, ...sorted.filter((r) => r.id !== best.id)] : sorted;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const tag = (e.target as HTMLElement | null)?.tagName ?? "";
      if (["INPUT", "TEXTAREA", "SELECT"].includes(tag) || e.metaKey || e.ctrlKey || e.altKey) return;
      const list = order.current;
      const cur = new URL(location.href).searchParams.get("trial") ?? "";
      const i = list.findIndex((r) => r.id === cur);
      if (e.key === "j" || e.key === "k") {
        const next = list[Math.max(0, Math.min(list.length - 1, i + (e.key === "j" ? 1 : -1)))];
        if (next) {
          // A row past the rendered ones is rendered first (the best is pinned above them).
          const at = list.indexOf(next);
          if (at >= limitRef.current) setLimit(at + TABLE_ROWS);
          set({ trial: next.id });
          document.querySelector(`#trials-table tr[data-trial="${next.id}"]`)?.scrollIntoView({ block: "nearest" });
        }
      } else if (e.key === "l" && cur) {
        navigate(`${base}/logs?trial=${enc(cur)}`);
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [base]);

  if (rows.length === 0) {
    return (
      <p class="muted" id="trials-empty">
        No trial has started yet{job.state === "QUEUED" ? ": the job is queued" : ""}. Trials appear
        here as the tuning service starts them.
      </p>
    );
  }
  const sortHeader = (key: string, label: string) => {
    const active = sort === key || sort === `-${key}`;
    const next = sort === key ? `-${key}` : key;
    return (
      <th>
        <a
          href={withParams(url, { sort: next })}
          data-sort={key}
          class={active ? "on" : ""}
          aria-sort={active ? (sort.startsWith("-") ? "descending" : "ascending") : undefined}
        >
          {label}
          {active ? (sort.startsWith("-") ? " ▼" : " ▲") : ""}
        </a>
      </th>
    );
  };
  const succeeded = rows.filter((r) => r.state === "SUCCEEDED").length;
  const tag = (job.trainingOutput as { hyperparameterMetricTag?: string } | undefined)
    ?.hyperparameterMetricTag;
  const row = (r: TrialRow, pinned: boolean) => (
    <Memo
      key={r.id}
      deps={[r, r.id === selected, pinned, specs, base]}
      render={() => rowOf(r, pinned)}
    />
  );
  const rowOf = (r: TrialRow, pinned: boolean) => (
    <tr
      data-trial={r.id}
      class={(r.id === selected ? "selected " : "") + (pinned ? "pinned" : "")}
      onClick={(e) => {
        if ((e.target as HTMLElement).closest("a, button")) return;
        select(r.id);
      }}
    >
      <td>
        <button type="button" class="link trial-select" aria-pressed={r.id === selected}
          onClick={() => select(r.id)}>
          {r.id}
        </button>
        {pinned && <span class="badge best-badge">best</span>}
      </td>
      <td>
        <StateBadge state={r.state} />
        {r.stoppedEarly && <span class="muted small" title={r.message}> stopped early</span>}
      </td>
      {specs.map((s) => (
        <td class="num">{r.params[s.parameterName] ?? ""}</td>
      ))}
      <td class="num obj">{r.objective ?? ""}</td>
      <td class="num">{r.step ?? ""}</td>
      <td>{duration(r.start, r.end)}</td>
      <td>
        <a href={`${base}/logs?trial=${enc(r.id)}`} class="trial-logs">
          logs
        </a>
      </td>
    </tr>
  );
  const sel = rows.find((r) => r.id === selected);
  return (
    <section class="trials">
      <p id="trials-summary">
        {rows.length} trials, {succeeded} succeeded · goal <b id="trials-goal">{goal}</b>
        {tag ? (
          <>
            {" "}
            of <code>{tag}</code>
          </>
        ) : null}
        {best && (
          <>
            {" "}
            · best: trial <b id="trials-best-id">{best.id}</b> = {best.objective}
          </>
        )}
      </p>
      {error && <div class="error">{error}</div>}
      <div class="toolbar">
        <span id="trials-shown">
          {inside.length === rows.length
            ? `${rows.length} shown`
            : `${inside.length} of ${rows.length} shown (brushed)`}
        </span>
        <button type="button" id="trials-clear" disabled={!Object.keys(brushes).length}
          onClick={() => set({ brush: null })}>
          Clear brushes
        </button>
        <span class="muted small">drag on an axis to filter · j / k select · l opens its logs</span>
      </div>
      <h2>Parallel coordinates</h2>
      <ParallelCoordinates
        rows={rows}
        axes={axes}
        inside={insideIds}
        brushes={brushes}
        selected={selected}
        best={best?.id}
        minimize={minimize}
        onBrush={onBrush}
        onSelect={select}
      />
      <div class="charts">
        <div>
          <h2>
            <label>
              {xAxis && (
                <select
                  id="scatter-param"
                  value={xAxis.key}
                  onChange={(e) => set({ x: (e.target as HTMLSelectElement).value })}
                >
                  {axes.slice(0, -1).map((a) => (
                    <option value={a.key}>{a.label}</option>
                  ))}
                </select>
              )}{" "}
              against the objective
            </label>
          </h2>
          {xAxis && xAxis !== objective && (
            <Scatter rows={inside} x={xAxis} objective={objective} selected={selected}
              best={best?.id} minimize={minimize} onSelect={select} />
          )}
        </div>
        <div>
          <h2>Metric curves</h2>
          <Curves rows={inside} metrics={metrics} loading={loading} selected={selected}
            best={best?.id} onSelect={select} />
        </div>
      </div>
      {sel && (
        <div class="trial-detail" id="trial-detail">
          <h2>Trial {sel.id}</h2>
          <p>
            <StateBadge state={sel.state} /> objective {sel.objective ?? "none"}
            {sel.step !== undefined && ` at step ${sel.step}`} ·{" "}
            {Object.entries(sel.params).map(([k, v]) => `${k}=${v}`).join(", ")} ·{" "}
            <span title={utcTitle(sel.start)}>{localTime(sel.start)}</span> → {" "}
            <span title={utcTitle(sel.end)}>{localTime(sel.end)}</span> · {metrics.get(sel.id)?.length ?? 0}{" "}
            reports · <a href={`${base}/logs?trial=${enc(sel.id)}`} id="trial-detail-logs">its logs</a>
          </p>
          {sel.message && <p id="trial-detail-message">{sel.message}</p>}
        </div>
      )}
      <h2>Trials</h2>
      <table class="grid trials-table" id="trials-table">
        <thead>
          <tr>
            {sortHeader("id", "Trial")}
            {sortHeader("state", "State")}
            {specs.map((s) => sortHeader("p:" + s.parameterName, s.parameterName))}
            {sortHeader("objective", "Objective")}
            {sortHeader("step", "Step")}
            <th>Duration</th>
            <th></th>
          </tr>
        </thead>
        {best && <tbody id="trials-best">{row(best, true)}</tbody>}
        <tbody id="trials-body">
          {sorted
            .filter((r) => r.id !== best?.id)
            .slice(0, limit)
            .map((r) => row(r, false))}
        </tbody>
      </table>
      {sorted.length > limit + (best ? 1 : 0) && (
        <p>
          <button type="button" id="trials-show-more" onClick={() => setLimit(limit + MORE_ROWS)}>
            Show {Math.min(MORE_ROWS, sorted.length - limit - (best ? 1 : 0))} more
          </button>{" "}
          <button type="button" class="link" id="trials-show-all"
            onClick={() => setLimit(sorted.length)}>
            all {sorted.length}
          </button>{" "}
          <span class="muted small">({limit} of {sorted.length} in this order are shown)</span>
        </p>
      )}
    </section>
  );
}

// The Trials tab link, for the job page's tab bar (tuning jobs only).
export function isTuningJob(job: Job): boolean {
  return !!job.trainingInput?.hyperparameters;
}
