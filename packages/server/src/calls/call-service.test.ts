import pino, { type Logger } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { failable } from '../../test/service-fakes.js';
import { MemoryEventSink } from '../core/events.js';
import { type LapseHandler, SWEEP_BATCH } from '../core/node-registry.js';
import { MemoryCallStore } from '../engines/memory/calls.js';
import { MemoryLimitStore } from '../engines/memory/limits.js';
import { StoreError } from '../engines/store-error.js';
import type { CallStore } from '../engines/types.js';
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
let log: Logger;

function service(options?: CallOptions, calls: CallStore = new MemoryCallStore()): CallService {
  return new CallService({
    node: 'n1',
    calls,
    nodes: { onLapse: (_what, handler) => lapseHandlers.push(handler) },
    limits: new MemoryLimitStore(),
    signals: pages,
    events,
    log,
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
  log = pino({ level: 'silent' });
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

/** Places a call that rings (fails the test otherwise); its id. */
async function ring(calls: CallService, from: CallPage & { user: string }, to: string): Promise<string> {
  const placed = await calls.place(APP, from, to, ['audio'], undefined);
  if (placed.outcome !== 'placed') throw new Error(`not placed: ${placed.outcome}`);
  return placed.id;
}

describe('a call that rings out', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A call from alice to bob ringing for 20 s, on a started service whose sweep runs on fake timers. */
  async function ringingCall() {
    vi.useFakeTimers();
    const calls = service({ ringMs: 20_000 });
    await calls.start();
    const alice = pages.open('alice');
    const bob = pages.open('bob');
    return { calls, alice, bob, id: await ring(calls, alice, 'bob') };
  }

  it('ends `missed` on the sweep timer once its ring time passed, told to both sides and reported once', async () => {
    const { calls, alice, bob, id } = await ringingCall();
    expect(pages.got(bob, 'call.ring', id)).toHaveLength(1);
    // Not yet: the sweep runs, the ring has time left.
    clock += 19_999;
    await vi.advanceTimersByTimeAsync(2_000);
    expect(callEnded()).toEqual([]);
    clock += 1;
    await vi.advanceTimersByTimeAsync(2_000);
    for (const page of [alice, bob]) {
      expect(pages.got(page, 'call.ended', id)).toEqual([{ t: 'call.ended', call: id, reason: 'missed' }]);
    }
    expect(callEnded().map((e) => e.event)).toEqual([
      expect.objectContaining({ call_id: id, reason: 'missed', answered_at: null, seconds: 0, ended_at: clock }),
    ]);
    // The sweep never ends it twice.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(callEnded()).toHaveLength(1);
    await calls.close();
  });

  it('never ends an answered call, however long it lasts', async () => {
    const { calls, alice, bob, id } = await ringingCall();
    await calls.accept(APP, bob, id);
    clock += 3_600_000;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(callEnded()).toEqual([]);
    expect(await calls.peerOf(APP, alice, id)).toBe(bob.id);
    await calls.close();
  });

  it('a sweep the store fails is logged, and the next sweep ends the call', async () => {
    const failing = failable<CallStore>(new MemoryCallStore());
    const logged = vi.spyOn(log, 'error');
    const calls = service({ ringMs: 20_000 }, failing.store);
    const alice = pages.open('alice');
    const id = await ring(calls, alice, 'bob');
    clock += 20_000;
    failing.fail('takeMissed', 1);
    await expect(calls.sweep()).resolves.toBeUndefined();
    expect(logged).toHaveBeenCalledWith(expect.anything(), 'ending the calls that rang out failed');
    expect(callEnded()).toEqual([]);
    await calls.sweep();
    expect(pages.got(alice, 'call.ended', id).map((f) => f.reason)).toEqual(['missed']);
  });
});

describe('placing, answering and ending', () => {
  it('a callee in a call answers busy: reported `busy` at once, nothing rings; a caller in a call is told in_call, unreported', async () => {
    const calls = service();
    const alice = pages.open('alice');
    const bob = pages.open('bob');
    const carol = pages.open('carol');
    await ring(calls, alice, 'bob');
    const busy = await calls.place(APP, carol, 'bob', ['video'], 'sales');
    expect(busy).toMatchObject({ outcome: 'busy' });
    expect(pages.got(bob, 'call.ring')).toHaveLength(1);
    expect(callEnded().map((e) => e.event)).toEqual([
      expect.objectContaining({ call: 'sales', from: 'carol', to: 'bob', media: ['video'], reason: 'busy' }),
    ]);
    expect(await calls.place(APP, alice, 'carol', ['audio'], undefined)).toMatchObject({ outcome: 'in_call' });
    expect(callEnded()).toHaveLength(1);
    expect(pages.got(carol, 'call.ring')).toEqual([]);
  });

  it('only a page of the callee may accept, once; the caller hears call.answered', async () => {
    const calls = service();
    const alice = pages.open('alice');
    const bob = pages.open('bob');
    const id = await ring(calls, alice, 'bob');
    expect(await calls.accept(APP, alice, id)).toBeUndefined();
    expect(await calls.accept(APP, pages.open('mallory'), id)).toBeUndefined();
    expect(await calls.accept(APP, bob, 'call_none')).toBeUndefined();
    clock += 1_500;
    expect(await calls.accept(APP, bob, id)).toMatchObject({ id, toPage: bob.id, answeredAt: clock });
    expect(pages.got(alice, 'call.answered')).toEqual([{ t: 'call.answered', call: id }]);
    expect(await calls.accept(APP, pages.open('bob'), id)).toBeUndefined();
    expect(await calls.peerOf(APP, bob, id)).toBe(alice.id);
    expect(await calls.peerOf(APP, pages.open('carol'), id)).toBeUndefined();
  });

  it('ends `completed` with the whole seconds since the answer; a stranger cannot end it', async () => {
    const calls = service();
    const alice = pages.open('alice');
    const bob = pages.open('bob');
    const id = await ring(calls, alice, 'bob');
    clock += 2_000;
    await calls.accept(APP, bob, id);
    clock += 42_900;
    expect(await calls.hangup(APP, pages.open('eve'), id, 'hangup')).toBe(false);
    // Rejecting is for a call that rings.
    expect(await calls.hangup(APP, bob, id, 'reject')).toBe(false);
    expect(await calls.hangup(APP, bob, id, 'hangup')).toBe(true);
    expect(callEnded().map((e) => e.event)).toEqual([
      expect.objectContaining({ reason: 'completed', answered_at: clock - 42_900, ended_at: clock, seconds: 42 }),
    ]);
    expect(await calls.hangup(APP, bob, id, 'hangup')).toBe(false);
  });

  it('a callee page that rejects hears `rejected`, the caller too, their other pages `elsewhere`; the caller cannot reject', async () => {
    const calls = service();
    const alice = pages.open('alice');
    const phone = pages.open('bob');
    const laptop = pages.open('bob');
    const id = await ring(calls, alice, 'bob');
    expect(await calls.hangup(APP, alice, id, 'reject')).toBe(false);
    expect(await calls.hangup(APP, phone, id, 'reject')).toBe(true);
    expect(pages.got(phone, 'call.ended', id).map((f) => f.reason)).toEqual(['rejected']);
    expect(pages.got(alice, 'call.ended', id).map((f) => f.reason)).toEqual(['rejected']);
    expect(pages.got(laptop, 'call.ended', id).map((f) => f.reason)).toEqual(['elsewhere']);
    expect(callEnded().map((e) => e.event)).toEqual([expect.objectContaining({ reason: 'rejected' })]);
  });

  it('a page that closes ends its calls `failed`; one that hung up first has none left', async () => {
    const calls = service();
    const alice = pages.open('alice');
    const bob = pages.open('bob');
    const id = await ring(calls, alice, 'bob');
    await calls.accept(APP, bob, id);
    await calls.pageClosed(APP, bob);
    expect(pages.got(alice, 'call.ended', id).map((f) => f.reason)).toEqual(['failed']);
    await calls.pageClosed(APP, alice);
    expect(callEnded().map((e) => e.event.type === 'call.ended' && e.event.reason)).toEqual(['failed']);
    // A callee's page that only rang takes nothing with it.
    const carol = pages.open('carol');
    const dave = pages.open('dave');
    const other = await ring(calls, carol, 'dave');
    await calls.pageClosed(APP, dave);
    expect(await calls.peerOf(APP, carol, other)).toBeUndefined();
    expect(await calls.accept(APP, pages.open('dave'), other)).toBeDefined();
  });

  it("a ring that reaches nowhere ends the call `failed` and rejects with the broker's error", async () => {
    const calls = new CallService({
      node: 'n1',
      calls: new MemoryCallStore(),
      nodes: { onLapse: (_what, handler) => lapseHandlers.push(handler) },
      limits: new MemoryLimitStore(),
      signals: {
        toPage: (...args) => pages.toPage(...args),
        toUser: async () => {
          throw new StoreError('unavailable');
        },
      },
      events,
      log,
      now: () => clock,
    });
    const alice = pages.open('alice');
    await expect(calls.place(APP, alice, 'bob', ['audio'], undefined)).rejects.toBeInstanceOf(StoreError);
    expect(callEnded().map((e) => e.event)).toEqual([expect.objectContaining({ from: 'alice', reason: 'failed' })]);
    expect(pages.got(alice, 'call.ended').map((f) => f.reason)).toEqual(['failed']);
  });

  it('a call the store could not place rejects with its StoreError: nothing rings, nothing is reported', async () => {
    const failing = failable<CallStore>(new MemoryCallStore());
    const calls = service(undefined, failing.store);
    const alice = pages.open('alice');
    const bob = pages.open('bob');
    failing.fail('place');
    await expect(calls.place(APP, alice, 'bob', ['audio'], undefined)).rejects.toBeInstanceOf(StoreError);
    expect(pages.got(bob, 'call.ring')).toEqual([]);
    expect(callEnded()).toEqual([]);
  });

  it('a call.ended the events store could not keep is logged; the call ends all the same', async () => {
    const logged = vi.spyOn(log, 'error');
    const calls = new CallService({
      node: 'n1',
      calls: new MemoryCallStore(),
      nodes: { onLapse: (_what, handler) => lapseHandlers.push(handler) },
      limits: new MemoryLimitStore(),
      signals: pages,
      events: {
        record: () => Promise.reject(new StoreError('unavailable')),
        reportOf: () => undefined,
        reported: () => {},
      },
      log,
      now: () => clock,
    });
    const alice = pages.open('alice');
    const bob = pages.open('bob');
    const id = await ring(calls, alice, 'bob');
    expect(await calls.hangup(APP, alice, id, 'hangup')).toBe(true);
    expect(pages.got(bob, 'call.ended', id).map((f) => f.reason)).toEqual(['cancelled']);
    expect(logged).toHaveBeenCalledWith(expect.objectContaining({ call: id }), 'recording call.ended failed');
  });
});

describe("a dead node's calls", () => {
  it("end `failed` through the registry's lapse handler (answered ones: above); other nodes' calls stay", async () => {
    const calls = service();
    const alice = pages.open('alice');
    const bob = pages.open('bob');
    const ringing = await ring(calls, alice, 'bob');
    // A call between pages of another node.
    const carol = { id: 'n2.1', user: 'carol', send: () => {} };
    const far = await ring(calls, carol, 'dave');
    expect(lapseHandlers).toHaveLength(1);
    expect(await lapseHandlers[0]?.({ node: 'n1', lapse: 1 })).toBe('done');
    for (const page of [alice, bob])
      expect(pages.got(page, 'call.ended', ringing).map((f) => f.reason)).toEqual(['failed']);
    expect(callEnded().map((e) => e.event)).toEqual([expect.objectContaining({ call_id: ringing, reason: 'failed' })]);
    expect(await calls.peerOf(APP, alice, ringing)).toBeUndefined();
    expect(await calls.hangup(APP, carol, far, 'hangup')).toBe(true);
  });

  it("answer 'more' while a batch was full", async () => {
    const calls = service({
      invites: { perCaller: { perMinute: 1000, burst: 1000 }, perCallee: { perMinute: 1000, burst: 1000 } },
    });
    for (let i = 0; i <= SWEEP_BATCH; i++) await ring(calls, pages.open(`a${i}`), `b${i}`);
    expect(await lapseHandlers[0]?.({ node: 'n1', lapse: 1 })).toBe('more');
    expect(await lapseHandlers[0]?.({ node: 'n1', lapse: 1 })).toBe('done');
    expect(callEnded()).toHaveLength(SWEEP_BATCH + 1);
  });
});
