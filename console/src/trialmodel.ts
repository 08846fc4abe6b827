// The Trials tab's logic, without the DOM (unit-tested in console/test/): a tuning job's trials
// as rows, the best one for the goal, sorting by any column, the axes of the plots (log scales,
// categories) and brushing (ranges on axes that filter the trials).
import type { Job } from "./api";

export interface Metric {
  trainingStep?: string;
  objectiveValue?: number;
}

export interface Trial {
  trialId: string;
  hyperparameters?: Record<string, string>;
  finalMetric?: Metric;
  allMetrics?: Metric[];
  startTime?: string;
  endTime?: string;
  state?: string;
  isTrialStoppedEarly?: boolean;
  // Trainyard's words on the trial: why it stopped early, or which metric tags it reported when
  // none under the job's tag (docs/api.md).
  message?: string;
}

export interface ParameterSpec {
  parameterName: string;
  type?: string; // DOUBLE, INTEGER, CATEGORICAL, DISCRETE
  minValue?: number;
  maxValue?: number;
  categoricalValues?: string[];
  discreteValues?: number[];
  scaleType?: string; // UNIT_LINEAR_SCALE, UNIT_LOG_SCALE, UNIT_REVERSE_LOG_SCALE
}

export interface TrialRow {
  id: string;
  n: number; // the id as a number, for ordering
  state: string;
  params: Record<string, string>;
  objective?: number;
  step?: number;
  start?: string;
  end?: string;
  stoppedEarly: boolean;
  message?: string;
}

export type Goal = "MAXIMIZE" | "MINIMIZE";

export function goalOf(job: Job): Goal {
  const g = (job.trainingInput?.hyperparameters as { goal?: string } | undefined)?.goal;
  return g === "MINIMIZE" ? "MINIMIZE" : "MAXIMIZE"; // unset = MAXIMIZE (compat §3)
}

export function paramSpecs(job: Job): ParameterSpec[] {
  const hp = job.trainingInput?.hyperparameters as { params?: ParameterSpec[] } | undefined;
  return hp?.params ?? [];
}

export function rowsOf(trials: Trial[]): TrialRow[] {
  return trials.map((t) => {
    const v = t.finalMetric?.objectiveValue;
    const step = t.finalMetric?.trainingStep;
    return {
      id: t.trialId,
      n: Number(t.trialId),
      state: t.state ?? "",
      params: t.hyperparameters ?? {},
      objective: typeof v === "number" && isFinite(v) ? v : undefined,
      step: step === undefined ? undefined : Number(step),
      start: t.startTime,
      end: t.endTime,
      stoppedEarly: !!t.isTrialStoppedEarly,
      message: t.message,
    };
  });
}

// The best trial for the goal: the best objective among succeeded trials (ties: the lower id).
export function bestTrial(rows: TrialRow[], goal: Goal): TrialRow | undefined {
  let best: TrialRow | undefined;
  for (const r of rows) {
    if (r.state !== "SUCCEEDED" || r.objective === undefined) continue;
    if (
      !best ||
      (goal === "MAXIMIZE" ? r.objective > best.objective! : r.objective < best.objective!) ||
      (r.objective === best.objective && r.n < best.n)
    ) {
      best = r;
    }
  }
  return best;
}

// Sort keys: "id", "state", "objective", "step", "start", "p:<parameter>"; "-" first = descending.
export function sortRows(rows: TrialRow[], sort: string, specs: ParameterSpec[]): TrialRow[] {
  const desc = sort.startsWith("-");
  const key = desc ? sort.slice(1) : sort;
  const spec = key.startsWith("p:") ? specs.find((s) => s.parameterName === key.slice(2)) : null;
  const value = (r: TrialRow): number | string | undefined => {
    if (key === "objective") return r.objective;
    if (key === "step") return r.step;
    if (key === "state") return r.state;
    if (key === "start") return r.start;
    if (spec) {
      const raw = r.params[spec.parameterName];
      if (raw === undefined) return undefined;
      if (spec.type === "CATEGORICAL") {
        const i = spec.categoricalValues?.indexOf(raw) ?? -1;
        return i >= 0 ? i : raw;
      }
      const x = Number(raw);
      return isNaN(x) ? raw : x;
    }
    return r.n;
  };
  const keyed = rows.map((r) => ({ r, v: value(r) }));
  keyed.sort((a, b) => {
    // Missing values last, whichever the direction.
    if (a.v === undefined || b.v === undefined) {
      if (a.v === b.v) return a.r.n - b.r.n;
      return a.v === undefined ? 1 : -1;
    }
    const c = a.v < b.v ? -1 : a.v > b.v ? 1 : 0;
    return (desc ? -c : c) || a.r.n - b.r.n;
  });
  return keyed.map((k) => k.r);
}

