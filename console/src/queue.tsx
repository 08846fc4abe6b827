// The Queue and capacity page (docs/console.md): what runs where (the project's admitted jobs,
// their replicas and GPUs), what waits and why (queued jobs in admission order with jobPosition
// and waitReason), the node's capacity and what is free, and whether admission is paused or held.
// With Slurm (node.scope "cluster") the capacity is the partition's, and jobs Slurm keeps waiting
// (admitted, still QUEUED) are listed with Slurm's place and reason apart from the running ones.
// One request, GET /v1/projects/P/jobs:queue, refreshed every 3 s while the tab is visible.
import { useEffect, useState } from "preact/hooks";
import { api, enc, Job } from "./api";
import { duration, localTime, utcTitle } from "./format";
import { StateBadge } from "./jobs";
import { withParams } from "./router";

const POLL_MS = 3000;

interface QueueReplica {
  taskName: string;
  trialId?: string;
  state: string;
  vcpus: number;
  memoryBytes: string;
  gpus: number;
  gpuType?: string;
  gpuIndices?: number[];
}

interface QueueJob extends Job {
  waitReason?: string;
  allocation?: { vcpus: number; memoryBytes: string; gpus: number; gpuIndices?: number[] };
  replicas?: QueueReplica[];
}

export interface QueueAnswer {
  admission: { paused: boolean; holdReason?: string; backendProblem?: string; maxRunningJobs?: number };
  node: {
    scope?: "node" | "cluster";
    vcpus: number;
    memoryBytes: string;
    gpus: number;
    freeVcpus: number;
    freeMemoryBytes: string;
    freeGpus: number;
  };
  jobCounts: Record<string, number>;
  gpus: { index: number; type: string; name?: string; inUse: boolean; jobId?: string; trialId?: string; taskName?: string }[];
  admitted: QueueJob[];
  queued: QueueJob[];
  nextPageToken?: string;
}

export function gib(bytes: string | number): string {
  const n = Number(bytes) / 1024 ** 3;
  return `${n >= 10 ? n.toFixed(0) : n.toFixed(1)} GiB`;
}

function Meter(props: { id: string; label: string; used: number; total: number; text: string }) {
  return (
    <div class="meter" id={props.id}>
      <span class="meter-label">{props.label}</span>
      <meter min={0} max={Math.max(props.total, 1e-9)} value={props.used} />
      <span>{props.text}</span>
    </div>
  );
}

