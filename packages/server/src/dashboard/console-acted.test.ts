import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { diagnostics } from '../core/diagnostics.js';
import type { Broker } from '../engines/types.js';
import { ConsoleTap } from './console-tap.js';

const log = pino({ level: 'silent' });
const AT = 1_700_000_000_000;
const quiet: Broker = { publish: (events) => events.map(() => undefined), subscribe: () => () => {}, close: () => {} };
const taps: ConsoleTap[] = [];
afterEach(async () => {
  for (const tap of taps.splice(0)) await tap.close();
});

describe('the console shows what the app server did to users', () => {
  it('a disconnect and revocations (of a user, of the whole app), for the watched app of this node only', async () => {
    const tap = new ConsoleTap({ node: 'n1', broker: quiet, log, now: () => AT });
    taps.push(tap);
    await tap.start();
    const seen: string[] = [];
    await tap.open('app1', { filter: {}, deliver: (_entry, json) => seen.push(json), end: () => {} });
    diagnostics.acted.publish({ node: 'n1', app: 'app1', action: 'disconnect', user: 'ann' });
    diagnostics.acted.publish({ node: 'n1', app: 'app1', action: 'revoke', user: 'ann', before: 5 });
    diagnostics.acted.publish({ node: 'n1', app: 'app1', action: 'revoke', user: undefined, before: 6 });
    diagnostics.acted.publish({ node: 'n1', app: 'app2', action: 'disconnect', user: 'bob' });
    diagnostics.acted.publish({ node: 'n2', app: 'app1', action: 'disconnect', user: 'cat' });
    expect(seen.map((json) => JSON.parse(json))).toEqual([
      { at: AT, kind: 'disconnect', user: 'ann' },
      { at: AT, kind: 'revoke', user: 'ann', data: '{"before":5}' },
      { at: AT, kind: 'revoke', data: '{"before":6}' },
    ]);
  });
});
