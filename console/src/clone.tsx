// Clone a job (docs/console.md "Clone"): the source job's spec (jobId, labels, trainingInput)
// as editable JSON with a new job id suggested; Create sends it to projects.jobs.create as is,
// shows the API's refusal with the fields it names, and opens the new job on success.
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, enc, Job, jobPath } from "./api";
import { navigate } from "./router";

// SOURCE_YYYYMMDD_HHMMSS (the time in the viewer's zone): a fresh id for each clone, within
// AI Platform's 128 characters; a previous clone's suffix is replaced, not stacked.
export function suggestJobId(source: string, now = new Date()): string {
  const p = (n: number) => String(n).padStart(2, "0");
  const stamp =
    `${now.getFullYear()}${p(now.getMonth() + 1)}${p(now.getDate())}_` +
    `${p(now.getHours())}${p(now.getMinutes())}${p(now.getSeconds())}`;
  const base = source.replace(/_\d{8}_\d{6}$/, "").slice(0, 128 - stamp.length - 1);
  return `${base}_${stamp}`;
}

export function cloneSpec(job: Job, newId: string): string {
  const spec: Record<string, unknown> = { jobId: newId };
  if (job.labels && Object.keys(job.labels).length) spec.labels = job.labels;
  spec.trainingInput = job.trainingInput ?? {};
  return JSON.stringify(spec, null, 2);
}

export function ClonePage(props: { project: string; url: URL }) {
  const { project, url } = props;
  const from = url.searchParams.get("from") ?? "";
  const [text, setText] = useState("");
  const [error, setError] = useState("");
  const [fields, setFields] = useState<{ field: string; description: string }[]>([]);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!from) {
      setError("Open a job and press Clone: this page needs ?from=JOB_ID.");
      return;
    }
    api<Job>("GET", jobPath(project, from))
      .then((j) => setText(cloneSpec(j, suggestJobId(j.jobId))))
      .catch((e) => setError(e.message));
  }, [project, from]);

  const create = async (e: Event) => {
    e.preventDefault();
    setFields([]);
    let body: { jobId?: unknown };
    try {
      body = JSON.parse(text);
    } catch (err) {
      setError(`The spec is not valid JSON: ${(err as Error).message}`);
      return;
    }
    setBusy(true);
    try {
      const created = await api<Job>("POST", jobPath(project), body);
      navigate(`/console/projects/${enc(project)}/jobs/${enc(created.jobId)}`);
    } catch (err) {
      setError((err as Error).message);
      setFields(err instanceof ApiError ? err.fields : []);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="page">
      <p class="crumbs">
        <a href={`/console/projects/${enc(project)}/jobs`}>Jobs</a> /{" "}
        {from && <a href={`/console/projects/${enc(project)}/jobs/${enc(from)}`}>{from}</a>} /
      </p>
      <h1>Clone {from}</h1>
      <p class="muted">
        The new job's spec as <code>projects.jobs.create</code> takes it (the JSON a{" "}
        <code>--config</code> file holds under <code>trainingInput</code>): edit the job id,
        arguments, machines or labels, then create it.
      </p>
      {error && (
        <div class="error" id="clone-error">
          {error}
          {fields.length > 0 && (
            <ul id="clone-fields">
              {fields.map((f) => (
                <li data-field={f.field}>
                  <code>{f.field}</code>: {f.description}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {text && (
        <form id="clone-form" onSubmit={create}>
          <textarea
            id="clone-spec"
            class="spec"
            spellcheck={false}
            value={text}
            rows={Math.min(40, text.split("\n").length + 2)}
            onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
          />
          <div class="actions">
            <button type="submit" id="clone-create" disabled={busy}>
              {busy ? "Creating…" : "Create job"}
            </button>
            <a href={`/console/projects/${enc(project)}/jobs/${enc(from)}`}>Back to {from}</a>
          </div>
        </form>
      )}
    </section>
  );
}
