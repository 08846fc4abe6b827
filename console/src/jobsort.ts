// The Jobs page's sort: the URL's `sort` (a column key, "-" in front for descending) and the
// API's orderBy that makes the daemon sort every job of the listing (docs/api.md, a Trainyard
// extension), so each page continues the order of the one before.

// The columns the daemon can order by (orderBy's fields), by their key in the URL.
export const SORTABLE = ["jobId", "state", "createTime", "startTime", "endTime"] as const;
export type SortKey = (typeof SORTABLE)[number];

export interface Sort {
  key: SortKey;
  desc: boolean;
}

// The sort a URL's `sort` names; null for none, or for a key the daemon cannot order by (an old
// link's "duration"): the listing's own order, newest first.
export function parseSort(sort: string): Sort | null {
  const desc = sort.startsWith("-");
  const key = desc ? sort.slice(1) : sort;
  return (SORTABLE as readonly string[]).includes(key) ? { key: key as SortKey, desc } : null;
}

// The API's orderBy for a URL's `sort` ("" = none).
export function orderByOf(sort: string): string {
  const s = parseSort(sort);
  return s ? s.key + (s.desc ? " desc" : "") : "";
}

// The URL's `sort` after a click on `key`'s header: ascending first, then descending, then
// ascending again.
export function nextSort(sort: string, key: SortKey): string {
  const s = parseSort(sort);
  return s && s.key === key && !s.desc ? `-${key}` : key;
}
