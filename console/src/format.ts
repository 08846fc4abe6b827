// Times in the viewer's time zone (UTC on hover), durations, badges.

export function localTime(rfc3339?: string): string {
  if (!rfc3339) return "";
  const d = new Date(rfc3339);
  if (isNaN(d.getTime())) return rfc3339;
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  return (
    `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
  );
}

// The hover text of a local time: the same instant in UTC ("2026-11-24 19:57:09 UTC").
export function utcTitle(rfc3339?: string): string {
  if (!rfc3339) return "";
  const d = new Date(rfc3339);
  if (isNaN(d.getTime())) return rfc3339;
  return d.toISOString().slice(0, 19).replace("T", " ") + " UTC";
}

export function clockTime(rfc3339: string): string {
  const d = new Date(rfc3339);
  if (isNaN(d.getTime())) return rfc3339;
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

export function duration(start?: string, end?: string, now = Date.now()): string {
  if (!start) return "";
  const a = new Date(start).getTime();
  const b = end ? new Date(end).getTime() : now;
  if (isNaN(a) || isNaN(b)) return "";
  let s = Math.max(0, Math.round((b - a) / 1000));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (h) return `${h} h ${m} min`;
  if (m) return `${m} min ${s} s`;
  return `${s} s`;
}

export function fmtCount(n: number): string {
  return n.toLocaleString("en-US");
}
