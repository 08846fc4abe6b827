// The log viewer's model, without DOM: scroll position <-> line mapping (with a scaled
// scrollbar past the browsers' element-height cap) and the sources of lines (positional pages
// from the server, or an in-memory list for severity-filtered views). Unit-tested in
// console/test/logmodel.test.mjs.

export const LINE_HEIGHT = 18;
// Browsers cap an element's height near 16.7 M px (Chrome) or less; 1 M lines x 18 px is above
// it. Past this, the scrollbar is scaled: scrollTop maps to a line by proportion.
export const MAX_SCROLL_PX = 8_000_000;
export const PAGE_LINES = 1000;
export const MAX_PAGES = 200;

export interface Line {
  n: number; // ordinal, 0-based
  insertId: string;
  time: string;
  severity: string;
  task: string;
  trial: string;
  text: string;
}

export function spacerHeight(count: number, lineHeight = LINE_HEIGHT): number {
  return Math.min(count * lineHeight, MAX_SCROLL_PX);
}

// The first visible line and the pixel offset of the rows' window inside the spacer.
export function lineAt(
  scrollTop: number,
  viewportPx: number,
  count: number,
  lineHeight = LINE_HEIGHT,
): { first: number; top: number } {
  const total = spacerHeight(count, lineHeight);
  if (count * lineHeight <= MAX_SCROLL_PX) {
    const first = Math.max(0, Math.min(count - 1, Math.floor(scrollTop / lineHeight)));
    return { first: Math.max(0, first), top: first * lineHeight };
  }
  const maxTop = Math.max(1, total - viewportPx);
  const fullRows = Math.floor(viewportPx / lineHeight);
  const last = Math.max(0, count - fullRows);
  const frac = Math.min(1, Math.max(0, scrollTop / maxTop));
  return { first: Math.round(frac * last), top: scrollTop };
}

// The scrollTop that shows `line` at the top (or as near as the end allows).
export function scrollTopFor(
  line: number,
  viewportPx: number,
  count: number,
  lineHeight = LINE_HEIGHT,
): number {
  const total = spacerHeight(count, lineHeight);
  if (count * lineHeight <= MAX_SCROLL_PX) return Math.max(0, line * lineHeight);
  const fullRows = Math.floor(viewportPx / lineHeight);
  const last = Math.max(1, count - fullRows);
  return (Math.min(line, last) / last) * Math.max(0, total - viewportPx);
}

// Pages of lines, least recently used evicted past `max`.
export class PageCache<T> {
  private pages = new Map<number, T>();
  constructor(private max = MAX_PAGES) {}
  get(i: number): T | undefined {
    const p = this.pages.get(i);
    if (p !== undefined) {
      this.pages.delete(i);
      this.pages.set(i, p);
    }
    return p;
  }
  peek(i: number): T | undefined {
    return this.pages.get(i);
  }
  set(i: number, p: T): void {
    this.pages.delete(i);
    this.pages.set(i, p);
    while (this.pages.size > this.max) {
      const oldest = this.pages.keys().next().value as number;
      this.pages.delete(oldest);
    }
  }
  delete(i: number): void {
    this.pages.delete(i);
  }
  clear(): void {
    this.pages.clear();
  }
  get size(): number {
    return this.pages.size;
  }
}
