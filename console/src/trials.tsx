// The Trials tab of a hyperparameter tuning job (docs/console.md "Trials"): a table sortable by
// any parameter or metric with the best trial pinned, parallel coordinates with brushing, a
// parameter-vs-objective scatter plot and each trial's metric curve (allMetrics, from
// GET …/jobs/J/trials). Plain SVG, no chart library. Every view state is in the URL: sort,
// brushes, the scatter's parameter and the selected trial.
import { Component, ComponentChildren } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, enc, Job, jobPath, TERMINAL } from "./api";
import { duration, localTime } from "./format";
import { StateBadge } from "./jobs";
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
const TABLE_ROWS = 100; // rows rendered before "Show all" (1,000 rows cost a frame budget)

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

// Every trial's allMetrics (pages of 1,000), refreshed while the job runs.
function useAllMetrics(project: string, id: string, running: boolean, tick: number) {
  const [metrics, setMetrics] = useState<Map<string, Metric[]>>(new Map());
  const [error, setError] = useState("");
  const last = useRef(0);
  useEffect(() => {
    if (tick === 0) return;
    if (running && Date.now() - last.current < METRICS_POLL_MS && metrics.size > 0) return;
    last.current = Date.now();
    let live = true;
    (async () => {
      const out = new Map<string, Metric[]>();
      let token = "";
      do {
        const q = `?pageSize=1000${token ? `&pageToken=${enc(token)}` : ""}`;
        const page = await api<TrialsPage>("GET", `${jobPath(project, id)}/trials${q}`);
        for (const t of page.trials ?? []) out.set(t.trialId, t.allMetrics ?? []);
        token = page.nextPageToken ?? "";
      } while (token && live);
      if (live) {
        setMetrics(out);
        setError("");
      }
    })().catch((e) => live && setError((e as Error).message));
    return () => {
      live = false;
    };
  }, [project, id, running, tick]);
  return { metrics, error };
}

// SVG geometry of the parallel-coordinates plot (viewBox units; the SVG scales to its box).
const PC = { w: 1000, h: 320, left: 50, right: 50, top: 28, bottom: 30 };
const pcX = (i: number, n: number) =>
  n <= 1 ? PC.w / 2 : PC.left + (i * (PC.w - PC.left - PC.right)) / (n - 1);
const pcY = (t: number) => PC.top + (1 - t) * (PC.h - PC.top - PC.bottom);

