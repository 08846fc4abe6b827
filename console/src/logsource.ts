// Where the log viewer's lines come from (docs/console.md "Logs").
//  - Positional (no severity filter): logs:summary gives the line count at a snapshot, and
//    logs:lines fetches any page of 1,000 lines by its offset, so the viewer opens at the tail
//    with two requests and jumps anywhere with one. Pages are cached (LRU, 200 pages).
//  - Filtered (a minimum severity or a time range): the server cannot count matches by
//    position, so matching lines are read in order (afterInsertId paging, up to MEM_CAP) and
//    kept in memory.
// Both follow a running job by polling `logs?afterInsertId=<cursor>`: every new line exactly
// once, appended at the end.
import { api, enc, LogEntry, LogsSummary } from "./api";
import { Line, PageCache, PAGE_LINES } from "./logmodel";

export const MEM_CAP = 200_000;
const MAX_INFLIGHT = 2;

export interface LogFilters {
  task: string; // "" = every task
  severity: string; // "" = every line
  trial?: string; // "" = every trial (and the job's own service lines)
  since?: string; // RFC 3339: lines at or after it ("" = from the first)
  until?: string; // RFC 3339: lines before it ("" = to the last)
}

function toLine(e: LogEntry, n: number): Line {
  return {
    n,
    insertId: e.insertId,
    time: e.timestamp,
    severity: e.severity,
    task: e.resource?.labels?.task_name ?? "",
    trial: e.labels?.trial_id ?? "",
    text: e.jsonPayload?.message ?? "",
  };
}

export interface FindResult {
  line: number | null; // 0-based; null: no match in that direction
  index: number; // of that match among all matches (0-based), -1 when none
  total: number; // every match
}

export class LogSource {
  count = 0;
  cursor = "0"; // the highest insert id every counted line is at or below
  ready = false;
  truncated = false;
  error = "";
  onChange: () => void = () => {};
  private cache = new PageCache<Line[]>();
  private inflight = new Set<number>();
  private wanted: number[] = [];
  private mem: Line[] | null = null;
  private closed = false;
  private base: string;

  constructor(
    project: string,
    job: string,
    private filters: LogFilters,
  ) {
    this.base = `/v1/projects/${enc(project)}/jobs/${enc(job)}/logs`;
    if (filters.severity || filters.since || filters.until) this.mem = [];
  }

  private streamParams(): string {
    let q = this.filters.task ? `&taskName=${enc(this.filters.task)}` : "";
    if (this.filters.trial) q += `&trialId=${enc(this.filters.trial)}`;
    return q;
  }

  // The filters the server applies to a filtered view's lines (and its download).
  private filterParams(): string {
    let q = this.filters.severity ? `&minSeverity=${enc(this.filters.severity)}` : "";
    if (this.filters.since) q += `&startTime=${enc(this.filters.since)}`;
    if (this.filters.until) q += `&endTime=${enc(this.filters.until)}`;
    return q;
  }

  async open(): Promise<void> {
    try {
      if (this.mem === null) {
        const q = this.streamParams().replace(/^&/, "?");
        const s = await api<LogsSummary>("GET", `${this.base}:summary${q}`);
        this.count = Number(s.lineCount);
        this.cursor = s.snapshotInsertId;
      } else {
        while (!this.closed && this.mem.length < MEM_CAP) {
          if ((await this.follow(5000)) < 5000) break;
        }
        this.truncated = this.mem.length >= MEM_CAP;
      }
      this.ready = true;
    } catch (e) {
      this.error = String((e as Error).message ?? e);
    }
    this.onChange();
  }

  close(): void {
    this.closed = true;
  }

  line(i: number): Line | undefined {
    if (this.mem !== null) return this.mem[i];
    const p = Math.floor(i / PAGE_LINES);
    const page = this.cache.peek(p);
    if (!page) return undefined;
    const l = page[i - p * PAGE_LINES];
    if (!l && i < this.count && page.length < PAGE_LINES && !this.inflight.has(p)) {
      this.cache.delete(p); // a short page that follow could not extend: read it again
    }
    return l;
  }

