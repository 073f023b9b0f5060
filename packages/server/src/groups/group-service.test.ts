import { GROUP_UNIT_FROM } from '@realtime/protocol';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeLapses, FakeSignals, FakeUnits, failable, recordingEvents, silentLog } from '../../test/service-fakes.js';
import { SWEEP_BATCH } from '../core/node-registry.js';
import { MemoryGroupStore } from '../engines/memory/groups.js';
import { StoreError } from '../engines/store-error.js';
import type { GroupMember, GroupStore } from '../engines/types.js';
import { UnitLimitError } from '../units/unit-budget.js';
import { GroupService } from './group-service.js';

const APP = 'app1';
const T0 = 1_800_000_000_000;

let clock: number;
let signals: FakeSignals;
let lapses: FakeLapses;
let events: ReturnType<typeof recordingEvents>;

beforeEach(() => {
  clock = T0;
  signals = new FakeSignals();
  lapses = new FakeLapses();
  events = recordingEvents();
});

/** A node's group service over the memory store (or the one given), fakes for the rest. */
function node(
  name: string,
  options: { store?: GroupStore; units?: FakeUnits; maxPages?: number; unitFrom?: number } = {},
) {
  const units = options.units ?? new FakeUnits();
  const service = new GroupService({
    node: name,
    groups: options.store ?? new MemoryGroupStore(),
    nodes: lapses,
    signals: signals.of(name),
    events: events.sink,
    log: silentLog,
    now: () => clock,
    units,
    ...(options.maxPages === undefined ? {} : { maxPages: options.maxPages }),
    ...(options.unitFrom === undefined ? {} : { unitFrom: options.unitFrom }),
  });
  return { service, units };
}

/** Two started nodes' services on one store, in unit mode from two pages. */
async function twoNodes() {
  const store = new MemoryGroupStore();
  const a = node('n1', { store, unitFrom: 2 });
  const b = node('n2', { store, unitFrom: 2 });
  await a.service.start();
  await b.service.start();
  return { a, b };
}

const member = (page: string, user = `u-${page}`): GroupMember => ({ page, user, media: ['audio'], joinedAt: clock });