function objectiveShade(axis: Axis, r: TrialRow, minimize: boolean): string {
  const p = axis.pos(r);
  if (p === undefined) return "var(--muted)";
  return rampColor(minimize ? 1 - p : p);
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
  // The path of each trial, computed once per data change (brushing only changes classes).
  const paths = useMemo(
    () =>
      rows.map((r) => {
        let d = "";
        let pen = false;
        axes.forEach((a, i) => {
          const p = a.pos(r);
          if (p === undefined) {
            pen = false;
            return;
          }
          d += `${pen ? "L" : "M"}${pcX(i, axes.length).toFixed(1)} ${pcY(p).toFixed(1)}`;
          pen = true;
        });
        return { id: r.id, d, color: objectiveShade(objective, r, minimize) };
      }),
    [rows, axes, minimize],
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
  return (
    <svg
      ref={svg}
      id="trials-pc"
      class="chart pc"
      viewBox={`0 0 ${PC.w} ${PC.h}`}
      role="img"
      aria-label="Parallel coordinates: one line per trial across every parameter and the objective; drag on an axis to filter"
    >
      <Memo
        deps={[paths, inside, best]}
        render={() => (
          <g class="lines">
            {paths.map((p) => (
              <path
                key={p.id}
                data-trial={p.id}
                d={p.d}
                stroke={inside.has(p.id) ? p.color : undefined}
                class={(inside.has(p.id) ? "in" : "out") + (p.id === best ? " best" : "")}
                onClick={() => props.onSelect(p.id)}
              />
            ))}
          </g>
        )}
      />
      {paths
        .filter((p) => p.id === selected)
        .map((p) => (
          <path class="sel overlay" data-sel={p.id} d={p.d} />
        ))}
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
  const { rows, x, objective, selected, best } = props;
  return (
    <svg id="trials-scatter" class="chart scatter" viewBox={`0 0 ${SC.w} ${SC.h}`} role="img"
      aria-label={`${x.label} against the objective, one point per trial`}>
      <Frame x={x} y={{ lo: objective.valueAt(0), hi: objective.valueAt(1) }} xLabel={x.label}
        yLabel="objective" />
      <Memo
        deps={[rows, x, objective, best, props.minimize]}
        render={() => (
          <g>
            {rows.map((r) => {
              const px = x.pos(r);
              const py = objective.pos(r);
              if (px === undefined || py === undefined) return null;
              return (
                <circle
                  key={r.id}
                  data-trial={r.id}
                  cx={scX(px)}
                  cy={scY(py)}
                  r={3.5}
                  fill={objectiveShade(objective, r, props.minimize)}
                  class={r.id === best ? "best" : ""}
                  onClick={() => props.onSelect(r.id)}
                >
                  <title>
                    Trial {r.id}: {x.label} = {r.params[x.key.slice(2)] ?? ""}, objective ={" "}
                    {r.objective}
                  </title>
                </circle>
              );
            })}
          </g>
        )}
      />
      {rows
        .filter((r) => r.id === selected && x.pos(r) !== undefined && objective.pos(r) !== undefined)
        .map((r) => (
          <circle class="sel overlay" data-sel={r.id} cx={scX(x.pos(r)!)} cy={scY(objective.pos(r)!)} r={6}
            fill={objectiveShade(objective, r, props.minimize)} />
        ))}
    </svg>
  );
}

function Curves(props: {
  rows: TrialRow[];
  metrics: Map<string, Metric[]>;
  selected: string;
  best?: string;
  onSelect: (id: string) => void;
}) {
  const { rows, metrics, selected, best } = props;
  const series = useMemo(() => {
    let s0 = Infinity, s1 = -Infinity, v0 = Infinity, v1 = -Infinity;
    const out: { id: string; pts: [number, number][] }[] = [];
    for (const r of rows) {
      const ms = metrics.get(r.id);
      if (!ms || ms.length === 0) continue;
      const pts: [number, number][] = [];
      for (const m of ms) {
        const s = Number(m.trainingStep ?? 0);
        const v = m.objectiveValue;
        if (typeof v !== "number" || !isFinite(v) || isNaN(s)) continue;
        pts.push([s, v]);
        s0 = Math.min(s0, s); s1 = Math.max(s1, s);
        v0 = Math.min(v0, v); v1 = Math.max(v1, v);
      }
      pts.sort((a, b) => a[0] - b[0]);
      if (pts.length) out.push({ id: r.id, pts });
    }
    return { out, s0, s1, v0, v1 };
  }, [rows, metrics]);
  const { out, s0, s1, v0, v1 } = series;
  if (out.length === 0) {
    return (
      <p class="muted" id="trials-curves-empty">
        No intermediate reports yet: a trainer reports them with hypertune's
        report_hyperparameter_tuning_metric(global_step=…).
      </p>
    );
  }
  const fx = (s: number) => scX(s1 === s0 ? 0.5 : (s - s0) / (s1 - s0));
  const fy = (v: number) => scY(v1 === v0 ? 0.5 : (v - v0) / (v1 - v0));
  const fmt = (x: number) => String(Number(x.toPrecision(4)));
  const d = (c: { pts: [number, number][] }) =>
    c.pts.map((p, i) => `${i ? "L" : "M"}${fx(p[0]).toFixed(1)} ${fy(p[1]).toFixed(1)}`).join("");
  const sel = out.find((c) => c.id === selected);
  return (
    <svg id="trials-curves" class="chart curves" viewBox={`0 0 ${SC.w} ${SC.h}`} role="img"
      aria-label="The objective reported at each training step, one line per trial">
      <Frame x={null} y={{ lo: fmt(v0), hi: fmt(v1) }} xLabel={`training step ${fmt(s0)} – ${fmt(s1)}`}
        yLabel="objective" />
      <Memo
        deps={[series, best]}
        render={() => (
          <g>
            {/* The best trial last, on top. */}
            {[...out]
              .sort((a, b) => Number(a.id === best) - Number(b.id === best))
              .map((c) => (
                <path
                  key={c.id}
                  data-trial={c.id}
                  d={d(c)}
                  class={"curve" + (c.id === best ? " best" : "")}
                  onClick={() => props.onSelect(c.id)}
                />
              ))}
          </g>
        )}
      />
      {sel && <path class="curve sel overlay" data-sel={sel.id} d={d(sel)} />}
    </svg>
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
  const { metrics, error } = useAllMetrics(project, job.jobId, running, tick);
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
  const [showAll, setShowAll] = useState(false);
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
        if ((e.target as HTMLElement).closest("a")) return;
        select(r.id);
      }}
    >
      <td>
        {r.id}
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
          <Curves rows={inside} metrics={metrics} selected={selected} best={best?.id}
            onSelect={select} />
        </div>
      </div>
      {sel && (
        <div class="trial-detail" id="trial-detail">
          <h2>Trial {sel.id}</h2>
          <p>
            <StateBadge state={sel.state} /> objective {sel.objective ?? "none"}
            {sel.step !== undefined && ` at step ${sel.step}`} ·{" "}
            {Object.entries(sel.params).map(([k, v]) => `${k}=${v}`).join(", ")} ·{" "}
            <span title={sel.start}>{localTime(sel.start)}</span> → {" "}
            <span title={sel.end}>{localTime(sel.end)}</span> · {metrics.get(sel.id)?.length ?? 0}{" "}
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
            .slice(0, showAll ? undefined : TABLE_ROWS)
            .map((r) => row(r, false))}
        </tbody>
      </table>
      {!showAll && sorted.length > TABLE_ROWS + 1 && (
        <p>
          <button type="button" id="trials-show-all" onClick={() => setShowAll(true)}>
            Show all {sorted.length} trials
          </button>{" "}
          <span class="muted small">(the first {TABLE_ROWS} in this order are shown)</span>
        </p>
      )}
    </section>
  );
}

// The Trials tab link, for the job page's tab bar (tuning jobs only).
export function isTuningJob(job: Job): boolean {
  return !!job.trainingInput?.hyperparameters;
}
