// The Storage pages (docs/console.md "Storage"): a project's buckets, and a bucket's objects
// browsed like folders (the Cloud Storage JSON API's prefix + delimiter listing), pages of 100,
// size and time, and download links that stream the object (`alt=media`; with authentication
// on, the session cookie authorizes the GET). Read-only.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, enc } from "./api";
import { fmtCount, localTime, utcTitle } from "./format";
import { navigate, withParams } from "./router";

const PAGE_SIZE = 100;

interface Bucket {
  name: string;
  timeCreated?: string;
  location?: string;
}
interface StorageObject {
  name: string;
  size?: string;
  updated?: string;
  contentType?: string;
}
interface ObjectList {
  items?: StorageObject[];
  prefixes?: string[];
  nextPageToken?: string;
}

export function humanBytes(n: number): string {
  if (!Number.isFinite(n)) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

// /console/storage/BUCKET/a/b/ -> the bucket and the prefix "a/b/" (each segment URL-encoded).
export function storageLink(bucket: string, prefix = "", project?: string): string {
  const segments = prefix.split("/").filter((s) => s !== "");
  const path = segments.map(enc).join("/") + (segments.length ? "/" : "");
  const q = project ? `?project=${enc(project)}` : "";
  return `/console/storage/${enc(bucket)}/${path}${q}`;
}

// A gs:// URI's browser link: its folder for a directory, the folder holding it for an object.
export function gsLink(uri: string, project?: string): string | null {
  const m = /^gs:\/\/([^/]+)\/?(.*)$/.exec(uri);
  if (!m) return null;
  const rest = m[2];
  const folder = rest === "" || rest.endsWith("/") ? rest : rest.slice(0, rest.lastIndexOf("/") + 1);
  return storageLink(m[1], folder, project);
}

export function mediaUrl(bucket: string, name: string): string {
  return `/storage/v1/b/${enc(bucket)}/o/${enc(name)}?alt=media`;
}

export function BucketsPage(props: { project: string }) {
  const { project } = props;
  const [buckets, setBuckets] = useState<Bucket[] | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    api<{ items?: Bucket[] }>("GET", `/storage/v1/b?project=${enc(project)}`)
      .then((r) => {
        setBuckets(r.items ?? []);
        setError("");
      })
      .catch((e) => setError(e.message));
  }, [project]);
  return (
    <section class="page">
      <p class="crumbs">
        <a href={`/console/projects/${enc(project)}/jobs`}>Jobs</a> /
      </p>
      <h1>
        Storage <span class="muted small">project {project}</span>
      </h1>
      {error && (
        <div class="error" id="storage-error">
          {error}
        </div>
      )}
      {buckets === null ? (
        !error && <p class="muted">Loading buckets…</p>
      ) : buckets.length === 0 ? (
        <div class="empty" id="buckets-empty">
          <p>No buckets in project {project} yet. Create one and upload a file:</p>
          <pre>gsutil mb gs://my-bucket{"\n"}gsutil cp model.pt gs://my-bucket/models/</pre>
        </div>
      ) : (
        <table class="grid" id="buckets-table">
          <thead>
            <tr>
              <th>Bucket</th>
              <th>Location</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {buckets.map((b) => (
              <tr data-bucket={b.name}>
                <td>
                  <a href={storageLink(b.name, "", project)}>{b.name}</a>
                </td>
                <td>{b.location ?? ""}</td>
                <td title={b.timeCreated}>{localTime(b.timeCreated)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function ObjectsPage(props: { url: URL }) {
  const { url } = props;
  const segments = url.pathname.slice("/console/storage/".length).split("/");
  const bucket = decodeURIComponent(segments[0] ?? "");
  const parts = segments.slice(1).filter((s) => s !== "").map(decodeURIComponent);
  const prefix = parts.length ? parts.join("/") + "/" : "";
  const project = url.searchParams.get("project") ?? "";
  const pageToken = url.searchParams.get("pageToken") ?? "";
  const [data, setData] = useState<ObjectList | null>(null);
  const [error, setError] = useState("");
  const prevTokens = useRef<Map<string, string>>(new Map());

  useEffect(() => {
    let live = true;
    setData(null);
    const q = new URLSearchParams({ delimiter: "/", maxResults: String(PAGE_SIZE) });
    if (prefix) q.set("prefix", prefix);
    if (pageToken) q.set("pageToken", pageToken);
    api<ObjectList>("GET", `/storage/v1/b/${enc(bucket)}/o?${q}`)
      .then((r) => {
        if (!live) return;
        setData(r);
        setError("");
      })
      .catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [bucket, prefix, pageToken]);

  const go = (changes: Record<string, string | null>) => navigate(withParams(url, changes));
  const next = () => {
    if (!data?.nextPageToken) return;
    prevTokens.current.set(data.nextPageToken, pageToken);
    go({ pageToken: data.nextPageToken });
  };
  const prev = prevTokens.current.get(pageToken);
  const folders = (data?.prefixes ?? []).filter((p) => p !== prefix);
  // A folder's own placeholder object ("a/b/") is the folder, not an entry in it.
  const objects = (data?.items ?? []).filter((o) => o.name !== prefix);
  const bucketsHref = `/console/projects/${enc(project || "default")}/storage`;

  return (
    <section class="page">
      <p class="crumbs" id="storage-crumbs">
        <a href={bucketsHref}>Buckets</a> /{" "}
        <a href={storageLink(bucket, "", project)} data-prefix="">
          {bucket}
        </a>{" "}
        /{" "}
        {parts.map((p, i) => (
          <>
            <a href={storageLink(bucket, parts.slice(0, i + 1).join("/") + "/", project)} data-prefix={parts.slice(0, i + 1).join("/") + "/"}>
              {p}
            </a>{" "}
            /{" "}
          </>
        ))}
      </p>
      <h1>
        <span id="storage-location">gs://{bucket}/{prefix}</span>
      </h1>
      {error && (
        <div class="error" id="storage-error">
          {error}
        </div>
      )}
      <div class="actions">
        <code class="cmd muted">gsutil ls gs://{bucket}/{prefix}</code>
        <span class="spacer-x" />
        <span class="pager">
          <button type="button" id="objects-first" disabled={!pageToken} onClick={() => go({ pageToken: null })}>
            First
          </button>
          <button
            type="button"
            id="objects-prev"
            disabled={!pageToken || prev === undefined}
            onClick={() => go({ pageToken: prev ?? null })}
          >
            Previous
          </button>
          <button type="button" id="objects-next" disabled={!data?.nextPageToken} onClick={next}>
            Next
          </button>
        </span>
      </div>
      {data === null ? (
        !error && <p class="muted">Loading objects…</p>
      ) : folders.length === 0 && objects.length === 0 ? (
        <div class="empty" id="objects-empty">
          <p>
            Nothing under gs://{bucket}/{prefix}. Upload with{" "}
            <code>gsutil cp FILE gs://{bucket}/{prefix}</code>.
          </p>
        </div>
      ) : (
        <table class="grid" id="objects-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Size</th>
              <th>Type</th>
              <th>Updated</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {folders.map((p) => (
              <tr data-folder={p}>
                <td>
                  <a href={storageLink(bucket, p, project)}>📁 {p.slice(prefix.length)}</a>
                </td>
                <td />
                <td class="muted">folder</td>
                <td />
                <td />
              </tr>
            ))}
            {objects.map((o) => {
              const base = o.name.slice(prefix.length);
              const size = Number(o.size ?? "0");
              return (
                <tr data-object={o.name}>
                  <td>{base}</td>
                  <td title={`${fmtCount(size)} bytes`} class="num">
                    {humanBytes(size)}
                  </td>
                  <td class="muted">{o.contentType ?? ""}</td>
                  <td title={utcTitle(o.updated)}>{localTime(o.updated)}</td>
                  <td>
                    <a
                      class="download"
                      href={mediaUrl(bucket, o.name)}
                      download={base.split("/").pop() || "object"}
                    >
                      Download
                    </a>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
