/**
 * What group calls and live streams share in their Redis stores: a node's record of one page in one
 * group or stream (`["<app>","<group or stream>","<page>"]`, kept under the node's tag), and a cap as
 * the scripts compare it.
 */

/** A node's record of one page in one group or stream. */
export function pageRecord(app: string, scope: string, page: string): string {
  return JSON.stringify([app, scope, page]);
}

/** The app, group or stream, and page of a record; undefined for anything else (dropped). */
export function fromPageRecord(name: string): [string, string, string] | undefined {
  try {
    const parsed = JSON.parse(name) as unknown;
    if (Array.isArray(parsed) && parsed.length === 3 && parsed.every((part) => typeof part === 'string')) {
      return parsed as [string, string, string];
    }
  } catch {
    // Not one of ours: dropped.
  }
  return undefined;
}

/** A cap as Lua compares it: a whole number (Infinity and NaN are no numbers there). */
export function capOf(max: number): number {
  if (Number.isNaN(max)) return 0;
  return Number.isFinite(max) ? Math.ceil(max) : max > 0 ? Number.MAX_SAFE_INTEGER : 0;
}
