// Canvas plotting for the Trials tab (docs/console.md "Trials"): the lines, points and curves of
// 1,000 trials are drawn on a <canvas> (a few batched strokes), while the few things a user
// points at or a screen reader reads (axes, labels, brushes, the selected trial) stay SVG on top.
// The geometry and hit tests here are pure (unit-tested in console/test/plots.test.mjs); the
// drawing helpers take a canvas.

// A plot's coordinate box (the SVG's viewBox; the canvas maps the same units onto its pixels).
export interface Box {
  w: number;
  h: number;
}

export type Pt = [number, number];

// The squared distance from p to the segment a-b.
export function segmentDistance2(p: Pt, a: Pt, b: Pt): number {
  const dx = b[0] - a[0];
  const dy = b[1] - a[1];
  const len2 = dx * dx + dy * dy;
  let t = len2 === 0 ? 0 : ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len2;
  t = Math.max(0, Math.min(1, t));
  const x = a[0] + t * dx - p[0];
  const y = a[1] + t * dy - p[1];
  return x * x + y * y;
}

// The id of the polyline nearest to p within `max` units (a polyline may have gaps: each run is
// one array of points), or "" when none is that close. Ties: the first in `lines` order.
export function nearestLine(lines: { id: string; runs: Pt[][] }[], p: Pt, max: number): string {
  let best = "";
  let bestD = max * max;
  for (const l of lines) {
    for (const run of l.runs) {
      if (run.length === 1) {
        const d = segmentDistance2(p, run[0], run[0]);
        if (d < bestD) [best, bestD] = [l.id, d];
      }
      for (let i = 1; i < run.length; i++) {
        const d = segmentDistance2(p, run[i - 1], run[i]);
        if (d < bestD) [best, bestD] = [l.id, d];
      }
    }
  }
  return best;
}

// The id of the point nearest to p within `max` units, or "".
export function nearestPoint(points: { id: string; at: Pt }[], p: Pt, max: number): string {
  let best = "";
  let bestD = max * max;
  for (const q of points) {
    const dx = q.at[0] - p[0];
    const dy = q.at[1] - p[1];
    const d = dx * dx + dy * dy;
    if (d < bestD) [best, bestD] = [q.id, d];
  }
  return best;
}

// Objective shades in a few buckets, so that 1,000 lines are a few dozen strokes.
export const SHADES = 24;
export function shadeBucket(t: number): number {
  return Math.max(0, Math.min(SHADES - 1, Math.floor(t * SHADES)));
}

// A keyboard step on a focused axis (the brush's keyboard form): ArrowUp / ArrowDown move the
// range by a tenth (a new brush starts as the middle fifth), "+" / "-" widen and narrow it,
// Escape / Delete / Backspace clear it. Returns the new range, null to clear, or undefined when
// the key means nothing here.
export function brushKey(
  range: [number, number] | undefined,
  key: string,
): [number, number] | null | undefined {
  const step = 0.1;
  if (key === "Escape" || key === "Delete" || key === "Backspace") return range ? null : undefined;
  const cur: [number, number] = range ?? [0.4, 0.6];
  const clamp = (lo: number, hi: number): [number, number] => {
    const w = hi - lo;
    if (lo < 0) [lo, hi] = [0, w];
    if (hi > 1) [lo, hi] = [1 - w, 1];
    return [Math.round(Math.max(0, lo) * 1000) / 1000, Math.round(Math.min(1, hi) * 1000) / 1000];
  };
  if (key === "ArrowUp") return range ? clamp(cur[0] + step, cur[1] + step) : cur;
  if (key === "ArrowDown") return range ? clamp(cur[0] - step, cur[1] - step) : cur;
  if (key === "+" || key === "=") {
    return clamp(Math.max(0, cur[0] - step / 2), Math.min(1, cur[1] + step / 2));
  }
  if (key === "-") {
    const mid = (cur[0] + cur[1]) / 2;
    const half = Math.max(0.01, (cur[1] - cur[0]) / 2 - step / 2);
    return clamp(mid - half, mid + half);
  }
  return undefined;
}

// --- DOM ----------------------------------------------------------------------------------

// A canvas's size in CSS pixels.
export interface Size {
  width: number;
  height: number;
}

// Sizes the canvas's pixels to its CSS size (times the device pixel ratio), maps the box's
// units onto them and clears it. Null when the canvas cannot draw (no size, no 2D context).
export function prepareCanvas(
  canvas: HTMLCanvasElement,
  size: Size,
  box: Box,
): CanvasRenderingContext2D | null {
  if (size.width === 0 || size.height === 0) return null;
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(size.width * dpr));
  const h = Math.max(1, Math.round(size.height * dpr));
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  const ctx = canvas.getContext("2d");
  if (!ctx) return null;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.setTransform(w / box.w, 0, 0, h / box.h, 0, 0);
  ctx.lineJoin = "round";
  return ctx;
}

// A theme colour (a CSS custom property of app.css), read when drawing so the plots follow
// the system's light or dark scheme.
export function themeColor(el: Element, name: string, fallback: string): string {
  const v = getComputedStyle(el).getPropertyValue(name).trim();
  return v || fallback;
}

// An event's position in the box's units, for an element showing the whole box.
export function eventPoint(e: { clientX: number; clientY: number }, el: Element, box: Box): Pt {
  const r = el.getBoundingClientRect();
  return [((e.clientX - r.left) * box.w) / r.width, ((e.clientY - r.top) * box.h) / r.height];
}

// Calls `redraw` with the element's size when it is first laid out, when its size changes and
// when the colour scheme changes; returns the undo. A ResizeObserver reports sizes after layout
// and before paint, so nothing forces a layout.
export function onRedrawNeeded(el: Element, redraw: (size: Size) => void): () => void {
  let size: Size | null = null;
  let frame = 0;
  const ro = new ResizeObserver((entries) => {
    const r = entries[entries.length - 1].contentRect;
    if (size && size.width === r.width && size.height === r.height) return;
    size = { width: r.width, height: r.height };
    redraw(size);
  });
  ro.observe(el);
  const mq = window.matchMedia("(prefers-color-scheme: dark)");
  const scheme = () => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => size && redraw(size));
  };
  mq.addEventListener("change", scheme);
  return () => {
    cancelAnimationFrame(frame);
    ro.disconnect();
    mq.removeEventListener("change", scheme);
  };
}
