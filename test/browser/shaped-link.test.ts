/**
 * The shaped-link harness: the links themselves (several at once, their rates, what a dead run
 * left). Chromium behind shaped links: ./adaptive-layers.test.ts.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { canShape, ownLeftovers, shapedLinks } from './shaped-link.js';

const shaping = canShape();
/** What a page in a namespace fetches: about 1 s at 1.5 Mbit/s. */
const BODY_BYTES = 200_000;

/** Runs `script` with this Node inside `namespace` and gives what it printed (bounded). */
function nodeIn(namespace: string, script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'ip',
      ['netns', 'exec', namespace, process.execPath, '-e', script],
      { timeout: 15_000, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}: ${stderr}`)) : resolve(stdout)),
    );
  });
}

describe.skipIf(!shaping.ok)('shaped links without a browser', () => {
  it("a dead run is cleaned up; two links reach the first one's address, each at its own rate; closing twice leaves nothing", async () => {
    // A namespace named as a run of a process that has ended left it.
    const dead = spawnSync(process.execPath, ['-e', ''], { timeout: 10_000 }).pid;
    const stale = `rtshape-${dead}-1`;
    await new Promise<void>((resolve, reject) =>
      execFile('ip', ['netns', 'add', stale], { timeout: 5_000 }, (error) => (error ? reject(error) : resolve())),
    );

    const links = await shapedLinks(2);
    const server = createServer((_req, res) => res.end(Buffer.alloc(BODY_BYTES, 1)));
    try {
      const names = await new Promise<string>((resolve, reject) =>
        execFile('ip', ['netns', 'list'], { timeout: 5_000 }, (error, stdout) =>
          error ? reject(error) : resolve(stdout),
        ),
      );
      expect(names).not.toContain(stale);

      const [first, second] = links.links;
      if (!first || !second) throw new Error('two links');
      expect(links.address).toBe(first.outer);
      expect(new Set(links.links.map((link) => link.outer.split('.')[2])).size).toBe(2);
      for (const link of links.links) expect(link.inner).toMatch(/^10\.231\.\d+\.2$/);

      await new Promise<void>((resolve) => server.listen(0, links.address, resolve));
      const url = `http://${links.address}:${(server.address() as AddressInfo).port}/`;
      // The time (ms) a page in the namespace takes to fetch the body from the address.
      const fetchMs = async (namespace: string) =>
        Number(
          await nodeIn(
            namespace,
            `const t = performance.now(); fetch(${JSON.stringify(url)}).then((r) => r.arrayBuffer()).then((b) => { if (b.byteLength !== ${BODY_BYTES}) process.exit(1); console.log(performance.now() - t); });`,
          ),
        );

      // The second link at 1.5 Mbit/s takes about as long as its rate says; the first, unshaped, less.
      await second.rate(1_500);
      const shapedMs = await fetchMs(second.namespace);
      const openMs = await fetchMs(first.namespace);
      const atRateMs = (BODY_BYTES * 8) / 1_500;
      console.info(
        `${BODY_BYTES} bytes: ${shapedMs.toFixed(0)} ms at 1.5 Mbit/s (rate says ${atRateMs.toFixed(0)}), ${openMs.toFixed(0)} ms unshaped`,
      );
      expect(shapedMs).toBeGreaterThan(0.8 * atRateMs);
      expect(openMs).toBeLessThan(shapedMs);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await links.close();
    }
    await links.close();
    expect(await ownLeftovers()).toEqual([]);
  });
});
