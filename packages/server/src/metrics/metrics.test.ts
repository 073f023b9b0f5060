import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { type MetricSources, Metrics } from './metrics.js';

function sources(pages: number): MetricSources {
  return { pages: () => pages, rooms: () => 0, webhooks: () => ({ waiting: 0, oldestWaitingMs: 0, batches: {} }) };
}

/** Node's own `gc()`, turned on for this process (vitest's workers start without --expose-gc). */
function collectGarbage(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe('Metrics', () => {
  it("renders the process's own metrics once and each server's own, for every server of a process", async () => {
    const [one, two] = [new Metrics(sources(1)), new Metrics(sources(2))];
    for (const [metrics, pages] of [
      [one, 1],
      [two, 2],
    ] as const) {
      const { body } = await metrics.render();
      expect(body.match(/^# TYPE nodejs_eventloop_lag_seconds gauge$/gm)).toHaveLength(1);
      expect(body.match(/^# TYPE process_cpu_seconds_total counter$/gm)).toHaveLength(1);
      expect(body).toMatch(new RegExp(`^realtime_pages_open ${pages}$`, 'm'));
    }
  });

  it('keeps nothing of a server once it is dropped (the process metrics hold no server)', async () => {
    const gc = collectGarbage();
    let dropped: WeakRef<MetricSources> | undefined;
    (() => {
      const held = sources(3);
      dropped = new WeakRef(held);
      new Metrics(held);
    })();
    await expect
      .poll(
        async () => {
          // A WeakRef holds its target until the job that made or read it ends.
          await new Promise((resolve) => setImmediate(resolve));
          gc();
          return dropped?.deref() === undefined;
        },
        { timeout: 5_000, interval: 50 },
      )
      .toBe(true);
  });
});
