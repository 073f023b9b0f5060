import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { diagnostics } from '../core/diagnostics.js';
import { UserPresence } from '../core/user-presence.js';
import { MemoryFanout } from '../engines/memory/fanout.js';
import { MemoryPresenceStore } from '../engines/memory/presence.js';
import type { Broker, StoredBatch } from '../engines/types.js';
import type { ConsoleFilter } from './console-entry.js';
import { ConsoleTap } from './console-tap.js';

const log = pino({ level: 'silent' });
const AT = 1_700_000_000_000;

/** A broker that takes every publish and delivers nothing: the tap hears only itself. */
const quiet: Broker = { publish: (events) => events.map(() => undefined), subscribe: () => () => {}, close: () => {} };

const taps: ConsoleTap[] = [];
afterEach(async () => {
  for (const tap of taps.splice(0)) await tap.close();
  vi.useRealTimers();
});

/** A started tap of node n1 with one console open on `app`: the JSON texts it was handed. */
async function watching(app: string, filter: ConsoleFilter = {}) {
  const tap = new ConsoleTap({ node: 'n1', broker: quiet, log, now: () => AT });
  taps.push(tap);
  await tap.start();
  const seen: string[] = [];
  const close = await tap.open(app, { filter, deliver: (_entry, json) => seen.push(json), end: () => {} });
  return { tap, seen, close, entries: () => seen.map((json) => JSON.parse(json) as Record<string, unknown>) };
}

const channels = Object.values(diagnostics);

/** Brokers of one process over one memory fan-out; one that is `dead` publishes nothing more. */
const over = (fanout: MemoryFanout) => (): Broker & { dead: boolean } => {
  const broker = {
    dead: false,
    publish: (events: Parameters<Broker['publish']>[0]) => {
      if (!broker.dead) for (const event of events) fanout.publish(event);
      return events.map(() => undefined);
    },
    subscribe: (topic: string, handler: Parameters<Broker['subscribe']>[1]) => fanout.subscribe(topic, handler),
    close: () => {},
  };
  return broker;
};

