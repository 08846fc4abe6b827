// The Job page: overview (state, times, queue position, error, replicas and their machines,
// labels, the training input), cancel, the exact JSON, and the Logs tab.
import { useEffect, useState } from "preact/hooks";
import { api, enc, Job, jobPath, ReplicaConfig, TERMINAL } from "./api";
import { duration, localTime, utcTitle } from "./format";
import { StateBadge, jobType } from "./jobs";
import { LogsPanel } from "./logview";
import { isTuningJob, TrialsPanel } from "./trials";
import { LabelsPanel } from "./labels";
import { gsLink } from "./storage";
import { navigate } from "./router";

const POLL_MS = 3000;

function Row(props: { k: string; v: unknown; id?: string }) {
  if (props.v === undefined || props.v === null || props.v === "") return null;
  return (
    <tr id={props.id}>
      <th>{props.k}</th>
      <td>{props.v as any}</td>
    </tr>
  );
}

function replicas(j: Job) {
  const ti = j.trainingInput ?? {};
  const rows: { role: string; type: string; count: string; cfg?: ReplicaConfig }[] = [];
  const tier = ti.scaleTier ?? "BASIC";
  rows.push({
    role: "master",
    type: ti.masterType ?? (tier === "CUSTOM" ? "" : `(${tier})`),
    count: "1",
    cfg: ti.masterConfig,
  });
  const more: [string, string | undefined, string | undefined, ReplicaConfig | undefined][] = [
    ["worker", ti.workerType, ti.workerCount, ti.workerConfig],
    ["parameterServer", ti.parameterServerType, ti.parameterServerCount, ti.parameterServerConfig],
    ["evaluator", ti.evaluatorType, ti.evaluatorCount, ti.evaluatorConfig],
  ];
  for (const [role, type, count, cfg] of more) {
    if (count && count !== "0") rows.push({ role, type: type ?? "", count, cfg });
  }
  return rows;
}

function accel(cfg?: ReplicaConfig): string {
  const a = cfg?.acceleratorConfig;
  return a && a.count && a.count !== "0" ? `${a.count}× ${a.type ?? "GPU"}` : "";
}

// gs:// URIs as links to the storage browser (one per line).
function GsLinks(props: { uris: string[]; text?: string[]; project: string }) {
  return (
    <>
      {props.uris.map((u, i) => {
        const href = gsLink(u, props.project);
        const label = props.text?.[i] ?? u;
        return (
          <>
            {i > 0 && "\n"}
            {href ? <a href={href}>{label}</a> : label}
          </>
        );
      })}
    </>
  );
}

interface StateChange {
  state: string;
  fromState?: string;
  time: string;
  reason?: string;
}

function memory(bytes?: string): string {
  const n = Number(bytes ?? 0);
  return n ? `${(n / 2 ** 30).toFixed(n % 2 ** 30 ? 1 : 0)} GiB` : "";
}

// What an admitted job holds (Trainyard's `allocation`): vCPUs, memory, GPUs and their indices.
function allocationText(j: Job): string {
  const a = j.allocation as
    | { vcpus?: number; memoryBytes?: string; gpus?: number; gpuIndices?: number[] }
    | undefined;
  if (!a) return "";
  const parts = [`${a.vcpus ?? 0} vCPUs`, memory(a.memoryBytes)];
  if (a.gpus) {
    parts.push(`${a.gpus} GPU${a.gpus > 1 ? "s" : ""}` +
      (a.gpuIndices?.length ? ` (GPU ${a.gpuIndices.join(", ")})` : ""));
  }
  return parts.filter(Boolean).join(", ");
}

