// The console's entry point: routes the URL to a page.
import { render } from "preact";
import "./app.css";
import { JobPage } from "./job";
import { JobsPage } from "./jobs";
import { QueuePage } from "./queue";
import { useLocation } from "./router";
import { SessionBar, SignIn, useSignInNeeded } from "./session";
import { ClonePage } from "./clone";
import { BucketsPage, ObjectsPage } from "./storage";

function App() {
  const url = useLocation();
  if (useSignInNeeded()) return <SignIn />;
  const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  // ["console", "projects", P, "jobs", ID?, TAB?]
  if (parts[0] === "console" && parts[1] === "projects" && parts[2] && parts[3] === "jobs") {
    const project = parts[2];
    if (parts.length === 4) return <JobsPage project={project} url={url} />;
    if (parts.length <= 6) {
      const tab = parts[5] ?? "overview";
      if (["overview", "logs", "json", "trials"].includes(tab)) {
        return <JobPage project={project} id={parts[4]} tab={tab} url={url} />;
      }
    }
  }
  // ["console", "projects", P, "queue"]
  if (parts[0] === "console" && parts[1] === "projects" && parts[2] && parts[3] === "queue") {
    if (parts.length === 4) return <QueuePage project={parts[2]} url={url} />;
  }
  // Clone, and the storage browser (storage.tsx).
  if (parts[0] === "console" && parts[1] === "projects" && parts[2] && parts.length === 4) {
    if (parts[3] === "jobs:new") return <ClonePage project={parts[2]} url={url} />;
    if (parts[3] === "storage") return <BucketsPage project={parts[2]} />;
  }
  if (parts[0] === "console" && parts[1] === "storage") {
    if (parts[2]) return <ObjectsPage url={url} />;
    return <BucketsPage project={url.searchParams.get("project") ?? "default"} />;
  }
  return (
    <section class="page">
      <h1>Not found</h1>
      <p>
        The console has no page at <code>{url.pathname}</code>. Go to the{" "}
        <a href="/console/">jobs</a>.
      </p>
    </section>
  );
}

// The header's links to the project's pages (keyboard users reach them first, after the skip
// link and the brand).
function MainNav() {
  const url = useLocation();
  const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  const project =
    parts[1] === "projects" && parts[2] ? parts[2] : (url.searchParams.get("project") ?? "default");
  const p = `/console/projects/${encodeURIComponent(project)}`;
  const on = (page: string) => (parts[1] === "projects" && parts[3] === page ? "on" : "");
  return (
    <>
      <a href={`${p}/jobs`} id="nav-jobs" class={on("jobs")}>
        Jobs
      </a>
      <a href={`${p}/queue`} id="nav-queue-top" class={on("queue")}>
        Queue
      </a>
      <a href={`${p}/storage`} id="nav-storage" class={on("storage")}>
        Storage
      </a>
    </>
  );
}

const root = document.getElementById("app");
if (root) {
  root.textContent = "";
  render(<App />, root);
}
const nav = document.getElementById("main-nav");
if (nav) render(<MainNav />, nav);
const bar = document.getElementById("session-bar");
if (bar) render(<SessionBar />, bar);