describe('join and leave', () => {
  it('answers the peers there before; they hear of the new page, and group.joined is reported', async () => {
    const { service } = node('n1');
    expect(await service.join(APP, 'g', member('n1.1', 'ann'))).toEqual({ peers: [], mode: 'mesh' });
    clock += 500;
    expect(await service.join(APP, 'g', { ...member('n1.2', 'bob'), media: ['audio', 'video'] })).toEqual({
      peers: [{ page: 'n1.1', user: 'ann', media: ['audio'] }],
      mode: 'mesh',
    });
    expect(signals.got('n1.1')).toEqual([
      { t: 'group.peer-joined', group: 'g', page: 'n1.2', user: 'bob', media: ['audio', 'video'] },
    ]);
    // The joining page hears nothing of itself.
    expect(signals.got('n1.2')).toEqual([]);
    expect(events.of('group.joined')).toEqual([
      { type: 'group.joined', call: 'g', user: 'ann', media: ['audio'], joined_at: T0 },
      { type: 'group.joined', call: 'g', user: 'bob', media: ['audio', 'video'], joined_at: T0 + 500 },
    ]);
    expect(service.groupsOf('n1.2')).toBe(1);
    expect(service.isIn('n1.2', 'g')).toBe(true);
    expect(service.isIn('n1.2', 'other')).toBe(false);
  });

  it('turns a page away at maxPages (full) or when in already, telling and reporting nothing', async () => {
    const { service } = node('n1', { maxPages: 2 });
    await service.join(APP, 'g', member('n1.1'));
    await service.join(APP, 'g', member('n1.2'));
    expect(await service.join(APP, 'g', member('n1.3'))).toBe('full');
    expect(await service.join(APP, 'g', member('n1.1'))).toBe('already');
    expect(service.groupsOf('n1.3')).toBe(0);
    expect(signals.got('n1.1', 'group.peer-joined').map((f) => f.page)).toEqual(['n1.2']);
    expect(events.of('group.joined')).toHaveLength(2);
  });

  it('tells the others a page left and reports group.left with its whole seconds; its unit ends', async () => {
    const { service, units } = node('n1');
    await service.join(APP, 'g', member('n1.1', 'ann'));
    await service.join(APP, 'g', member('n1.2', 'bob'));
    clock += 61_999;
    expect(await service.leave(APP, 'g', 'n1.1')).toBe(true);
    expect(signals.got('n1.2', 'group.peer-left')).toEqual([
      { t: 'group.peer-left', group: 'g', page: 'n1.1', user: 'ann' },
    ]);
    expect(events.of('group.left')).toEqual([
      {
        type: 'group.left',
        call: 'g',
        user: 'ann',
        media: ['audio'],
        joined_at: T0,
        left_at: T0 + 61_999,
        seconds: 61,
      },
    ]);
    expect(units.of('end')).toHaveLength(1);
    expect(service.isIn('n1.1', 'g')).toBe(false);
    // Out already: nothing more to tell or report.
    expect(await service.leave(APP, 'g', 'n1.1')).toBe(false);
    expect(events.of('group.left')).toHaveLength(1);
  });

  it('takes a closed page out of each of its groups', async () => {
    const { service } = node('n1');
    await service.join(APP, 'g', member('n1.1'));
    await service.join(APP, 'h', member('n1.1'));
    await service.join(APP, 'h', member('n1.2'));
    await service.pageClosed(APP, 'n1.1');
    expect(
      events
        .of('group.left')
        .map((e) => e.call)
        .sort(),
    ).toEqual(['g', 'h']);
    expect(signals.got('n1.2', 'group.peer-left').map((f) => f.page)).toEqual(['n1.1']);
    expect(service.groupsOf('n1.1')).toBe(0);
    expect((await service.route(APP, 'h', 'n1.1')).present).toBe(false);
  });

  it('routes a signal by the group mode and whether its target is in the group, on any node', async () => {
    const store = new MemoryGroupStore();
    const one = node('n1', { store, unitFrom: 3 }).service;
    const two = node('n2', { store, unitFrom: 3 }).service;
    await one.join(APP, 'g', member('n1.1'));
    await two.join(APP, 'g', member('n2.1'));
    expect(await one.route(APP, 'g', 'n2.1')).toEqual({ unit: false, present: true });
    expect(await one.route(APP, 'g', 'n2.9')).toEqual({ unit: false, present: false });
    await two.join(APP, 'g', member('n2.2'));
    expect(await one.route(APP, 'g', 'n2.2')).toEqual({ unit: true, present: true });
    await one.signal(APP, 'n2.1', { t: 'group.signal', group: 'g', from: 'n1.1', data: { restart: true } });
    expect(signals.got('n2.1', 'group.signal')).toHaveLength(1);
  });
});

