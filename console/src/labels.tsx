// A job's labels with editing (docs/console.md "Labels"): projects.jobs.patch with
// updateMask=labels and the etag the job had when editing began, as AI Platform's console and
// `gcloud ai-platform jobs update --update-labels` do. When someone changed the job meanwhile
// the API answers 409 ABORTED: the job is read again, the draft kept, and a message says so.
import { useState } from "preact/hooks";
import { api, ApiError, Job, jobPath } from "./api";

type Row = { key: string; value: string };

function rowsOf(labels?: Record<string, string>): Row[] {
  return Object.entries(labels ?? {}).map(([key, value]) => ({ key, value }));
}

export function LabelsPanel(props: {
  project: string;
  job: Job;
  onChanged: (job: Job | null) => void; // the patched job, or null: read it again
}) {
  const { project, job, onChanged } = props;
  const [editing, setEditing] = useState(false);
  const [rows, setRows] = useState<Row[]>([]);
  const [etag, setEtag] = useState("");
  const [error, setError] = useState("");
  const [notice, setNotice] = useState("");
  const [busy, setBusy] = useState(false);

  const start = () => {
    setRows(rowsOf(job.labels));
    setEtag(job.etag ?? "");
    setError("");
    setNotice("");
    setEditing(true);
  };
  const set = (i: number, change: Partial<Row>) =>
    setRows(rows.map((r, k) => (k === i ? { ...r, ...change } : r)));

  const save = async (e: Event) => {
    e.preventDefault();
    const labels: Record<string, string> = {};
    for (const r of rows) {
      const key = r.key.trim();
      if (!key && !r.value) continue;
      if (key in labels) {
        setError(`Label ${key} appears twice.`);
        return;
      }
      labels[key] = r.value;
    }
    setBusy(true);
    setError("");
    try {
      const body: Record<string, unknown> = { labels };
      if (etag) body.etag = etag;
      const patched = await api<Job>("PATCH", `${jobPath(project, job.jobId)}?updateMask=labels`, body);
      setEditing(false);
      setNotice("Labels saved.");
      onChanged(patched);
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) {
        // The etag no longer matches: read the job again and let the user decide.
        try {
          const fresh = await api<Job>("GET", jobPath(project, job.jobId));
          setEtag(fresh.etag ?? "");
          onChanged(fresh);
          const now = Object.entries(fresh.labels ?? {})
            .map(([k, v]) => `${k}=${v}`)
            .join(", ");
          setError(
            "The job was changed since you began editing (its etag no longer matches), so " +
              `nothing was saved. It was read again: its labels are now ${now || "none"}. ` +
              "Your edits are still here: save again to apply them to the new version.",
          );
        } catch (again) {
          setError((again as Error).message);
        }
      } else {
        setError((err as Error).message);
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <div id="job-labels-panel">
      <h2>
        Labels{" "}
        {!editing && (
          <button type="button" class="small" id="labels-edit" onClick={start}>
            Edit labels
          </button>
        )}
      </h2>
      {notice && <div class="notice">{notice}</div>}
      {error && (
        <div class="error" id="labels-error">
          {error}
        </div>
      )}
      {!editing ? (
        <p id="job-labels">
          {Object.keys(job.labels ?? {}).length === 0 ? (
            <span class="muted">none</span>
          ) : (
            Object.entries(job.labels ?? {}).map(([k, v]) => (
              <span class="label" data-key={k}>
                {k}={v}
              </span>
            ))
          )}
        </p>
      ) : (
        <form id="labels-form" onSubmit={save}>
          <table class="kv">
            <tbody>
              {rows.map((r, i) => (
                <tr data-row={i}>
                  <td>
                    <input
                      class="label-key"
                      placeholder="key"
                      value={r.key}
                      onInput={(e) => set(i, { key: (e.target as HTMLInputElement).value })}
                    />
                  </td>
                  <td>
                    <input
                      class="label-value"
                      placeholder="value"
                      value={r.value}
                      onInput={(e) => set(i, { value: (e.target as HTMLInputElement).value })}
                    />
                  </td>
                  <td>
                    <button
                      type="button"
                      class="label-remove"
                      aria-label={`remove ${r.key}`}
                      onClick={() => setRows(rows.filter((_, k) => k !== i))}
                    >
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <div class="actions">
            <button type="button" id="label-add" onClick={() => setRows([...rows, { key: "", value: "" }])}>
              Add label
            </button>
            <button type="submit" id="labels-save" disabled={busy}>
              Save
            </button>
            <button type="button" id="labels-cancel" onClick={() => (setEditing(false), setError(""))}>
              Cancel
            </button>
            <span class="muted small">
              Keys and values: lowercase letters, digits, - and _ (at most 64 each).
            </span>
          </div>
        </form>
      )}
    </div>
  );
}
