// Find in the log viewer (docs/console.md "Logs"): next / previous across the whole log, not
// only the loaded pages (the server's logs:search), "k of n", wrapping around at either end;
// and the highlighting of the text in the visible rows. Enter finds the next match, Shift+Enter
// the previous one.
import { useState } from "preact/hooks";
import { fmtCount } from "./format";
import { LogSource } from "./logsource";

// `text` with the case-insensitive occurrences of `query` in <mark>.
export function highlight(text: string, query: string) {
  if (!query) return text;
  const lower = text.toLowerCase();
  const q = query.toLowerCase();
  const out = [];
  let at = 0;
  for (let i = lower.indexOf(q); i >= 0; i = lower.indexOf(q, i + q.length)) {
    if (i > at) out.push(text.slice(at, i));
    out.push(<mark>{text.slice(i, i + q.length)}</mark>);
    at = i + q.length;
  }
  if (at === 0) return text;
  if (at < text.length) out.push(text.slice(at));
  return out;
}

export function LogSearchBar(props: {
  source: LogSource;
  query: string;
  setQuery: (q: string) => void;
  // Where a search starts: the selected line, else the first visible one.
  position: () => { selected: number | null; first: number };
  jump: (line: number) => void;
}) {
  const { source, query, setQuery, position, jump } = props;
  const [status, setStatus] = useState("");
  const [busy, setBusy] = useState(false);

  const find = async (backward: boolean) => {
    const text = query;
    if (!text || busy || !source.ready) return;
    const { selected, first } = position();
    // From the selected line (excluded), else from the top of the view (included).
    const from = selected ?? (backward ? first : first - 1);
    setBusy(true);
    setStatus("searching…");
    const started = performance.now();
    try {
      let r = await source.find(text, from, backward);
      let wrapped = false;
      if (r.line === null && r.total > 0) {
        // Past the last (or first) match: go round, as a browser's find does.
        r = await source.find(text, backward ? source.count : -1, backward);
        wrapped = true;
      }
      const ms = Math.round(performance.now() - started);
      if (r.line === null) {
        setStatus("no match");
      } else {
        jump(r.line);
        const where = r.index >= 0 ? `${fmtCount(r.index + 1)} of ${fmtCount(r.total)}` : "";
        setStatus(
          `${where}${wrapped ? (backward ? " (from the bottom)" : " (from the top)") : ""}`,
        );
      }
      document.documentElement.dataset.tySearchMs = String(ms);
    } catch (e) {
      setStatus((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      class="inline search"
      id="log-search-form"
      onSubmit={(e) => {
        e.preventDefault();
        find(false);
      }}
    >
      <input
        id="log-search"
        type="search"
        size={18}
        placeholder="find in the log"
        value={query}
        onInput={(e) => {
          setQuery((e.target as HTMLInputElement).value);
          setStatus("");
        }}
        onKeyDown={(e) => {
          if (e.key === "Enter" && e.shiftKey) {
            e.preventDefault();
            find(true);
          }
        }}
      />
      <button type="button" id="log-search-prev" title="Previous match (Shift+Enter)" onClick={() => find(true)}>
        ↑
      </button>
      <button type="submit" id="log-search-next" title="Next match (Enter)">
        ↓
      </button>
      <span id="log-search-status" class="muted small">
        {status}
      </span>
    </form>
  );
}