export function QueuePage(props: { project: string; url: URL }) {
  const { project, url } = props;
  const token = url.searchParams.get("pageToken") ?? "";
  const [data, setData] = useState<QueueAnswer | null>(null);
  const [error, setError] = useState("");
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    const q = token ? `?pageToken=${enc(token)}` : "";
    api<QueueAnswer>("GET", `/v1/projects/${enc(project)}/jobs:queue${q}`)
      .then((d) => {
        if (!live) return;
        setData(d);
        setError("");
      })
      .catch((e) => live && setError((e as Error).message));
    return () => {
      live = false;
    };
  }, [project, token, tick]);
  useEffect(() => {
    const t = window.setInterval(() => !document.hidden && setTick((x) => x + 1), POLL_MS);
    return () => clearInterval(t);
  }, []);

  const jobLink = (id: string) => (
    <a href={`/console/projects/${enc(project)}/jobs/${enc(id)}`}>{id}</a>
  );
  const n = data?.node;
  const a = data?.admission;
  const cluster = n?.scope === "cluster";
  const inCluster = (data?.admitted ?? []).filter((j) => j.state === "QUEUED");
  const running = (data?.admitted ?? []).filter((j) => j.state !== "QUEUED");
  return (
    <section class="page">
      <p class="crumbs">
        <a href={`/console/projects/${enc(project)}/jobs`}>Jobs</a> /
      </p>
      <h1>
        Queue and capacity <span class="muted small">project {project}</span>
      </h1>
      {error && (
        <div class="error" id="queue-error">
          {error}
        </div>
      )}
      {data && n && a && (
        <>
          <p id="queue-admission" class={a.paused || a.holdReason ? "warn-text" : ""}>
            Admission:{" "}
            <b id="queue-admission-state">
              {a.paused ? "paused" : a.holdReason ? "held" : "admitting"}
            </b>
            {a.paused && (
              <span class="muted">
                {" "}
                (queued jobs stay queued; <code>trainyard admin resume</code> resumes)
              </span>
            )}
            {a.holdReason && <span> — {a.holdReason}</span>}
            {a.maxRunningJobs ? <span class="muted"> · max_running_jobs {a.maxRunningJobs}</span> : null}
          </p>
          {a.backendProblem && (
            <div class="error" id="queue-backend">
              The backend does not work: {a.backendProblem}
            </div>
          )}
          {cluster && (
            <p class="muted small" id="queue-scope">
              The Slurm partition's capacity; "in use" counts Trainyard's own submitted jobs
              (Slurm places them and counts everyone else's).
            </p>
          )}
          <div class="meters" id="queue-capacity">
            <Meter id="cap-cpu" label="vCPUs" used={n.vcpus - n.freeVcpus} total={n.vcpus}
              text={`${+(n.vcpus - n.freeVcpus).toFixed(2)} of ${n.vcpus} in use`} />
            <Meter id="cap-mem" label="Memory" used={Number(n.memoryBytes) - Number(n.freeMemoryBytes)}
              total={Number(n.memoryBytes)}
              text={`${gib(Number(n.memoryBytes) - Number(n.freeMemoryBytes))} of ${gib(n.memoryBytes)} in use`} />
            <Meter id="cap-gpu" label="GPUs" used={n.gpus - n.freeGpus} total={n.gpus}
              text={n.gpus ? `${n.gpus - n.freeGpus} of ${n.gpus} in use` : cluster ? "none in the partition" : "none on this node"} />
          </div>
          <p class="muted small" id="queue-counts">
            Daemon-wide: {data.jobCounts.running ?? 0} running, {data.jobCounts.preparing ?? 0}{" "}
            preparing, {data.jobCounts.cancelling ?? 0} cancelling, {data.jobCounts.queued ?? 0}{" "}
            queued; {data.jobCounts.runningReplicas ?? 0} replicas running.
          </p>
          {data.gpus.length > 0 && (
            <>
              <h2>GPUs</h2>
              <table class="grid" id="queue-gpus">
                <thead>
                  <tr>
                    <th>Index</th>
                    <th>Type</th>
                    <th>Held by</th>
                  </tr>
                </thead>
                <tbody>
                  {data.gpus.map((g) => (
                    <tr data-gpu={g.index} class={g.inUse ? "busy" : ""}>
                      <td>{g.index}</td>
                      <td>{g.name ? `${g.type} (${g.name})` : g.type}</td>
                      <td>
                        {!g.inUse ? (
                          <span class="muted">free</span>
                        ) : g.jobId ? (
                          <>
                            {jobLink(g.jobId)} {g.trialId ? `trial ${g.trialId} ` : ""}
                            <span class="muted">{g.taskName}</span>
                          </>
                        ) : (
                          <span class="muted">a job of another project</span>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
          {inCluster.length > 0 && (
            <>
              <h2>Waiting in Slurm ({inCluster.length})</h2>
              <table class="grid" id="queue-in-cluster">
                <thead>
                  <tr>
                    <th>Position</th>
                    <th>Job</th>
                    <th>Created</th>
                    <th>Why it waits</th>
                  </tr>
                </thead>
                <tbody>
                  {inCluster.map((j) => (
                    <tr data-job={j.jobId}>
                      <td class="num">{j.jobPosition}</td>
                      <td>{jobLink(j.jobId)}</td>
                      <td>
                        <span title={utcTitle(j.createTime)}>{localTime(j.createTime)}</span>
                      </td>
                      <td class="reason">{j.waitReason}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
          <h2>Running ({running.length})</h2>
          {running.length === 0 ? (
            <p class="muted" id="queue-running-empty">
              No job of this project holds resources now.
            </p>
          ) : (
            <table class="grid" id="queue-running">
              <thead>
                <tr>
                  <th>Job</th>
                  <th>State</th>
                  <th>Started</th>
                  <th>For</th>
                  <th>Holds</th>
                  <th>Replicas</th>
                </tr>
              </thead>
              <tbody>
                {running.map((j) => (
                  <tr data-job={j.jobId}>
                    <td>{jobLink(j.jobId)}</td>
                    <td>
                      <StateBadge state={j.state} />
                    </td>
                    <td>
                      <span title={utcTitle(j.startTime)}>{localTime(j.startTime)}</span>
                    </td>
                    <td>{duration(j.startTime)}</td>
                    <td>
                      {j.allocation
                        ? `${j.allocation.vcpus} vCPUs, ${gib(j.allocation.memoryBytes)}` +
                          (j.allocation.gpus ? `, ${j.allocation.gpus} GPU` : "") +
                          (j.allocation.gpuIndices?.length ? ` [${j.allocation.gpuIndices.join(",")}]` : "")
                        : ""}
                    </td>
                    <td>
                      <ul class="replicas">
                        {(j.replicas ?? []).map((r) => (
                          <li data-task={r.taskName} data-trial={r.trialId ?? ""}>
                            {r.trialId ? `trial ${r.trialId} ` : ""}
                            {r.taskName} <span class={`badge st-${r.state}`}>{r.state}</span>{" "}
                            <span class="muted">
                              {r.vcpus} vCPUs, {gib(r.memoryBytes)}
                              {r.gpus ? `, ${r.gpus}× ${r.gpuType ?? "GPU"}` : ""}
                              {r.gpuIndices?.length ? ` on GPU ${r.gpuIndices.join(",")}` : ""}
                            </span>
                          </li>
                        ))}
                      </ul>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h2>Waiting, in admission order</h2>
          {data.queued.length === 0 ? (
            <p class="muted" id="queue-waiting-empty">
              {token ? "No more queued jobs." : "No job of this project waits."}
            </p>
          ) : (
            <table class="grid" id="queue-waiting">
              <thead>
                <tr>
                  <th>Position</th>
                  <th>Job</th>
                  <th>Created</th>
                  <th>Priority</th>
                  <th>Why it waits</th>
                </tr>
              </thead>
              <tbody>
                {data.queued.map((j) => (
                  <tr data-job={j.jobId}>
                    <td class="num">{j.jobPosition}</td>
                    <td>{jobLink(j.jobId)}</td>
                    <td>
                      <span title={utcTitle(j.createTime)}>{localTime(j.createTime)}</span>
                    </td>
                    <td class="num">
                      {(j.trainingInput?.scheduling as { priority?: number } | undefined)?.priority ?? 0}
                    </td>
                    <td class="reason">{j.waitReason}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <div class="actions">
            {token && (
              <a href={withParams(url, { pageToken: null })} id="queue-first">
                First
              </a>
            )}
            {data.nextPageToken && (
              <a href={withParams(url, { pageToken: data.nextPageToken })} id="queue-next">
                Next
              </a>
            )}
            <code class="cmd muted">trainyard jobs queue --project {project}</code>
          </div>
        </>
      )}
    </section>
  );
}