describe('the switch to forwarding units', () => {
  it(`switches at unitFrom pages (default ${GROUP_UNIT_FROM}): the others hear group.mode before the new peer`, async () => {
    const { service } = node('n1');
    for (let i = 1; i < GROUP_UNIT_FROM; i++) {
      expect(await service.join(APP, 'g', member(`n1.${i}`))).toMatchObject({ mode: 'mesh' });
    }
    const last = `n1.${GROUP_UNIT_FROM}`;
    expect(await service.join(APP, 'g', member(last))).toMatchObject({ mode: 'unit' });
    for (let i = 1; i < GROUP_UNIT_FROM; i++) {
      const frames = signals.got(`n1.${i}`);
      expect(frames.slice(-2)).toEqual([
        { t: 'group.mode', group: 'g', mode: 'unit' },
        { t: 'group.peer-joined', group: 'g', page: last, user: `u-${last}`, media: ['audio'] },
      ]);
      expect(frames.filter((f) => f.t === 'group.mode')).toHaveLength(1);
    }
    // Later joins are in unit mode, with no switch to tell.
    expect(await service.join(APP, 'g', member('n1.99'))).toMatchObject({ mode: 'unit' });
    expect(signals.got('n1.1', 'group.mode')).toHaveLength(1);
  });

  it("offers a page joining in unit mode each peer's media from that peer's unit, on the peer's node", async () => {
    const { a, b } = await twoNodes();
    await a.service.join(APP, 'g', member('n1.1'));
    const joined = await b.service.join(APP, 'g', member('n2.1'));
    if (typeof joined === 'string') throw new Error(joined);
    await b.service.offerPeers(APP, 'g', 'n2.1', joined.peers);
    // The request went to n1, whose unit for n1.1 opened a session for n2.1 and offered it.
    expect(signals.messages).toEqual([
      { node: 'n1', kind: 'group', message: { op: 'open', group: 'g', sender: 'n1.1', page: 'n2.1' } },
    ]);
    await vi.waitFor(() =>
      expect(signals.got('n2.1', 'group.signal')).toEqual([
        { t: 'group.signal', group: 'g', from: 'n1.1', data: { sdp: { type: 'offer', sdp: 'offer:n2.1' } } },
      ]),
    );
    expect(a.units.of('openViewer').map((c) => c.page)).toEqual(['n2.1']);
    expect(b.units.calls).toEqual([]);
  });

  it("answers a page's offer to its own unit; once its media is up every other page gets the unit's offer", async () => {
    const { service, units } = node('n1', { unitFrom: 2 });
    await service.start();
    await service.join(APP, 'g', member('n1.1'));
    await service.join(APP, 'g', member('n1.2'));
    await service.join(APP, 'g', member('n1.3'));
    await service.unitSignal(APP, 'g', 'n1.1', 'n1.1', { sdp: 'v=0 mine' });
    expect(signals.got('n1.1', 'group.signal')).toEqual([
      { t: 'group.signal', group: 'g', from: 'n1.1', data: { sdp: { type: 'answer', sdp: 'answer:v=0 mine' } } },
    ]);
    await service.unitSignal(APP, 'g', 'n1.1', 'n1.1', { candidate: { candidate: 'c' } });
    expect(units.of('presenterCandidate').map((c) => c.page)).toEqual(['n1.1']);
    units.events('n1.1').connected();
    await vi.waitFor(() => {
      for (const page of ['n1.2', 'n1.3']) {
        expect(signals.got(page, 'group.signal')).toEqual([
          { t: 'group.signal', group: 'g', from: 'n1.1', data: { sdp: { type: 'offer', sdp: `offer:${page}` } } },
        ]);
      }
    });
    // A page's answer to another's unit goes to that unit.
    await service.unitSignal(APP, 'g', 'n1.2', 'n1.1', { sdp: 'v=0 answer' });
    await vi.waitFor(() => expect(units.of('viewerAnswer').map((c) => c.page)).toEqual(['n1.2']));
    // Its media failed at the unit: the page offers again.
    units.events('n1.1').failed();
    await vi.waitFor(() =>
      expect(signals.got('n1.1', 'group.signal').at(-1)).toEqual({
        t: 'group.signal',
        group: 'g',
        from: 'n1.1',
        data: { restart: true },
      }),
    );
  });

  it("a page's video wants for another page's unit reach that unit, on the sender's node", async () => {
    const { a, b } = await twoNodes();
    await a.service.join(APP, 'g', member('n1.1'));
    await a.service.join(APP, 'g', member('n1.2'));
    await b.service.join(APP, 'g', member('n2.1'));
    // From a page of the sender's node, and from one of another node.
    await a.service.unitSignal(APP, 'g', 'n1.2', 'n1.1', { video: { maxWidth: 320, maxHeight: 180 } });
    await b.service.unitSignal(APP, 'g', 'n2.1', 'n1.1', { video: { paused: true } });
    expect(signals.messages.filter((m) => m.message.op === 'video')).toEqual([
      {
        node: 'n1',
        kind: 'group',
        message: { op: 'video', group: 'g', sender: 'n1.1', page: 'n1.2', wants: { maxWidth: 320, maxHeight: 180 } },
      },
      {
        node: 'n1',
        kind: 'group',
        message: { op: 'video', group: 'g', sender: 'n1.1', page: 'n2.1', wants: { paused: true } },
      },
    ]);
    await vi.waitFor(() =>
      expect(a.units.of('viewerVideo')).toEqual([
        {
          op: 'viewerVideo',
          key: 'group\u0000app1\u0000g\u0000n1.1',
          page: 'n1.2',
          wants: { maxWidth: 320, maxHeight: 180 },
        },
        { op: 'viewerVideo', key: 'group\u0000app1\u0000g\u0000n1.1', page: 'n2.1', wants: { paused: true } },
      ]),
    );
    expect(b.units.calls).toEqual([]);
  });

  it('tells a page its session was refused by a bound of the units, naming the group and the sender', async () => {
    const units = new FakeUnits();
    units.refuse = (page) =>
      page === 'n1.2' ? new UnitLimitError('unitsPerApp', 'too many units for this app') : undefined;
    const { service } = node('n1', { units, unitFrom: 2 });
    await service.start();
    await service.join(APP, 'g', member('n1.1'));
    const joined = await service.join(APP, 'g', member('n1.2'));
    if (typeof joined === 'string') throw new Error(joined);
    await service.offerPeers(APP, 'g', 'n1.2', joined.peers);
    await vi.waitFor(() =>
      expect(signals.got('n1.2', 'error')).toEqual([
        {
          t: 'error',
          code: 'unavailable',
          message: 'group.signal: too many units for this app',
          group: 'g',
          from: 'n1.1',
        },
      ]),
    );
  });

  it("a page leaving a unit-mode group ends its unit and closes its sessions on the others' units", async () => {
    const { a, b } = await twoNodes();
    await a.service.join(APP, 'g', member('n1.1'));
    await b.service.join(APP, 'g', member('n2.1'));
    await b.service.join(APP, 'g', member('n2.2'));
    signals.messages.length = 0;
    await b.service.leave(APP, 'g', 'n2.2');
    expect(b.units.of('end')).toHaveLength(1);
    expect(signals.messages.map((m) => [m.node, m.message])).toEqual([
      ['n1', { op: 'close', group: 'g', sender: 'n1.1', page: 'n2.2' }],
      ['n2', { op: 'close', group: 'g', sender: 'n2.1', page: 'n2.2' }],
    ]);
    await vi.waitFor(() => {
      expect(a.units.of('closeViewer').map((c) => c.page)).toEqual(['n2.2']);
      expect(b.units.of('closeViewer').map((c) => c.page)).toEqual(['n2.2']);
    });
  });

  it('a page leaving a mesh group closes no session', async () => {
    const { service } = node('n1');
    await service.join(APP, 'g', member('n1.1'));
    await service.join(APP, 'g', member('n1.2'));
    await service.leave(APP, 'g', 'n1.2');
    expect(signals.messages).toEqual([]);
  });
});

