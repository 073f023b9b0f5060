import pino from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryEventSink } from '../core/events.js';
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

function service(options?: CallOptions): CallService {
  return new CallService({
    node: 'n1',
    calls: new MemoryCallStore(),
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
    // The service never took its lease (no start): the sweep finds every call's node lapsed.
    await calls.sweep();
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