describe('the console listens on the diagnostics channels', () => {
  it('only while a console watches an app: a node without one leaves every channel unheard', async () => {
    expect(channels.filter((c) => c.hasSubscribers)).toEqual([]);
    const { close } = await watching('app1');
    expect(channels.filter((c) => !c.hasSubscribers)).toEqual([]);
    await close();
    expect(channels.filter((c) => c.hasSubscribers)).toEqual([]);
  });

  it("listens on a node without a console while another node's console watches, until that one closes", async () => {
    const via = over(new MemoryFanout());
    const a = new ConsoleTap({ node: 'a', broker: via(), log, now: () => AT });
    const b = new ConsoleTap({ node: 'b', broker: via(), log, now: () => AT });
    taps.push(a, b);
    await a.start();
    await b.start();
    const seen: string[] = [];
    const close = await a.open('app1', { filter: {}, deliver: (_entry, json) => seen.push(json), end: () => {} });
    expect(b.watching('app1')).toBe(true);
    // What happens on b, for app1, goes to a's console.
    diagnostics.sent.publish({ node: 'b', app: 'app1', room: 'r', event: 's', data: '1', from: undefined });
    await vi.waitFor(() => expect(seen).toHaveLength(1), { timeout: 2000, interval: 5 });
    expect(JSON.parse(seen[0] ?? '')).toEqual({ at: AT, kind: 'send', room: 'r', event: 's', data: '1' });
    await close();
    await vi.waitFor(() => expect(b.watching('app1')).toBe(false), { timeout: 2000, interval: 5 });
    expect(channels.filter((c) => c.hasSubscribers)).toEqual([]);
  });

  it('stops listening once the only watch heard was not said again for its time (its node died)', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    let now = AT;
    const via = over(new MemoryFanout());
    const dying = via();
    const a = new ConsoleTap({ node: 'a', broker: dying, log, now: () => now, ttlMs: 200 });
    const b = new ConsoleTap({ node: 'b', broker: via(), log, now: () => now, ttlMs: 200 });
    taps.push(a, b);
    await a.start();
    await b.start();
    await a.open('app1', { filter: {}, deliver: () => {}, end: () => {} });
    expect(b.watching('app1')).toBe(true);
    // a dies: its consoles' watch ends on b after the TTL, and with it b's listening.
    dying.dead = true;
    await a.close();
    expect(diagnostics.sent.hasSubscribers).toBe(true);
    now += 250;
    vi.advanceTimersByTime(100);
    expect(b.watching('app1')).toBe(false);
    expect(channels.filter((c) => c.hasSubscribers)).toEqual([]);
  });

  it('stops listening when the tap closes', async () => {
    const { tap } = await watching('app1');
    expect(diagnostics.emitted.hasSubscribers).toBe(true);
    await tap.close();
    expect(channels.filter((c) => c.hasSubscribers)).toEqual([]);
  });

  it('turns each happening of a watched app on its node into the entry the console shows', async () => {
    const { entries } = await watching('app1');
    const node = 'n1';
    const app = 'app1';
    const batch = { id: 'b_1', events: 2, attempts: 1, state: 'retrying', nextAt: AT + 5000 } as StoredBatch;
    const history = new Map();
    diagnostics.emitted.publish({
      node,
      app,
      events: [{ rooms: ['r1', 'r2'], users: ['ann'], event: 'e', data: `"${'é'.repeat(600)}"`, history }],
    });
    diagnostics.sent.publish({ node, app, room: 'r', event: 's', data: '1', from: 'ann' });
    diagnostics.sent.publish({ node, app, room: 'r', event: 's', data: '2', from: undefined });
    diagnostics.joined.publish({ node, app, room: 'r', user: 'ann' });
    diagnostics.left.publish({ node, app, room: 'r', user: null });
    diagnostics.member.publish({
      node,
      app,
      type: 'member.joined',
      room: 'r',
      member: { user: 'ann', info: { a: 1 } },
    });
    diagnostics.user.publish({ node, app, type: 'user.offline', user: 'ann' });
    diagnostics.asked.publish({ node, app, user: 'ann', event: 'q', data: '{}', refused: undefined });
    diagnostics.asked.publish({ node, app, user: 'bob', event: 'q', data: '{}', refused: 'offline' });
    diagnostics.answered.publish({ node, app, user: 'ann', event: 'q', outcome: 'reply', data: { ok: true } });
    diagnostics.answered.publish({ node, app, user: 'ann', event: 'q', outcome: 'reply', data: undefined });
    diagnostics.answered.publish({ node, app, user: 'ann', event: 'q', outcome: 'declined' });
    diagnostics.answered.publish({ node, app, user: 'ann', event: 'q', outcome: 'timeout' });
    diagnostics.webhook.publish({ node, app, batch, kind: 'scheduled', result: { status: 0, error: 'timeout' } });
    diagnostics.webhook.publish({ node, app, batch, kind: 'resend', result: { status: 200 } });
    diagnostics.refused.publish({ node, app, frame: 'send', room: 'r', user: 'ann', event: 's', code: 'forbidden' });
    diagnostics.refused.publish({ node, app, frame: 'join', room: 'r', user: null, event: undefined, code: 'bad' });
    // Another app, or another node of this process: not this console's.
    diagnostics.sent.publish({ node, app: 'app2', room: 'r', event: 's', data: '3', from: undefined });
    diagnostics.sent.publish({ node: 'n2', app, room: 'r', event: 's', data: '4', from: undefined });

    const cut = `"${'é'.repeat(510)}…`;
    const tried = (kind: string) =>
      JSON.stringify({ batch: 'b_1', events: 2, try: 1, kind, state: 'retrying', next_at: AT + 5000 });
    expect(entries()).toEqual([
      { at: AT, kind: 'emit', room: 'r1', event: 'e', data: cut },
      { at: AT, kind: 'emit', room: 'r2', event: 'e', data: cut },
      { at: AT, kind: 'emit', user: 'ann', event: 'e', data: cut },
      { at: AT, kind: 'send', room: 'r', user: 'ann', event: 's', data: '1' },
      { at: AT, kind: 'send', room: 'r', event: 's', data: '2' },
      { at: AT, kind: 'join', room: 'r', user: 'ann' },
      { at: AT, kind: 'leave', room: 'r' },
      {
        at: AT,
        kind: 'presence',
        room: 'r',
        user: 'ann',
        event: 'member.joined',
        data: '{"user":"ann","info":{"a":1}}',
      },
      { at: AT, kind: 'presence', user: 'ann', event: 'user.offline' },
      { at: AT, kind: 'ask', user: 'ann', event: 'q', data: '{}' },
      { at: AT, kind: 'ask', user: 'bob', event: 'q', data: '{}', error: 'offline' },
      { at: AT, kind: 'reply', user: 'ann', event: 'q', data: '{"ok":true}' },
      { at: AT, kind: 'reply', user: 'ann', event: 'q', data: 'null' },
      { at: AT, kind: 'reply', user: 'ann', event: 'q', error: 'declined' },
      { at: AT, kind: 'reply', user: 'ann', event: 'q', error: 'timeout' },
      { at: AT, kind: 'webhook', data: tried('scheduled'), status: 0, error: 'timeout' },
      { at: AT, kind: 'webhook', data: tried('resend'), status: 200 },
      { at: AT, kind: 'send', room: 'r', error: 'forbidden', user: 'ann', event: 's' },
      { at: AT, kind: 'join', room: 'r', error: 'bad' },
    ]);
  });

  it('keeps the order of fields of every entry, as its JSON text shows them', async () => {
    const { seen } = await watching('app1');
    diagnostics.refused.publish({
      node: 'n1',
      app: 'app1',
      frame: 'send',
      room: 'r',
      user: 'ann',
      event: 's',
      code: 'forbidden',
    });
    expect(seen).toEqual([`{"at":${AT},"kind":"send","room":"r","error":"forbidden","user":"ann","event":"s"}`]);
  });

  it('tells the console of users coming online and going offline, in watched apps only', async () => {
    vi.useFakeTimers({ now: AT, toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    const delay = 1000;
    const { entries } = await watching('watched');
    const presence = new MemoryPresenceStore({ offlineDelayMs: delay });
    const events = { record: async () => {} };
    const users = new UserPresence({ node: 'n1', presence, events, log, now: Date.now, offlineDelayMs: delay });
    users.start();
    try {
      await users.opened('watched', 'fay', 'p1');
      await users.opened('other', 'gus', 'p2');
      await users.closed('watched', 'fay', 'p1');
      await users.closed('other', 'gus', 'p2');
      await vi.advanceTimersByTimeAsync(delay + delay / 10);
    } finally {
      users.close();
    }
    expect(entries().map(({ user, event }) => `${user} ${event}`)).toEqual(['fay user.online', 'fay user.offline']);
  });
});