// One axis of the plots: maps a trial to [0, 1] (0 = bottom/left), or undefined.
export interface Axis {
  key: string; // "p:<name>" or "objective"
  label: string;
  log: boolean;
  categories?: string[];
  min: number;
  max: number;
  pos(r: TrialRow): number | undefined;
  // The value at a position, for tick labels.
  valueAt(t: number): string;
}

function fmt(x: number): string {
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e5 || a < 1e-3) return x.toExponential(2);
  return String(Number(x.toPrecision(4)));
}

function numericAxis(key: string, label: string, values: number[], log: boolean, lo?: number, hi?: number): Axis {
  let min = lo ?? Infinity;
  let max = hi ?? -Infinity;
  for (const v of values) {
    if (lo === undefined && v < min) min = v;
    if (hi === undefined && v > max) max = v;
  }
  if (!isFinite(min) || !isFinite(max)) {
    min = 0;
    max = 1;
  }
  log = log && min > 0;
  const f = (x: number) => (log ? Math.log(x) : x);
  const a = f(min);
  const span = f(max) - a;
  const axis: Axis = {
    key,
    label,
    log,
    min,
    max,
    pos: () => undefined,
    valueAt: (t) => fmt(log ? Math.exp(a + t * span) : a + t * span),
  };
  axis.pos = (r) => {
    const raw = key === "objective" ? r.objective : Number(r.params[key.slice(2)]);
    if (raw === undefined || isNaN(raw) || (log && raw <= 0)) return undefined;
    return span === 0 ? 0.5 : Math.min(1, Math.max(0, (f(raw) - a) / span));
  };
  return axis;
}

// One axis per parameter (log for UNIT_LOG_SCALE, categories for CATEGORICAL, the spec's range
// for DOUBLE/INTEGER/DISCRETE) and the objective last.
export function axesOf(specs: ParameterSpec[], rows: TrialRow[]): Axis[] {
  const axes: Axis[] = specs.map((s) => {
    const key = "p:" + s.parameterName;
    if (s.type === "CATEGORICAL") {
      const cats = s.categoricalValues ?? [];
      const n = cats.length;
      return {
        key,
        label: s.parameterName,
        log: false,
        categories: cats,
        min: 0,
        max: Math.max(0, n - 1),
        pos: (r: TrialRow) => {
          const i = cats.indexOf(r.params[s.parameterName]);
          return i < 0 ? undefined : n <= 1 ? 0.5 : i / (n - 1);
        },
        valueAt: (t: number) => cats[Math.round(t * Math.max(0, n - 1))] ?? "",
      };
    }
    const values = rows.map((r) => Number(r.params[s.parameterName])).filter((x) => !isNaN(x));
    let lo = s.minValue;
    let hi = s.maxValue;
    if (s.type === "DISCRETE" && s.discreteValues?.length) {
      lo = s.discreteValues[0];
      hi = s.discreteValues[s.discreteValues.length - 1];
    }
    return numericAxis(key, s.parameterName, values, s.scaleType === "UNIT_LOG_SCALE", lo, hi);
  });
  const objectives = rows.map((r) => r.objective).filter((x): x is number => x !== undefined);
  axes.push(numericAxis("objective", "objective", objectives, false));
  return axes;
}

// Brushes: per axis key a range [lo, hi] of positions (0..1). In the URL as
// "key:lo:hi,key:lo:hi" (positions with 3 decimals).
export type Brushes = Record<string, [number, number]>;

export function parseBrushes(text: string | null): Brushes {
  const out: Brushes = {};
  if (!text) return out;
  for (const part of text.split(",")) {
    const i = part.lastIndexOf(":");
    const j = part.lastIndexOf(":", i - 1);
    if (i < 0 || j < 0) continue;
    const lo = Number(part.slice(j + 1, i));
    const hi = Number(part.slice(i + 1));
    if (isNaN(lo) || isNaN(hi)) continue;
    out[part.slice(0, j)] = [Math.max(0, Math.min(lo, hi)), Math.min(1, Math.max(lo, hi))];
  }
  return out;
}

export function formatBrushes(b: Brushes): string {
  return Object.entries(b)
    .map(([k, [lo, hi]]) => `${k}:${lo.toFixed(3)}:${hi.toFixed(3)}`)
    .join(",");
}

// The trials inside every brushed range (a trial without a value on a brushed axis is out).
export function brushed(rows: TrialRow[], axes: Axis[], b: Brushes): TrialRow[] {
  const active = axes.filter((a) => b[a.key]);
  if (active.length === 0) return rows;
  return rows.filter((r) =>
    active.every((a) => {
      const p = a.pos(r);
      const [lo, hi] = b[a.key];
      return p !== undefined && p >= lo - 1e-9 && p <= hi + 1e-9;
    }),
  );
}

// A colour for an objective position (0 = worst for the goal, 1 = best): a blue-to-orange ramp
// readable in both themes.
export function rampColor(t: number): string {
  const c = Math.max(0, Math.min(1, t));
  const h = 220 - 190 * c;
  return `hsl(${h.toFixed(0)}, 75%, 50%)`;
}