  // Asks for the lines [from, to): fetches the missing pages, the nearest first.
  want(from: number, to: number): void {
    if (this.mem !== null || !this.ready) return;
    const pages: number[] = [];
    const last = Math.min(to, this.count) - 1;
    for (let p = Math.floor(from / PAGE_LINES); p <= Math.floor(last / PAGE_LINES); p++) {
      if (this.cache.get(p) === undefined && !this.inflight.has(p)) pages.push(p);
    }
    this.wanted = pages;
    this.pump();
  }

  private pump(): void {
    while (this.inflight.size < MAX_INFLIGHT && this.wanted.length > 0) {
      const p = this.wanted.shift() as number;
      if (this.cache.peek(p) !== undefined || this.inflight.has(p)) continue;
      this.inflight.add(p);
      const url =
        `${this.base}:lines?lineOffset=${p * PAGE_LINES}&pageSize=${PAGE_LINES}` +
        `&snapshotInsertId=${this.cursor}${this.streamParams()}`;
      api<{ entries: LogEntry[] }>("GET", url)
        .then((r) => {
          this.cache.set(
            p,
            r.entries.map((e, i) => toLine(e, p * PAGE_LINES + i)),
          );
        })
        .catch((e) => {
          this.error = String((e as Error).message ?? e);
        })
        .finally(() => {
          this.inflight.delete(p);
          if (!this.closed) {
            this.onChange();
            this.pump();
          }
        });
    }
  }

  // Find next / previous (logsearch.tsx): the nearest line containing `text` (any case) after
  // line `from` (or, backward, before it) among the lines this view counts, with the match's
  // index among all matches and their count. Positional views ask the server
  // (logs:search, the whole log up to the view's snapshot); severity-filtered views search
  // the lines they hold.
  async find(text: string, from: number, backward: boolean): Promise<FindResult> {
    if (this.mem !== null) {
      const needle = text.toLowerCase();
      const hits: number[] = [];
      this.mem.forEach((l, i) => l.text.toLowerCase().includes(needle) && hits.push(i));
      let k = -1;
      if (backward) {
        for (let j = hits.length - 1; j >= 0 && k < 0; j--) if (hits[j] < from) k = j;
      } else {
        k = hits.findIndex((i) => i > from);
      }
      return { line: k < 0 ? null : hits[k], index: k, total: hits.length };
    }
    const q = new URLSearchParams({
      text,
      countMatches: "true",
      snapshotInsertId: this.cursor,
    });
    q.set(backward ? "beforeLineOffset" : "afterLineOffset", String(from));
    if (this.filters.task) q.set("taskName", this.filters.task);
    const r = await api<{ matches: { lineOffset: string }[]; totalMatches?: string; matchIndex?: string }>(
      "GET",
      `${this.base}:search?${q}`,
    );
    const m = r.matches[0];
    return {
      line: m ? Number(m.lineOffset) : null,
      index: m ? Number(r.matchIndex ?? -1) : -1,
      total: Number(r.totalMatches ?? 0),
    };
  }

  // logs:download of what this view shows (task, trial, severity, time range), as a link's
  // href.
  downloadUrl(): string {
    const q = (this.streamParams() + this.filterParams()).replace(/^&/, "?");
    return `${this.base}:download${q}`;
  }

  // Reads the lines stored after the cursor (at most `max`), appends them; returns how many.
  async follow(max = 1000): Promise<number> {
    let url = `${this.base}?afterInsertId=${this.cursor}&pageSize=${max}${this.streamParams()}`;
    url += this.filterParams();
    const r = await api<{ entries: LogEntry[]; nextAfterInsertId: string }>("GET", url);
    if (this.closed) return 0;
    for (const e of r.entries) {
      const line = toLine(e, this.count);
      if (this.mem !== null) {
        if (this.mem.length >= MEM_CAP) {
          this.truncated = true;
          break;
        }
        this.mem.push(line);
      } else {
        const p = Math.floor(this.count / PAGE_LINES);
        const page = this.cache.peek(p);
        if (page && page.length === this.count - p * PAGE_LINES) page.push(line);
        else if (!page && this.count % PAGE_LINES === 0) this.cache.set(p, [line]);
      }
      this.count++;
    }
    this.cursor = r.nextAfterInsertId;
    if (r.entries.length) this.onChange();
    return r.entries.length;
  }
}
