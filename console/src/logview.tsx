// The Logs view of a job: every replica's lines, filters by task, trial, severity and time,
// follow live, open at the tail, jump anywhere. Only the visible rows exist in the DOM (a pool of about a
// screenful), so a million-line log scrolls like a short one (docs/console.md "Logs").
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, enc, LogsSummary } from "./api";
import { clockTime, fmtCount } from "./format";
import { LINE_HEIGHT, lineAt, scrollTopFor, spacerHeight } from "./logmodel";
import { LogSource } from "./logsource";
import { highlight, LogSearchBar } from "./logsearch";
import { navigate, withParams } from "./router";

const SEVERITIES = ["", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"];
const FOLLOW_MS = 1000;

// The time filter's inputs show the viewer's local time; the URL and the API take UTC.
function toLocalInput(rfc3339: string): string {
  if (!rfc3339) return "";
  const d = new Date(rfc3339);
  if (isNaN(d.getTime())) return "";
  const p = (n: number) => String(n).padStart(2, "0");
  return (
    `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
  );
}

function fromLocalInput(value: string): string {
  if (!value) return "";
  const d = new Date(value); // "YYYY-MM-DDTHH:MM[:SS]" without a zone is local time
  return isNaN(d.getTime()) ? "" : d.toISOString().replace(".000Z", "Z");
}

function lineFromHash(): number | null {
  const m = /(?:^#|&)line=(\d+)/.exec(location.hash);
  return m ? Math.max(0, Number(m[1]) - 1) : null;
}

export function LogsPanel(props: { project: string; job: string; url: URL; running: boolean }) {
  const { project, job, url, running } = props;
  const task = url.searchParams.get("task") ?? "";
  const severity = url.searchParams.get("severity") ?? "";
  const trial = url.searchParams.get("trial") ?? "";
  const since = url.searchParams.get("since") ?? "";
  const until = url.searchParams.get("until") ?? "";
  const query = url.searchParams.get("q") ?? "";
  const [tasks, setTasks] = useState<LogsSummary["streams"]>([]);
  useEffect(() => {
    api<LogsSummary>("GET", `/v1/projects/${enc(project)}/jobs/${enc(job)}/logs:summary`)
      .then((s) => setTasks(s.streams))
      .catch(() => setTasks([]));
  }, [project, job]);
  const taskNames = useMemo(
    () => Array.from(new Set(tasks.map((s) => s.taskName))).sort(),
    [tasks],
  );
  const trialIds = useMemo(
    () =>
      Array.from(new Set(tasks.map((s) => s.trialId ?? "").filter(Boolean))).sort(
        (a, b) => Number(a) - Number(b),
      ),
    [tasks],
  );
  const set = (k: string, v: string) => navigate(withParams(url, { [k]: v }), true);
  return (
    <section class="logs">
      <div class="toolbar">
        <label>
          Task{" "}
          <select
            id="log-task"
            value={task}
            onChange={(e) => set("task", (e.target as HTMLSelectElement).value)}
          >
            <option value="">all tasks</option>
            {taskNames.map((t) => (
              <option value={t}>{t}</option>
            ))}
            {task && !taskNames.includes(task) && <option value={task}>{task}</option>}
          </select>
        </label>
        {(trialIds.length > 0 || trial) && (
          <label>
            Trial{" "}
            <select
              id="log-trial"
              value={trial}
              onChange={(e) => set("trial", (e.target as HTMLSelectElement).value)}
            >
              <option value="">all trials</option>
              {trialIds.map((t) => (
                <option value={t}>{t}</option>
              ))}
              {trial && !trialIds.includes(trial) && <option value={trial}>{trial}</option>}
            </select>
          </label>
        )}
        <label>
          Severity ≥{" "}
          <select
            id="log-severity"
            value={severity}
            onChange={(e) => set("severity", (e.target as HTMLSelectElement).value)}
          >
            {SEVERITIES.map((s) => (
              <option value={s}>{s || "any"}</option>
            ))}
          </select>
        </label>
        <label title="Lines at or after this time (your time zone)">
          From{" "}
          <input
            type="datetime-local"
            step={1}
            id="log-since"
            value={toLocalInput(since)}
            onChange={(e) => set("since", fromLocalInput((e.target as HTMLInputElement).value))}
          />
        </label>
        <label title="Lines before this time (your time zone)">
          to{" "}
          <input
            type="datetime-local"
            step={1}
            id="log-until"
            value={toLocalInput(until)}
            onChange={(e) => set("until", fromLocalInput((e.target as HTMLInputElement).value))}
          />
        </label>
      </div>
      <LogViewer
        key={`${project}/${job}/${task}/${severity}/${trial}/${since}/${until}`}
        project={project}
        job={job}
        task={task}
        severity={severity}
        trial={trial}
        since={since}
        until={until}
        running={running}
        query={query}
        setQuery={(q) => set("q", q)}
      />
    </section>
  );
}

function LogViewer(props: {
  project: string;
  job: string;
  task: string;
  severity: string;
  trial?: string;
  since?: string;
  until?: string;
  running: boolean;
  query: string;
  setQuery: (q: string) => void;
}) {
  const { project, job, task, severity, running, query, setQuery } = props;
  const trial = props.trial ?? "";
  const since = props.since ?? "";
  const until = props.until ?? "";
  const source = useMemo(
    () => new LogSource(project, job, { task, severity, trial, since, until }),
    [project, job, task, severity, trial, since, until],
  );
  const [, setVersion] = useState(0);
  const scroller = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ first: 0, top: 0, height: 600 });
  const [follow, setFollow] = useState(true); // stick to the bottom as lines arrive
  const [unseen, setUnseen] = useState(0);
  const [jumpTo, setJumpTo] = useState("");
  const [selected, setSelected] = useState<number | null>(lineFromHash());
  const pendingJump = useRef<number | null>(lineFromHash());
  const followRef = useRef(follow);
  followRef.current = follow;
  const programmatic = useRef(false);

  // Re-render on new data; count what arrives while the user looks elsewhere.
  useEffect(() => {
    let last = 0;
    source.onChange = () => {
      if (source.count > last && last > 0 && !followRef.current) {
        setUnseen((u) => u + source.count - last);
      }
      last = source.count;
      setVersion((v) => v + 1);
    };
    source.open();
    return () => source.close();
  }, [source]);

  const count = source.count;
  const measure = () => {
    const el = scroller.current;
    if (!el) return;
    const { first, top } = lineAt(el.scrollTop, el.clientHeight, count);
    setView({ first, top, height: el.clientHeight });
  };

  const scrollToLine = (line: number, atBottom = false) => {
    const el = scroller.current;
    if (!el) return;
    programmatic.current = true;
    requestAnimationFrame(() => requestAnimationFrame(() => (programmatic.current = false)));
    el.scrollTop = atBottom
      ? el.scrollHeight
      : scrollTopFor(line, el.clientHeight, count);
    measure();
  };

  // Open at the tail (or at #line=N); stay at the bottom while following.
  useLayoutEffect(() => {
    if (!source.ready) return;
    if (pendingJump.current !== null) {
      const target = Math.min(pendingJump.current, Math.max(0, count - 1));
      pendingJump.current = null;
      setFollow(false);
      scrollToLine(Math.max(0, target - 3));
      return;
    }
    if (follow) scrollToLine(count, true);
    else measure();
  }, [source.ready, count]);

  // A permalink typed or pasted into the address bar while the view is open.
  useEffect(() => {
    const onHash = () => {
      const line = lineFromHash();
      if (line === null || !source.ready) return;
      setFollow(false);
      setSelected(line);
      scrollToLine(Math.max(0, line - 3));
    };
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  });

  // Follow: poll for new lines while the job can still print.
  useEffect(() => {
    if (!running || !source.ready) return;
    let stop = false;
    let timer = 0;
    const tick = async () => {
      if (stop) return;
      if (!document.hidden) {
        try {
          await source.follow();
        } catch {
          /* retried on the next tick */
        }
      }
      if (!stop) timer = window.setTimeout(tick, FOLLOW_MS);
    };
    timer = window.setTimeout(tick, FOLLOW_MS);
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [source, running, source.ready]);

  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    if (!programmatic.current) {
      const atBottom = el.scrollTop + el.clientHeight >= el.scrollHeight - 2;
      if (atBottom !== followRef.current) setFollow(atBottom);
      if (atBottom) setUnseen(0);
    }
    measure();
  };

  const rows = Math.ceil(view.height / LINE_HEIGHT) + 2;
  const first = view.first;
  const last = Math.min(count, first + rows);
  source.want(Math.max(0, first - 50), last + 50);

  const onKey = (e: KeyboardEvent) => {
    if (e.key === "End") {
      e.preventDefault();
      setFollow(true);
      setUnseen(0);
      scrollToLine(count, true);
    } else if (e.key === "Home") {
      e.preventDefault();
      setFollow(false);
      scrollToLine(0);
    }
  };

  const doJump = (e: Event) => {
    e.preventDefault();
    const n = Number(jumpTo);
    if (!Number.isFinite(n) || n < 1) return;
    setFollow(false);
    setSelected(n - 1);
    history.replaceState(null, "", `${location.pathname}${location.search}#line=${n}`);
    scrollToLine(Math.max(0, n - 4));
  };

  const items = [];
  for (let i = first; i < last; i++) {
    const l = source.line(i);
    items.push(
      <div
        class={"ln" + (l ? ` sev-${l.severity}` : " loading") + (i === selected ? " sel" : "")}
        data-line={i + 1}
      >
        <a
          class="no"
          href={`#line=${i + 1}`}
          onClick={(e) => {
            e.preventDefault();
            setSelected(i);
            history.replaceState(null, "", `${location.pathname}${location.search}#line=${i + 1}`);
          }}
        >
          {i + 1}
        </a>
        {l ? (
          <>
            <span class="ts" title={l.time}>
              {clockTime(l.time)}
            </span>
            <span class="sv">{l.severity}</span>
            <span class="tk">{l.trial ? `${l.task} t${l.trial}` : l.task}</span>
            <span class="msg">{highlight(l.text, query)}</span>
          </>
        ) : (
          <span class="msg">…</span>
        )}
      </div>,
    );
  }

  return (
    <div class="viewer">
      <div class="toolbar">
        <span id="log-count" class="muted">
          {source.error
            ? ""
            : source.ready
              ? `${fmtCount(count)} lines${source.truncated ? " (first 200,000 matches)" : ""}`
              : "loading…"}
        </span>
        <button type="button" onClick={() => (setFollow(false), scrollToLine(0))}>
          Top
        </button>
        <button
          type="button"
          id="log-bottom"
          onClick={() => (setFollow(true), setUnseen(0), scrollToLine(count, true))}
        >
          Bottom
        </button>
        <form onSubmit={doJump} class="inline">
          <input
            id="log-jump"
            size={9}
            placeholder="line #"
            value={jumpTo}
            onInput={(e) => setJumpTo((e.target as HTMLInputElement).value)}
          />
          <button type="submit">Go</button>
        </form>
        <LogSearchBar
          source={source}
          query={query}
          setQuery={setQuery}
          position={() => ({ selected, first: view.first })}
          jump={(line) => {
            setFollow(false);
            setSelected(line);
            history.replaceState(null, "", `${location.pathname}${location.search}#line=${line + 1}`);
            scrollToLine(Math.max(0, line - 3));
          }}
        />
        <a id="log-download" href={source.downloadUrl()} download title="Every line of this view as text, streamed by the daemon">
          Download
        </a>
        {running && (
          <span id="log-follow" class={follow ? "following" : "muted"}>
            {follow ? "following" : "paused (End resumes)"}
          </span>
        )}
      </div>
      {source.error && <div class="error">{source.error}</div>}
      <div class="scroll" ref={scroller} onScroll={onScroll} tabIndex={0} onKeyDown={onKey}>
        <div class="spacer" style={{ height: `${spacerHeight(count)}px` }}>
          <div class="rows" style={{ transform: `translateY(${view.top}px)` }}>
            {items}
          </div>
        </div>
        {source.ready && count === 0 && (
          <p class="muted pad empty">
            {running ? "No lines yet: they appear here as the job prints." : "This job has no log lines."}
          </p>
        )}
      </div>
      {unseen > 0 && !follow && (
        <button
          type="button"
          class="pill"
          onClick={() => (setFollow(true), setUnseen(0), scrollToLine(count, true))}
        >
          {fmtCount(unseen)} new lines ↓
        </button>
      )}
    </div>
  );
}