describe('a dead node', () => {
  it("takes its pages out of their groups through the registry's lapse handler: the others hear, group.left is reported", async () => {
    const store = new MemoryGroupStore();
    const live = node('n1', { store }).service;
    const dead = node('n9', { store }).service;
    await live.join(APP, 'g', member('n1.1'));
    await dead.join(APP, 'g', member('n9.1', 'zed'));
    await dead.join(APP, 'h', member('n9.2'));
    clock += 10_000;
    expect(lapses.handlers.map((h) => h.what)).toEqual(['group calls', 'group calls']);
    // The live node's handler claims n9; what it took, the other handler finds gone.
    expect(await lapses.handlers[0]?.handler({ node: 'n9', lapse: 1 })).toBe('done');
    expect(signals.got('n1.1', 'group.peer-left')).toEqual([
      { t: 'group.peer-left', group: 'g', page: 'n9.1', user: 'zed' },
    ]);
    expect(events.of('group.left').map((e) => [e.call, e.seconds])).toEqual(
      expect.arrayContaining([
        ['g', 10],
        ['h', 10],
      ]),
    );
    expect(await lapses.once('n9')).toEqual(['done', 'done']);
    expect(events.of('group.left')).toHaveLength(2);
    expect(await live.route(APP, 'g', 'n9.1')).toEqual({ unit: false, present: false });
  });

  it("answers 'more' while a batch was full, and 'done' once the node's pages are all out", async () => {
    const store = new MemoryGroupStore();
    node('n1', { store });
    const dead = node('n9', { store, maxPages: 1000 }).service;
    for (let i = 0; i <= SWEEP_BATCH; i++) await dead.join(APP, `g${i % 7}`, member(`n9.${i}`));
    const [handler] = lapses.handlers;
    expect(await handler?.handler({ node: 'n9', lapse: 1 })).toBe('more');
    expect(await handler?.handler({ node: 'n9', lapse: 1 })).toBe('done');
    expect(events.of('group.left')).toHaveLength(SWEEP_BATCH + 1);
  });
});

