import pino from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryEventSink } from '../core/events.js';
import type { LapseHandler } from '../core/node-registry.js';
import { MemoryCallStore } from '../engines/memory/calls.js';
import { MemoryLimitStore } from '../engines/memory/limits.js';
import { type CallPage, CallService } from './call-service.js';
import type { CallOptions } from './options.js';

const APP = 'app1';
type Frame = { t: string; call?: string; reason?: string };

/** Pages of users on one node, as PageSignals reaches them: each page keeps the frames it got. */
class FakePages {
  readonly #frames = new Map<string, Frame[]>();
  readonly #users = new Map<string, Set<string>>();
  #next = 0;

  open(user: string): CallPage & { user: string } {
    const id = `n1.${++this.#next}`;
    this.#frames.set(id, []);
    const ids = this.#users.get(user) ?? new Set<string>();
    ids.add(id);
    this.#users.set(user, ids);
    return { id, user, send: (frame) => this.#frames.get(id)?.push(frame as Frame) };
  }

  async toPage(_app: string, page: string, frame: object): Promise<void> {
    this.#frames.get(page)?.push(frame as Frame);
  }

  async toUser(_app: string, user: string, frame: object, except?: string): Promise<void> {
    for (const id of this.#users.get(user) ?? []) if (id !== except) this.#frames.get(id)?.push(frame as Frame);
  }

  got(page: CallPage, t: string, call?: string): Frame[] {
    return (this.#frames.get(page.id) ?? []).filter((f) => f.t === t && (call === undefined || f.call === call));
  }
}

let clock: number;
let pages: FakePages;
let events: MemoryEventSink;
/** What the services registered with the node registry for a dead node. */
let lapseHandlers: LapseHandler[];

function service(options?: CallOptions): CallService {
  return new CallService({
    node: 'n1',
    calls: new MemoryCallStore(),
    nodes: { onLapse: (_what, handler) => lapseHandlers.push(handler) },
    limits: new MemoryLimitStore(),
    signals: pages,
    events,
    log: pino({ level: 'silent' }),
    now: () => clock,
    ...(options === undefined ? {} : { options }),
  });
}

const callEnded = () => events.events.filter((e) => e.event.type === 'call.ended');

beforeEach(() => {
  clock = 1_800_000_000_000;
  pages = new FakePages();
  events = new MemoryEventSink();
  lapseHandlers = [];
});

describe('invites are bounded per caller and per callee', () => {
  /** The loop of the report: invite, hang up at once, again, with one valid call token. */
  async function ringAndHangUp(calls: CallService, from: CallPage & { user: string }, to: string, times: number) {
    const outcomes = [];
    for (let i = 0; i < times; i++) {
      const placed = await calls.place(APP, from, to, ['audio'], undefined);
      outcomes.push(placed);
      if (placed.outcome === 'placed') expect(await calls.hangup(APP, from, placed.id, 'hangup')).toBe(true);
    }
    return outcomes;
  }

  it('a caller looping invite and hang-up rings the callee `burst` times, then is refused until the bucket refills', async () => {
    const calls = service({ invites: { perCaller: { perMinute: 6, burst: 3 } } });
    const alice = pages.open('alice');
    const bob = pages.open('bob');
    const outcomes = await ringAndHangUp(calls, alice, 'bob', 20);
    expect(outcomes.filter((o) => o.outcome === 'placed')).toHaveLength(3);
    const refused = outcomes.slice(3);
    for (const o of refused) {
      // One token every 10 s (6 a minute): the first comes back 10 s after the bucket emptied.
      expect(o).toEqual({ outcome: 'limited', limit: 'perCaller', rate: { perMinute: 6, burst: 3 }, retryMs: 10_000 });
    }
    expect(pages.got(bob, 'call.ring')).toHaveLength(3);
    expect(callEnded()).toHaveLength(3);

    clock += 9_999;
    expect(await calls.place(APP, alice, 'bob', ['audio'], undefined)).toMatchObject({
      outcome: 'limited',
      retryMs: 1,
    });
    clock += 1;
    const again = await ringAndHangUp(calls, alice, 'bob', 2);
    expect(again.map((o) => o.outcome)).toEqual(['placed', 'limited']);
    expect(pages.got(bob, 'call.ring')).toHaveLength(4);
  });

  it('bounds the calls one callee gets from everyone, and leaves other callees and callers alone', async () => {
    const calls = service({ invites: { perCallee: { perMinute: 2, burst: 2 } } });
    const bob = pages.open('bob');
    const carol = pages.open('carol');
    const outcomes = [];
    for (const user of ['u1', 'u2', 'u3', 'u4']) {
      outcomes.push(...(await ringAndHangUp(calls, pages.open(user), 'bob', 1)));
    }
    expect(outcomes.map((o) => o.outcome)).toEqual(['placed', 'placed', 'limited', 'limited']);
    expect(outcomes[2]).toEqual({
      outcome: 'limited',
      limit: 'perCallee',
      rate: { perMinute: 2, burst: 2 },
      retryMs: 30_000,
    });
    expect(pages.got(bob, 'call.ring')).toHaveLength(2);
    // u3 was refused for bob's sake, not its own: it may call carol.
    const u3 = pages.open('u3');
    expect((await ringAndHangUp(calls, u3, 'carol', 1))[0]?.outcome).toBe('placed');
    expect(pages.got(carol, 'call.ring')).toHaveLength(1);
  });

  it('counts a call to a busy callee (it is reported too) and bounds by default', async () => {
    const calls = service();
    const alice = pages.open('alice');
    const bob = pages.open('bob');
    const carol = pages.open('carol');
    // carol is in a call with dave: alice's calls to her end busy, each reported.
    expect((await calls.place(APP, carol, 'dave', ['audio'], undefined)).outcome).toBe('placed');
    const outcomes = [];
    for (let i = 0; i < 8; i++) outcomes.push((await calls.place(APP, alice, 'carol', ['audio'], undefined)).outcome);
    expect(outcomes).toEqual(['busy', 'busy', 'busy', 'busy', 'busy', 'limited', 'limited', 'limited']);
    expect(await calls.place(APP, alice, 'bob', ['audio'], undefined)).toMatchObject({
      outcome: 'limited',
      limit: 'perCaller',
      rate: { perMinute: 10, burst: 5 },
    });
    expect(pages.got(bob, 'call.ring')).toHaveLength(0);
    // Callees by default: 10 at once from anyone.
    const callee = [];
    for (let i = 0; i < 12; i++) {
      const from = pages.open(`caller${i}`);
      const placed = await calls.place(APP, from, 'bob', ['audio'], undefined);
      callee.push(placed.outcome);
      if (placed.outcome === 'placed') await calls.hangup(APP, from, placed.id, 'hangup');
    }
    expect(callee.filter((o) => o === 'placed')).toHaveLength(10);
    expect(callee.slice(10)).toEqual(['limited', 'limited']);
  });
});

describe('call.ended reaches each page of the call once', () => {
  it('a callee page that stopped ringing (elsewhere) hears nothing at the hang-up, nor one opened after the answer', async () => {
    const calls = service();
    const alice = pages.open('alice');
    const phone = pages.open('bob');
    const laptop = pages.open('bob');
    const placed = await calls.place(APP, alice, 'bob', ['audio'], undefined);
    if (placed.outcome !== 'placed') throw new Error(`not placed: ${placed.outcome}`);
    const call = placed.id;
    expect(await calls.accept(APP, laptop, call)).toBeDefined();
    const tablet = pages.open('bob');
    await calls.ringing(APP, tablet);
    expect(await calls.hangup(APP, alice, call, 'hangup')).toBe(true);
    expect(pages.got(phone, 'call.ended', call)).toEqual([{ t: 'call.ended', call, reason: 'elsewhere' }]);
    expect(pages.got(laptop, 'call.ended', call)).toEqual([{ t: 'call.ended', call, reason: 'completed' }]);
    expect(pages.got(alice, 'call.ended', call)).toEqual([{ t: 'call.ended', call, reason: 'completed' }]);
    expect(pages.got(tablet, 'call.ring')).toEqual([]);
    expect(pages.got(tablet, 'call.ended')).toEqual([]);
    expect(callEnded()).toHaveLength(1);
  });

  it('the same when an answered call ends by the sweep (its node lapsed)', async () => {
    const calls = service();
    const alice = pages.open('alice');
    const phone = pages.open('bob');
    const laptop = pages.open('bob');
    const placed = await calls.place(APP, alice, 'bob', ['audio'], undefined);
    if (placed.outcome !== 'placed') throw new Error(`not placed: ${placed.outcome}`);
    await calls.accept(APP, laptop, placed.id);
    // The registry claimed this node as dead (it was paused past its lease).
    for (const handler of lapseHandlers) expect(await handler({ node: 'n1', lapse: 1 })).toBe('done');
    expect(pages.got(phone, 'call.ended', placed.id).map((f) => f.reason)).toEqual(['elsewhere']);
    expect(pages.got(laptop, 'call.ended', placed.id).map((f) => f.reason)).toEqual(['failed']);
    expect(pages.got(alice, 'call.ended', placed.id).map((f) => f.reason)).toEqual(['failed']);
  });

  it('every callee page still ringing hears how the call ended', async () => {
    const calls = service();
    const alice = pages.open('alice');
    const phone = pages.open('bob');
    const laptop = pages.open('bob');
    const placed = await calls.place(APP, alice, 'bob', ['audio'], undefined);
    if (placed.outcome !== 'placed') throw new Error(`not placed: ${placed.outcome}`);
    await calls.hangup(APP, alice, placed.id, 'hangup');
    for (const page of [alice, phone, laptop]) {
      expect(pages.got(page, 'call.ended', placed.id).map((f) => f.reason)).toEqual(['cancelled']);
    }
  });
});
