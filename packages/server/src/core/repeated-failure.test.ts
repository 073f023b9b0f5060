import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { RepeatedFailure } from './repeated-failure.js';

/** A logger whose lines the test reads. */
function recording() {
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { level: 'info' },
    { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { log, lines };
}

describe('RepeatedFailure', () => {
  it('logs the first failure, then one line per period with how many were left out, then the recovery', () => {
    const { log, lines } = recording();
    const clock = { at: 0 };
    const failure = new RepeatedFailure(log, 'reading due webhook batches failed', {
      everyMs: 1000,
      now: () => clock.at,
    });
    failure.failed(new Error('down'));
    for (let t = 250; t < 1000; t += 250) {
      clock.at = t;
      failure.failed(new Error('down'));
    }
    expect(lines.map((l) => l.msg)).toEqual(['reading due webhook batches failed']);
    clock.at = 1000;
    failure.failed(new Error('down'));
    expect(lines[1]).toMatchObject({ msg: 'reading due webhook batches failed (still)', repeated: 4, sinceMs: 1000 });
    clock.at = 1500;
    failure.succeeded();
    expect(lines[2]).toMatchObject({ msg: 'reading due webhook batches failed: works again', failedForMs: 1500 });
    failure.succeeded();
    // A new failure after the recovery is logged at once.
    clock.at = 1600;
    failure.failed(new Error('down again'));
    expect(lines.map((l) => l.msg)).toEqual([
      'reading due webhook batches failed',
      'reading due webhook batches failed (still)',
      'reading due webhook batches failed: works again',
      'reading due webhook batches failed',
    ]);
  });
});
