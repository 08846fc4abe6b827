// The Jobs page: server-side pages of 50 (the API's pageToken), AI Platform's filter syntax
// passed to the API as typed, state chips with the project's counts, sorting of every job by
// the daemon (the API's orderBy, so the next page continues the order), bulk cancel. The
// filter, page token and sort live in the URL.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, enc, Job, jobPath, JobsSummary, ListJobsResponse, STATES, TERMINAL } from "./api";
import { duration, fmtCount, localTime, utcTitle } from "./format";
import { nextSort, orderByOf, parseSort, SortKey } from "./jobsort";
import { navigate, withParams } from "./router";

const PAGE_SIZE = 50;
// What the rows read (a partial response, docs/api.md "Partial responses"): a page then carries
// no tuning job's trials, arguments or package lists. A new column adds its fields here.
export const LIST_FIELDS =
  "jobs(jobId,state,jobPosition,createTime,startTime,endTime,labels," +
  "trainingInput(scaleTier,masterType,workerType,workerCount,parameterServerType," +
  "parameterServerCount,hyperparameters/maxTrials),trainingOutput/completedTrialCount)," +
  "nextPageToken";
const POLL_MS = 5000;

// The sortable columns (the daemon orders by these keys; Duration is not one of them).
const COLUMNS: [SortKey, string][] = [
  ["jobId", "Job ID"],
  ["state", "State"],
  ["createTime", "Created"],
];

// The list request of a view of the page.
function listQuery(filter: string, pageToken: string, sort: string): URLSearchParams {
  const q = new URLSearchParams({ pageSize: String(PAGE_SIZE), fields: LIST_FIELDS });
  if (filter) q.set("filter", filter);
  if (pageToken) q.set("pageToken", pageToken);
  const orderBy = orderByOf(sort);
  if (orderBy) q.set("orderBy", orderBy);
  return q;
}

export function jobType(j: Job): string {
  const hp = j.trainingInput?.hyperparameters;
  if (hp) {
    const done = j.trainingOutput?.completedTrialCount ?? "0";
    return `HP tuning ${done}/${hp.maxTrials ?? "?"}`;
  }
  return "Training";
}

export function machines(j: Job): string {
  const ti = j.trainingInput ?? {};
  const tier = ti.scaleTier ?? "BASIC";
  if (tier !== "CUSTOM") return tier;
  const parts = [ti.masterType ?? "master"];
  if (ti.workerCount && ti.workerCount !== "0") parts.push(`${ti.workerCount}× ${ti.workerType}`);
  if (ti.parameterServerCount && ti.parameterServerCount !== "0") {
    parts.push(`${ti.parameterServerCount}× ${ti.parameterServerType} (ps)`);
  }
  return parts.join(", ");
}

export function StateBadge(props: { state: string }) {
  return <span class={`badge st-${props.state}`}>{props.state}</span>;
}

