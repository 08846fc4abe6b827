// A small history-API router: every view state that matters lives in the URL.
import { useEffect, useState } from "preact/hooks";

const listeners = new Set<() => void>();

export function navigate(url: string, replace = false): void {
  if (url === location.pathname + location.search + location.hash) return;
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  listeners.forEach((l) => l());
}

window.addEventListener("popstate", () => listeners.forEach((l) => l()));

// Re-renders the caller whenever the URL changes.
export function useLocation(): URL {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((t) => t + 1);
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  }, []);
  return new URL(location.href);
}

// Client-side navigation for plain same-origin links (modifier clicks open new tabs as usual).
document.addEventListener("click", (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) {
    return;
  }
  const a = (e.target as Element | null)?.closest?.("a");
  if (!a || a.target || a.hasAttribute("download")) return;
  const href = a.getAttribute("href");
  if (!href || !href.startsWith("/console/")) return;
  e.preventDefault();
  navigate(href);
});

export function withParams(url: URL, changes: Record<string, string | null>): string {
  const u = new URL(url.href);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === "") u.searchParams.delete(k);
    else u.searchParams.set(k, v);
  }
  return u.pathname + u.search;
}