describe('store failures', () => {
  it('a join the store could not keep rejects with its StoreError: nothing told, reported or tracked', async () => {
    const failing = failable(new MemoryGroupStore());
    const { service } = node('n1', { store: failing.store });
    await service.join(APP, 'g', member('n1.1'));
    failing.fail('join');
    await expect(service.join(APP, 'g', member('n1.2'))).rejects.toBeInstanceOf(StoreError);
    expect(signals.got('n1.1')).toEqual([]);
    expect(events.of('group.joined')).toHaveLength(1);
    expect(service.groupsOf('n1.2')).toBe(0);
  });

  it('a leave the store could not take rejects; the page is no longer counted here', async () => {
    const failing = failable(new MemoryGroupStore());
    const { service } = node('n1', { store: failing.store });
    await service.join(APP, 'g', member('n1.1'));
    failing.fail('leave');
    await expect(service.leave(APP, 'g', 'n1.1')).rejects.toBeInstanceOf(StoreError);
    expect(service.isIn('n1.1', 'g')).toBe(false);
    expect(events.of('group.left')).toEqual([]);
  });

  it('a closed page leaves its other groups when one leave fails', async () => {
    const failing = failable(new MemoryGroupStore());
    const { service } = node('n1', { store: failing.store });
    await service.join(APP, 'g', member('n1.1'));
    await service.join(APP, 'h', member('n1.1'));
    // The first leave (of g) fails, the second goes through.
    failing.fail('leave', 1);
    await expect(service.pageClosed(APP, 'n1.1')).resolves.toBeUndefined();
    expect(events.of('group.left').map((e) => e.call)).toEqual(['h']);
    expect(service.groupsOf('n1.1')).toBe(0);
  });

  it('reports group.left even when the others could not be told, and joins when group.joined could not be kept', async () => {
    const failing = failable(new MemoryGroupStore());
    const { service } = node('n1', { store: failing.store });
    events.fail.add('group.joined');
    expect(await service.join(APP, 'g', member('n1.1'))).toEqual({ peers: [], mode: 'mesh' });
    await service.join(APP, 'g', member('n1.2'));
    expect(signals.got('n1.1', 'group.peer-joined')).toHaveLength(1);
    // Reading the group for the frame fails: the departure is still reported.
    failing.fail('members');
    expect(await service.leave(APP, 'g', 'n1.2')).toBe(true);
    expect(signals.got('n1.1', 'group.peer-left')).toEqual([]);
    expect(events.of('group.left').map((e) => e.user)).toEqual(['u-n1.2']);
  });

  it('a page whose frames are lost does not keep the others from hearing', async () => {
    const { service } = node('n1');
    await service.join(APP, 'g', member('n1.1'));
    await service.join(APP, 'g', member('n1.2'));
    signals.failing.add('n1.1');
    await service.join(APP, 'g', member('n1.3'));
    expect(signals.got('n1.2', 'group.peer-joined').map((f) => f.page)).toEqual(['n1.3']);
    expect(events.of('group.joined')).toHaveLength(3);
  });
});