export function JobsPage(props: { project: string; url: URL }) {
  const { project, url } = props;
  const filter = url.searchParams.get("filter") ?? "";
  const pageToken = url.searchParams.get("pageToken") ?? "";
  const sort = url.searchParams.get("sort") ?? "";
  // The page last loaded and the query it answers: rows and the next page's token of another
  // filter, order or page are never shown or followed (they would be refused, or wrong).
  const [loaded, setLoaded] = useState<{ query: string; page: ListJobsResponse } | null>(null);
  const [summary, setSummary] = useState<JobsSummary | null>(null);
  const [error, setError] = useState("");
  const [draft, setDraft] = useState(filter);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [confirming, setConfirming] = useState(false);
  const [notice, setNotice] = useState("");
  // What a user's action (cancel) failed with; the page's polling does not clear it.
  const [actionError, setActionError] = useState("");
  const [tick, setTick] = useState(0);
  const prevTokens = useRef<Map<string, string>>(new Map()); // page token -> previous page's
  const filterBox = useRef<HTMLInputElement>(null);

  useEffect(() => setDraft(filter), [filter]);
  useEffect(() => setSelected(new Set()), [filter, pageToken, sort]);

  useEffect(() => {
    let live = true;
    const q = listQuery(filter, pageToken, sort);
    api<ListJobsResponse>("GET", `${jobPath(project)}?${q}`)
      .then((r) => {
        if (!live) return;
        setLoaded({ query: project + "?" + q, page: r });
        setError("");
      })
      .catch((e) => live && setError(e.message));
    api<JobsSummary>("GET", `/v1/projects/${enc(project)}/jobs:summary`)
      .then((s) => live && setSummary(s))
      .catch(() => {});
    return () => {
      live = false;
    };
  }, [project, filter, pageToken, sort, tick]);

  // Refresh the current page every few seconds while the tab is visible.
  useEffect(() => {
    const t = window.setInterval(() => {
      if (!document.hidden) setTick((x) => x + 1);
    }, POLL_MS);
    return () => clearInterval(t);
  }, []);

  // "/" focuses the filter box.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const tag = (e.target as HTMLElement | null)?.tagName;
      if (e.key === "/" && tag !== "INPUT" && tag !== "TEXTAREA") {
        e.preventDefault();
        filterBox.current?.focus();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);

  const data = loaded?.query === project + "?" + listQuery(filter, pageToken, sort) ? loaded.page : null;
  const jobs = data?.jobs ?? [];
  const counts = summary?.jobStateCounts ?? {};
  const cancellable = jobs.filter((j) => selected.has(j.jobId) && !TERMINAL.has(j.state));

  const go = (changes: Record<string, string | null>) => navigate(withParams(url, changes));
  const applyFilter = (f: string) => go({ filter: f, pageToken: null });

  const next = () => {
    if (!data?.nextPageToken) return;
    prevTokens.current.set(data.nextPageToken, pageToken);
    go({ pageToken: data.nextPageToken });
  };
  const prev = prevTokens.current.get(pageToken);

  const cancelSelected = async () => {
    setConfirming(false);
    const results = await Promise.allSettled(
      cancellable.map((j) => api("POST", `${jobPath(project, j.jobId)}:cancel`, {})),
    );
    const failed = results.filter((r) => r.status === "rejected") as PromiseRejectedResult[];
    if (failed.length) {
      setNotice("");
      setActionError(`Cancel failed for ${failed.length} of ${results.length} job(s): ` +
        (failed[0].reason?.message ?? ""));
    } else {
      setActionError("");
      setNotice(`Cancel requested for ${results.length} job(s).`);
    }
    setSelected(new Set());
    setTick((x) => x + 1);
  };

  const toggle = (id: string) => {
    const s = new Set(selected);
    if (s.has(id)) s.delete(id);
    else s.add(id);
    setSelected(s);
  };
  const allSelected = jobs.length > 0 && jobs.every((j) => selected.has(j.jobId));

  // A new order starts again at its first page (a page token belongs to one order).
  const current = parseSort(sort);
  const sortHeader = (key: SortKey, label: string) => {
    const active = current?.key === key;
    return (
      <th>
        <a
          href={withParams(url, { sort: nextSort(sort, key), pageToken: null })}
          class={active ? "sorted" : ""}
          data-sort={key}
        >
          {label}
          {active ? (current?.desc ? " ▼" : " ▲") : ""}
        </a>
      </th>
    );
  };

  return (
    <section class="page">
      <h1>
        Jobs <span class="muted small">project {project}</span>{" "}
        <a class="small" id="nav-queue" href={`/console/projects/${encodeURIComponent(project)}/queue`}>
          queue and capacity
        </a>{" "}
        <a class="small" id="storage-link" href={`/console/projects/${enc(project)}/storage`}>
          Storage
        </a>
      </h1>
      <div class="chips" id="state-chips">
        <a class={"chip" + (filter === "" ? " on" : "")} href={withParams(url, { filter: null, pageToken: null })}>
          All <b>{fmtCount(Number(summary?.totalJobs ?? 0))}</b>
        </a>
        {STATES.map((s) => (
          <a
            class={"chip" + (filter === `state:${s}` ? " on" : "")}
            data-state={s}
            href={withParams(url, { filter: `state:${s}`, pageToken: null })}
          >
            {s} <b>{fmtCount(Number(counts[s] ?? 0))}</b>
          </a>
        ))}
      </div>
      <form
        class="filter"
        onSubmit={(e) => {
          e.preventDefault();
          applyFilter(draft.trim());
        }}
      >
        <input
          id="filter"
          ref={filterBox}
          value={draft}
          placeholder='Filter (press /): state:RUNNING AND labels.owner=alice, jobId:census*, createTime>"2024-01-01T00:00:00Z"'
          onInput={(e) => setDraft((e.target as HTMLInputElement).value)}
        />
        <button type="submit">Filter</button>
        {filter && (
          <button type="button" onClick={() => applyFilter("")}>
            Clear
          </button>
        )}
      </form>
      {error && (
        <div class="error" id="jobs-error">
          {error}
        </div>
      )}
      {notice && <div class="notice">{notice}</div>}
      {actionError && (
        <div class="error" id="action-error" role="alert">
          {actionError}
        </div>
      )}
      <div class="actions">
        <button
          type="button"
          id="bulk-cancel"
          disabled={cancellable.length === 0}
          onClick={() => setConfirming(true)}
        >
          Cancel selected{cancellable.length ? ` (${cancellable.length})` : ""}
        </button>
        {confirming && (
          <span class="confirm" id="confirm-cancel">
            Cancel {cancellable.length} job(s)?{" "}
            <button type="button" class="danger" id="confirm-yes" onClick={cancelSelected}>
              Cancel jobs
            </button>{" "}
            <button type="button" onClick={() => setConfirming(false)}>
              Keep them
            </button>
          </span>
        )}
        <span class="spacer-x" />
        <span class="pager">
          <button type="button" id="page-first" disabled={!pageToken} onClick={() => go({ pageToken: null })}>
            First
          </button>
          <button
            type="button"
            id="page-prev"
            disabled={!pageToken || prev === undefined}
            onClick={() => go({ pageToken: prev ?? null })}
          >
            Previous
          </button>
          <button type="button" id="page-next" disabled={!data?.nextPageToken} onClick={next}>
            Next
          </button>
        </span>
      </div>
      {data === null ? (
        !error && <p class="muted">Loading jobs…</p>
      ) : jobs.length === 0 && !error ? (
        <div class="empty" id="jobs-empty">
          {filter ? (
            <p>No job matches this filter. Clear it, or check its syntax against the API's.</p>
          ) : (
            <>
              <p>No jobs in project {project} yet. Submit one:</p>
              <pre>
                trainyard jobs submit training my_first_job --package-path trainer/ --module-name
                trainer.task --region us-central1
              </pre>
            </>
          )}
        </div>
      ) : (
        <table class="jobs" id="jobs-table">
          <thead>
            <tr>
              <th>
                <input
                  type="checkbox"
                  aria-label="select all"
                  checked={allSelected}
                  onChange={() =>
                    setSelected(allSelected ? new Set() : new Set(jobs.map((j) => j.jobId)))
                  }
                />
              </th>
              {COLUMNS.map(([k, l]) => sortHeader(k, l))}
              <th>Duration</th>
              <th>Type</th>
              <th>Machines</th>
              <th>Labels</th>
            </tr>
          </thead>
          <tbody>
            {jobs.map((j) => (
              <tr data-job={j.jobId} class={selected.has(j.jobId) ? "selected" : ""}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`select ${j.jobId}`}
                    checked={selected.has(j.jobId)}
                    onChange={() => toggle(j.jobId)}
                  />
                </td>
                <td>
                  <a href={`/console/projects/${enc(project)}/jobs/${enc(j.jobId)}`}>{j.jobId}</a>
                </td>
                <td>
                  <StateBadge state={j.state} />
                  {j.state === "QUEUED" && j.jobPosition ? (
                    <span class="muted small"> #{j.jobPosition}</span>
                  ) : null}
                </td>
                <td title={utcTitle(j.createTime)}>{localTime(j.createTime)}</td>
                <td>{duration(j.startTime, j.endTime)}</td>
                <td>{jobType(j)}</td>
                <td>{machines(j)}</td>
                <td>
                  {Object.entries(j.labels ?? {}).map(([k, v]) => (
                    <span class="label">
                      {k}={v}
                    </span>
                  ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