// The job's state changes (GET …/jobs/J/history), read again whenever the job changed.
function StateHistory(props: { project: string; job: Job }) {
  const { project, job } = props;
  const [rows, setRows] = useState<StateChange[] | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    let live = true;
    api<{ stateChanges?: StateChange[] }>("GET", `${jobPath(project, job.jobId)}/history`)
      .then((h) => {
        if (!live) return;
        setRows(h.stateChanges ?? []);
        setError("");
      })
      .catch((e) => live && setError(`Could not read the state history: ${(e as Error).message}`));
    return () => {
      live = false;
    };
  }, [project, job.jobId, job.state, job.etag]);
  return (
    <>
      <h2>State history</h2>
      {error && <div class="error">{error}</div>}
      {rows && (
        <table class="grid" id="job-history">
          <thead>
            <tr>
              <th>Time</th>
              <th>State</th>
              <th>After</th>
              <th>Why</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr data-state={r.state}>
                <td>
                  <time dateTime={r.time} title={utcTitle(r.time)}>
                    {localTime(r.time)}
                  </time>
                </td>
                <td>
                  <StateBadge state={r.state} />
                </td>
                <td>{i > 0 ? duration(rows[i - 1].time, r.time) : ""}</td>
                <td class="reason">{r.reason ?? (i === 0 ? "created" : "")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

export function JobPage(props: { project: string; id: string; tab: string; url: URL }) {
  const { project, id, tab, url } = props;
  const [job, setJob] = useState<Job | null>(null);
  const [error, setError] = useState("");
  const [confirming, setConfirming] = useState(false);
  const [notice, setNotice] = useState("");
  // What a user's action (cancel) failed with; the page's polling does not clear it.
  const [actionError, setActionError] = useState("");
  const [tick, setTick] = useState(0);

  useEffect(() => {
    let live = true;
    api<Job>("GET", jobPath(project, id))
      .then((j) => {
        if (!live) return;
        setJob(j);
        setError("");
      })
      .catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [project, id, tick]);

  const terminal = job ? TERMINAL.has(job.state) : false;
  useEffect(() => {
    if (terminal) return;
    const t = window.setInterval(() => !document.hidden && setTick((x) => x + 1), POLL_MS);
    return () => clearInterval(t);
  }, [terminal, project, id]);

  const cancel = async () => {
    setConfirming(false);
    try {
      await api("POST", `${jobPath(project, id)}:cancel`, {});
      setNotice("Cancel requested.");
      setActionError("");
    } catch (e) {
      setNotice("");
      setActionError(`Could not cancel ${id}: ${(e as Error).message}`);
    }
    setTick((x) => x + 1);
  };

  const base = `/console/projects/${enc(project)}/jobs/${enc(id)}`;
  const ti = job?.trainingInput ?? {};
  return (
    <section class="page">
      <p class="crumbs">
        <a href={`/console/projects/${enc(project)}/jobs`}>Jobs</a> /
      </p>
      <h1>
        <span id="job-id">{id}</span> {job && <StateBadge state={job.state} />}
      </h1>
      {error && (
        <div class="error" id="job-error">
          {error}
        </div>
      )}
      {notice && <div class="notice">{notice}</div>}
      {actionError && (
        <div class="error" id="action-error" role="alert">
          {actionError}
        </div>
      )}
      {job && (
        <>
          <div class="actions">
            <button
              type="button"
              id="job-cancel"
              disabled={terminal || job.state === "CANCELLING"}
              onClick={() => setConfirming(true)}
            >
              Cancel job
            </button>
            <button
              type="button"
              id="job-clone"
              title="A new job from this one's spec, edited first"
              onClick={() => navigate(`/console/projects/${enc(project)}/jobs:new?from=${enc(id)}`)}
            >
              Clone
            </button>
            {confirming && (
              <span class="confirm" id="confirm-cancel">
                Cancel {id}?{" "}
                <button type="button" class="danger" id="confirm-yes" onClick={cancel}>
                  Cancel job
                </button>{" "}
                <button type="button" onClick={() => setConfirming(false)}>
                  Keep it
                </button>
              </span>
            )}
            <code class="cmd muted">
              trainyard jobs describe {id} --project {project}
            </code>
          </div>
          <nav class="tabs">
            <a href={base} class={tab === "overview" ? "on" : ""} id="tab-overview">
              Overview
            </a>
            <a href={`${base}/logs`} class={tab === "logs" ? "on" : ""} id="tab-logs">
              Logs
            </a>
            {isTuningJob(job) && (
              <a href={`${base}/trials`} class={tab === "trials" ? "on" : ""} id="tab-trials">
                Trials
              </a>
            )}
            <a href={`${base}/json`} class={tab === "json" ? "on" : ""} id="tab-json">
              JSON
            </a>
          </nav>
          {job.state === "FAILED" && job.errorMessage && (
            <div class="error banner" id="job-error-message">
              <b>Failed:</b> <span class="pre">{job.errorMessage}</span>{" "}
              <a href={`${base}/logs?severity=ERROR`}>error lines</a>
            </div>
          )}
          {tab === "overview" && (
            <div class="overview">
              <table class="kv" id="job-overview">
                <tbody>
                  <Row k="State" v={job.state} id="ov-state" />
                  <Row k="Queue position" v={job.state === "QUEUED" ? job.jobPosition : undefined} id="ov-position" />
                  <Row k="Waiting because" v={TERMINAL.has(job.state) ? undefined : (job.waitReason as string | undefined)} id="ov-wait" />
                  <Row k="Holds" v={allocationText(job)} id="ov-allocation" />
                  <Row k="Type" v={jobType(job)} />
                  <Row k="Created" v={<span title={utcTitle(job.createTime)}>{localTime(job.createTime)}</span>} />
                  <Row k="Started" v={job.startTime && <span title={utcTitle(job.startTime)}>{localTime(job.startTime)}</span>} />
                  <Row k="Ended" v={job.endTime && <span title={utcTitle(job.endTime)}>{localTime(job.endTime)}</span>} />
                  <Row k="Duration" v={duration(job.startTime, job.endTime)} />
                  <Row k="ML units" v={job.trainingOutput?.consumedMLUnits} />
                  <Row k="Region" v={ti.region} />
                  <Row k="Scale tier" v={ti.scaleTier ?? "BASIC"} />
                  <Row k="Runtime" v={ti.runtimeVersion && `${ti.runtimeVersion} (Python ${ti.pythonVersion ?? "default"})`} />
                  <Row k="Packages" v={ti.packageUris && <GsLinks uris={ti.packageUris} project={project} />} />
                  <Row k="Module" v={ti.pythonModule} />
                  <Row k="Image" v={ti.masterConfig?.imageUri} />
                  <Row k="Arguments" v={ti.args?.join(" ")} />
                  <Row k="Job dir" v={ti.jobDir && <GsLinks uris={[ti.jobDir.replace(/\/?$/, "/")]} text={[ti.jobDir]} project={project} />} id="ov-jobdir" />
                </tbody>
              </table>
              <h2>Replicas</h2>
              <table class="grid" id="job-replicas">
                <thead>
                  <tr>
                    <th>Role</th>
                    <th>Machine type</th>
                    <th>Count</th>
                    <th>Accelerators</th>
                    <th>Image</th>
                  </tr>
                </thead>
                <tbody>
                  {replicas(job).map((r) => (
                    <tr data-role={r.role}>
                      <td>{r.role}</td>
                      <td>{r.type}</td>
                      <td>{r.count}</td>
                      <td>{accel(r.cfg)}</td>
                      <td>{r.cfg?.imageUri ?? ""}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <StateHistory project={project} job={job} />
              <LabelsPanel
                project={project}
                job={job}
                onChanged={(j) => (j ? setJob(j) : setTick((x) => x + 1))}
              />
            </div>
          )}
          {tab === "json" && <pre class="json" id="job-json">{JSON.stringify(job, null, 2)}</pre>}
          {tab === "trials" && <TrialsPanel project={project} job={job} url={url} />}
          {tab === "logs" && (
            <LogsPanel project={project} job={id} url={url} running={!terminal} />
          )}
        </>
      )}
    </section>
  );
}
