import { compareNames } from '../name-order.js';
import type { NameRange } from '../types.js';

/**
 * The names each app has now (its online users, its occupied rooms), so a listing reads one app's
 * names only and keeps the first `limit` in code point order without sorting them all.
 */
export class NameIndex {
  readonly #byApp = new Map<string, Set<string>>();

  add(app: string, name: string): void {
    let names = this.#byApp.get(app);
    if (!names) {
      names = new Set();
      this.#byApp.set(app, names);
    }
    names.add(name);
  }

  remove(app: string, name: string): void {
    const names = this.#byApp.get(app);
    if (!names?.delete(name) || names.size > 0) return;
    this.#byApp.delete(app);
  }

  /** The first `range.limit` names of the range, in order, and whether more follow. */
  list(app: string, range: NameRange): { names: string[]; more: boolean } {
    const limit = Math.max(1, Math.floor(range.limit));
    const { after, prefix = '' } = range;
    // Sorted, at most limit + 1 long: the one past the limit only says that more follow.
    const best: string[] = [];
    for (const name of this.#byApp.get(app) ?? []) {
      if (!name.startsWith(prefix)) continue;
      if (after !== undefined && compareNames(name, after) <= 0) continue;
      if (best.length > limit && compareNames(name, best[limit] as string) >= 0) continue;
      let low = 0;
      let high = best.length;
      while (low < high) {
        const mid = (low + high) >>> 1;
        if (compareNames(best[mid] as string, name) < 0) low = mid + 1;
        else high = mid;
      }
      best.splice(low, 0, name);
      if (best.length > limit + 1) best.pop();
    }
    const more = best.length > limit;
    if (more) best.pop();
    return { names: best, more };
  }

  clear(): void {
    this.#byApp.clear();
  }
}
