// The console's only way to the daemon: the public REST API of the same origin.
//
// Authentication: when the daemon's authentication is on, the browser holds an HttpOnly session
// cookie (set by signing in, session.tsx; never read by this code), and every request that is
// not a GET carries the header below, without which the daemon ignores the cookie (CSRF). A 401
// raises SIGN_IN_EVENT, which shows the sign-in form.

export class ApiError extends Error {
  constructor(
    public status: number,
    message: string,
    // The google.rpc.BadRequest field violations of the answer: which fields were refused.
    public fields: { field: string; description: string }[] = [],
  ) {
    super(message);
  }
}

function authHeaders(method: string): Record<string, string> {
  return method === "GET" ? {} : { "X-Trainyard-Console": "1" };
}

export const SIGN_IN_EVENT = "trainyard-sign-in";

export async function api<T>(
  method: string,
  path: string,
  body?: unknown,
  opts: { quiet?: boolean } = {},
): Promise<T> {
  const headers: Record<string, string> = authHeaders(method);
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch (e) {
    throw new ApiError(0, `${method} ${path} failed: the daemon did not answer (${String(e)})`);
  }
  const text = await res.text();
  let data: any = {};
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = {};
    }
  }
  if (res.status === 401 && !opts.quiet) window.dispatchEvent(new Event(SIGN_IN_EVENT));
  if (!res.ok) {
    const msg = data?.error?.message ?? `HTTP ${res.status}`;
    const fields = (data?.error?.details ?? []).flatMap((d: any) => d?.fieldViolations ?? []);
    // The path without its query (a list's fields= mask is long and says nothing here).
    throw new ApiError(res.status, `${method} ${path.split("?")[0]}: ${msg}`, fields);
  }
  return data as T;
}

export const enc = encodeURIComponent;

export interface ReplicaConfig {
  imageUri?: string;
  acceleratorConfig?: { count?: string; type?: string };
  [k: string]: unknown;
}

export interface TrainingInput {
  scaleTier?: string;
  masterType?: string;
  masterConfig?: ReplicaConfig;
  workerType?: string;
  workerCount?: string;
  workerConfig?: ReplicaConfig;
  parameterServerType?: string;
  parameterServerCount?: string;
  parameterServerConfig?: ReplicaConfig;
  evaluatorType?: string;
  evaluatorCount?: string;
  evaluatorConfig?: ReplicaConfig;
  packageUris?: string[];
  pythonModule?: string;
  args?: string[];
  region?: string;
  jobDir?: string;
  runtimeVersion?: string;
  pythonVersion?: string;
  hyperparameters?: { maxTrials?: number; goal?: string; hyperparameterMetricTag?: string };
  [k: string]: unknown;
}

export interface Job {
  jobId: string;
  state: string;
  createTime?: string;
  startTime?: string;
  endTime?: string;
  errorMessage?: string;
  labels?: Record<string, string>;
  etag?: string;
  jobPosition?: string;
  trainingInput?: TrainingInput;
  trainingOutput?: { completedTrialCount?: string; consumedMLUnits?: number; trials?: unknown[] };
  [k: string]: unknown;
}

export interface ListJobsResponse {
  jobs?: Job[];
  nextPageToken?: string;
}

export interface JobsSummary {
  jobStateCounts?: Record<string, string>;
  totalJobs?: string;
}

export interface LogEntry {
  insertId: string;
  timestamp: string;
  severity: string;
  resource: { labels: { task_name: string } };
  labels?: { trial_id?: string };
  jsonPayload: { message: string };
}

export interface LogsSummary {
  lineCount: string;
  snapshotInsertId: string;
  streams: { taskName: string; trialId?: string; lineCount: string }[];
}

export const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);
export const STATES = [
  "QUEUED",
  "PREPARING",
  "RUNNING",
  "SUCCEEDED",
  "FAILED",
  "CANCELLING",
  "CANCELLED",
];

export function jobPath(project: string, id?: string): string {
  return `/v1/projects/${enc(project)}/jobs` + (id === undefined ? "" : `/${enc(id)}`);
}
