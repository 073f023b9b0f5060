import pino, { type Logger } from 'pino';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeLapses, FakeSignals, FakeUnits, failable, recordingEvents, silentLog } from '../../test/service-fakes.js';
import { MemoryStreamStore } from '../engines/memory/streams.js';
import { StoreError } from '../engines/store-error.js';
import type { StreamMember, StreamStore } from '../engines/types.js';
import { NoMediaPortError } from '../units/session-errors.js';
import { StreamService } from './stream-service.js';

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

/** A node's stream service over the memory store (or the one given), fakes for the rest; started. */
async function node(name: string, options: { store?: StreamStore; maxPages?: number; log?: Logger } = {}) {
  const units = new FakeUnits();
  const service = new StreamService({
    node: name,
    streams: options.store ?? new MemoryStreamStore(),
    nodes: lapses,
    signals: signals.of(name),
    events: events.sink,
    log: options.log ?? silentLog,
    now: () => clock,
    units,
    ...(options.maxPages === undefined ? {} : { options: { maxPages: options.maxPages } }),
  });
  await service.start();
  return { service, units };
}

const presenter = (page: string, user = `u-${page}`): StreamMember => ({ page, user, role: 'presenter' });
const viewer = (page: string, user = `u-${page}`): StreamMember => ({ page, user, role: 'viewer' });
/** A viewer not signed in: it watches, but has no watch of its own to report. */
const visitor = (page: string): StreamMember => ({ page, role: 'viewer' });

/** The presenter offers its media and the unit connects: the stream goes live at the clock's time. */
async function goLive(service: StreamService, units: FakeUnits, page: string, stream = 's'): Promise<void> {
  const before = events.of('stream.live').length;
  await service.signal(APP, stream, page, 'presenter', { sdp: `v=0 ${page}` });
  units.events(page).connected();
  await vi.waitFor(() => expect(events.of('stream.live')).toHaveLength(before + 1));
}

/** The types of the recorded events, in order. */
const types = () => events.recorded.map((r) => r.event.type);

describe('joining and leaving', () => {
  it('puts pages on in their roles; while not live nothing is reported and no unit opens a session', async () => {
    const { service, units } = await node('n1');
    expect(await service.join(APP, 's', presenter('n1.1'))).toEqual({ live: false });
    expect(await service.join(APP, 's', viewer('n1.2'))).toEqual({ live: false });
    expect(service.roleOf('n1.1', APP, 's')).toBe('presenter');
    expect(service.roleOf('n1.2', APP, 's')).toBe('viewer');
    expect(service.roleOf('n1.2', APP, 'other')).toBeUndefined();
    expect(service.streamsOf('n1.2')).toBe(1);
    expect(events.recorded).toEqual([]);
    expect(signals.messages).toEqual([]);
    expect(await service.leave(APP, 's', 'n1.2')).toBe(true);
    expect(await service.leave(APP, 's', 'n1.2')).toBe(false);
    expect(service.streamsOf('n1.2')).toBe(0);
    expect(events.recorded).toEqual([]);
    // A viewer's leaving closes whatever session it had on the presenter's unit: here none was opened.
    expect(units.calls.map((c) => [c.op, c.page])).toEqual([['closeViewer', 'n1.2']]);
  });

  it('answers taken, full and already as the store does, tracking and reporting nothing', async () => {
    const { service } = await node('n1', { maxPages: 2 });
    await service.join(APP, 's', presenter('n1.1'));
    expect(await service.join(APP, 's', presenter('n1.2'))).toBe('taken');
    expect(await service.join(APP, 's', viewer('n1.1'))).toBe('already');
    await service.join(APP, 's', viewer('n1.3'));
    expect(await service.join(APP, 's', viewer('n1.4'))).toBe('full');
    expect(service.streamsOf('n1.2')).toBe(0);
    expect(service.streamsOf('n1.4')).toBe(0);
    expect(service.roleOf('n1.1', APP, 's')).toBe('presenter');
  });

  it('a closed page leaves each of its streams', async () => {
    const { service } = await node('n1');
    await service.join(APP, 's', viewer('n1.1'));
    await service.join(APP, 't', presenter('n1.1'));
    await service.pageClosed(APP, 'n1.1');
    expect(service.streamsOf('n1.1')).toBe(0);
    const other = await service.join(APP, 't', presenter('n1.2'));
    expect(other).toEqual({ live: false });
  });
});

describe('going live', () => {
  it("answers the presenter's offer; once its media is up: stream.live, a stream.joined per signed-in member, offers to viewers", async () => {
    const { service, units } = await node('n1');
    await service.join(APP, 's', presenter('n1.1', 'pat'));
    await service.join(APP, 's', viewer('n1.2', 'ann'));
    await service.join(APP, 's', visitor('n1.3'));
    await service.signal(APP, 's', 'n1.1', 'presenter', { sdp: 'v=0 pat' });
    expect(signals.got('n1.1', 'stream.signal')).toEqual([
      { t: 'stream.signal', stream: 's', data: { sdp: { type: 'answer', sdp: 'answer:v=0 pat' } } },
    ]);
    expect(events.recorded).toEqual([]);
    clock += 1000;
    units.events('n1.1').connected();
    await vi.waitFor(() => expect(signals.got('n1.3', 'stream.signal')).toHaveLength(1));
    const joined = events.of('stream.joined');
    expect(types()).toEqual(['stream.live', 'stream.joined', 'stream.joined']);
    expect(events.of('stream.live')).toEqual([{ type: 'stream.live', stream: 's', started_at: T0 + 1000 }]);
    expect(joined.map((e) => [e.user, e.role, e.joined_at])).toEqual([
      ['pat', 'presenter', T0 + 1000],
      ['ann', 'viewer', T0 + 1000],
    ]);
    for (const page of ['n1.1', 'n1.2', 'n1.3']) {
      expect(signals.got(page, 'stream.live')).toEqual([{ t: 'stream.live', stream: 's', started_at: T0 + 1000 }]);
    }
    for (const page of ['n1.2', 'n1.3']) {
      expect(signals.got(page, 'stream.signal')).toEqual([
        { t: 'stream.signal', stream: 's', data: { sdp: { type: 'offer', sdp: `offer:${page}` } } },
      ]);
    }
    expect(units.of('openViewer').map((c) => c.page)).toEqual(['n1.2', 'n1.3']);
  });

  it("a viewer joining while live on another node is reported and gets an offer from the presenter's node", async () => {
    const store = new MemoryStreamStore();
    const a = await node('n1', { store });
    const b = await node('n2', { store });
    await a.service.join(APP, 's', presenter('n1.1', 'pat'));
    await goLive(a.service, a.units, 'n1.1');
    clock += 5000;
    expect(await b.service.join(APP, 's', viewer('n2.1', 'bob'))).toEqual({ live: true, startedAt: T0 });
    expect(events.of('stream.joined').at(-1)).toMatchObject({ user: 'bob', role: 'viewer', joined_at: T0 + 5000 });
    expect(signals.messages.at(-1)).toEqual({
      node: 'n1',
      kind: 'stream',
      message: { op: 'open', stream: 's', page: 'n2.1' },
    });
    await vi.waitFor(() =>
      expect(signals.got('n2.1', 'stream.signal')).toEqual([
        { t: 'stream.signal', stream: 's', data: { sdp: { type: 'offer', sdp: 'offer:n2.1' } } },
      ]),
    );
    // Its answer and candidates go to the unit on n1; its node runs no unit.
    await b.service.signal(APP, 's', 'n2.1', 'viewer', { sdp: 'v=0 answer' });
    await b.service.signal(APP, 's', 'n2.1', 'viewer', { candidate: { candidate: 'c' } });
    await vi.waitFor(() => {
      expect(a.units.of('viewerAnswer').map((c) => c.page)).toEqual(['n2.1']);
      expect(a.units.of('viewerCandidate').map((c) => c.page)).toEqual(['n2.1']);
    });
    expect(b.units.calls).toEqual([]);
  });

  it("a viewer's video wants reach the unit: on its own node, and on the presenter's node from another", async () => {
    const store = new MemoryStreamStore();
    const a = await node('n1', { store });
    const b = await node('n2', { store });
    await a.service.join(APP, 's', presenter('n1.1'));
    await a.service.join(APP, 's', viewer('n1.2'));
    await b.service.join(APP, 's', viewer('n2.1'));
    await goLive(a.service, a.units, 'n1.1');
    await a.service.signal(APP, 's', 'n1.2', 'viewer', { video: { maxWidth: 640, maxHeight: 360 } });
    await b.service.signal(APP, 's', 'n2.1', 'viewer', { video: { paused: true } });
    expect(signals.messages.filter((m) => m.message.op === 'video')).toEqual([
      {
        node: 'n1',
        kind: 'stream',
        message: { op: 'video', stream: 's', page: 'n1.2', wants: { maxWidth: 640, maxHeight: 360 } },
      },
      { node: 'n1', kind: 'stream', message: { op: 'video', stream: 's', page: 'n2.1', wants: { paused: true } } },
    ]);
    await vi.waitFor(() =>
      expect(a.units.of('viewerVideo')).toEqual([
        { op: 'viewerVideo', key: 'stream\u0000app1\u0000s', page: 'n1.2', wants: { maxWidth: 640, maxHeight: 360 } },
        { op: 'viewerVideo', key: 'stream\u0000app1\u0000s', page: 'n2.1', wants: { paused: true } },
      ]),
    );
    expect(b.units.calls).toEqual([]);
  });

  it("a viewer's signal while the stream is not live goes nowhere", async () => {
    const { service } = await node('n1');
    await service.join(APP, 's', presenter('n1.1'));
    await service.join(APP, 's', viewer('n1.2'));
    await service.signal(APP, 's', 'n1.2', 'viewer', { restart: true });
    expect(signals.messages).toEqual([]);
  });

  it('tells a viewer refused for want of a media port that the stream is unavailable', async () => {
    const { service, units } = await node('n1');
    units.refuse = (page) => (page === 'n1.2' ? new NoMediaPortError() : undefined);
    await service.join(APP, 's', presenter('n1.1'));
    await service.join(APP, 's', viewer('n1.2'));
    await service.join(APP, 's', viewer('n1.3'));
    await goLive(service, units, 'n1.1');
    await vi.waitFor(() => expect(signals.got('n1.2', 'error')).toHaveLength(1));
    expect(signals.got('n1.2', 'error')).toEqual([
      {
        t: 'error',
        code: 'unavailable',
        message: 'stream.signal: the service has no free media port now; try again later',
        stream: 's',
      },
    ]);
    await vi.waitFor(() => expect(signals.got('n1.3', 'stream.signal')).toHaveLength(1));
  });
});

describe('leaving and ending', () => {
  it("a viewer leaving while live: stream.left with its live seconds, its session on the presenter's unit closes", async () => {
    const { service, units } = await node('n1');
    await service.join(APP, 's', presenter('n1.1', 'pat'));
    await service.join(APP, 's', viewer('n1.2', 'ann'));
    await goLive(service, units, 'n1.1');
    clock += 90_500;
    expect(await service.leave(APP, 's', 'n1.2')).toBe(true);
    const watch = events.of('stream.joined').find((e) => e.user === 'ann')?.watch;
    expect(events.of('stream.left')).toEqual([
      {
        type: 'stream.left',
        stream: 's',
        user: 'ann',
        role: 'viewer',
        watch,
        joined_at: T0,
        left_at: T0 + 90_500,
        seconds: 90,
      },
    ]);
    await vi.waitFor(() => expect(units.of('closeViewer').map((c) => c.page)).toEqual(['n1.2']));
    expect(events.of('stream.ended')).toEqual([]);
    expect(signals.got('n1.1', 'stream.ended')).toEqual([]);
  });

  it("the presenter leaving while live ends the run: every watch's stream.left, then stream.ended; the others hear", async () => {
    const { service, units } = await node('n1');
    await service.join(APP, 's', presenter('n1.1', 'pat'));
    await service.join(APP, 's', viewer('n1.2', 'ann'));
    await goLive(service, units, 'n1.1');
    clock += 30_000;
    await service.leave(APP, 's', 'n1.1');
    expect(types().slice(-3)).toEqual(['stream.left', 'stream.left', 'stream.ended']);
    expect(events.of('stream.left').map((e) => [e.user, e.seconds])).toEqual([
      ['pat', 30],
      ['ann', 30],
    ]);
    expect(events.of('stream.ended')).toEqual([
      { type: 'stream.ended', stream: 's', started_at: T0, ended_at: T0 + 30_000 },
    ]);
    expect(units.of('end')).toHaveLength(1);
    expect(signals.got('n1.2', 'stream.ended')).toEqual([{ t: 'stream.ended', stream: 's' }]);
  });

  it('media failing while live ends the run but keeps the presenter, who may go live again', async () => {
    const { service, units } = await node('n1');
    await service.join(APP, 's', presenter('n1.1', 'pat'));
    await service.join(APP, 's', viewer('n1.2', 'ann'));
    await goLive(service, units, 'n1.1');
    clock += 4000;
    units.events('n1.1').failed();
    await vi.waitFor(() => expect(events.of('stream.ended')).toHaveLength(1));
    expect(events.of('stream.ended')[0]).toMatchObject({ started_at: T0, ended_at: T0 + 4000 });
    expect(events.of('stream.left')).toHaveLength(2);
    for (const page of ['n1.1', 'n1.2']) expect(signals.got(page, 'stream.ended')).toHaveLength(1);
    expect(service.roleOf('n1.1', APP, 's')).toBe('presenter');
    await goLive(service, units, 'n1.1');
    expect(events.of('stream.live').map((e) => e.started_at)).toEqual([T0, T0 + 4000]);
  });

  it('media failing before it went live tells the presenter alone, and reports nothing', async () => {
    const { service, units } = await node('n1');
    await service.join(APP, 's', presenter('n1.1'));
    await service.join(APP, 's', viewer('n1.2'));
    await service.signal(APP, 's', 'n1.1', 'presenter', { sdp: 'v=0' });
    units.events('n1.1').failed();
    await vi.waitFor(() => expect(signals.got('n1.1', 'stream.ended')).toEqual([{ t: 'stream.ended', stream: 's' }]));
    expect(signals.got('n1.2', 'stream.ended')).toEqual([]);
    expect(events.recorded).toEqual([]);
  });

  it('a new offer of a live presenter ends the run first, then answers', async () => {
    const { service, units } = await node('n1');
    await service.join(APP, 's', presenter('n1.1'));
    await goLive(service, units, 'n1.1');
    clock += 2000;
    await service.signal(APP, 's', 'n1.1', 'presenter', { sdp: 'v=0 again' });
    expect(events.of('stream.ended')).toEqual([
      { type: 'stream.ended', stream: 's', started_at: T0, ended_at: T0 + 2000 },
    ]);
    expect(signals.got('n1.1', 'stream.signal').at(-1)).toEqual({
      t: 'stream.signal',
      stream: 's',
      data: { sdp: { type: 'answer', sdp: 'answer:v=0 again' } },
    });
    expect(units.of('present')).toHaveLength(2);
  });
});

describe('a dead node', () => {
  it("takes its pages off their streams through the registry's lapse handler; a dead presenter ends its run", async () => {
    const store = new MemoryStreamStore();
    const live = await node('n1', { store });
    const dead = await node('n9', { store });
    await dead.service.join(APP, 's', presenter('n9.1', 'pat'));
    await live.service.join(APP, 's', viewer('n1.1', 'ann'));
    await goLive(dead.service, dead.units, 'n9.1');
    clock += 15_000;
    expect(lapses.handlers.map((h) => h.what)).toEqual(['live streams', 'live streams']);
    expect(await lapses.handlers[0]?.handler({ node: 'n9', lapse: 1 })).toBe('done');
    expect(events.of('stream.ended')).toEqual([
      { type: 'stream.ended', stream: 's', started_at: T0, ended_at: T0 + 15_000 },
    ]);
    expect(events.of('stream.left').map((e) => [e.user, e.seconds])).toEqual([
      ['pat', 15],
      ['ann', 15],
    ]);
    expect(signals.got('n1.1', 'stream.ended')).toEqual([{ t: 'stream.ended', stream: 's' }]);
    // Taken once: the next sweep finds nothing.
    expect(await lapses.once('n9')).toEqual(['done', 'done']);
    expect(events.of('stream.ended')).toHaveLength(1);
  });
});

describe('store failures', () => {
  it('a join the store could not keep rejects with its StoreError, and the page is not tracked', async () => {
    const failing = failable<StreamStore>(new MemoryStreamStore());
    const { service } = await node('n1', { store: failing.store });
    failing.fail('join');
    await expect(service.join(APP, 's', viewer('n1.1'))).rejects.toBeInstanceOf(StoreError);
    expect(service.streamsOf('n1.1')).toBe(0);
  });

  it("a viewer's signal rejects with a StoreError when the stream's state could not be read", async () => {
    const failing = failable<StreamStore>(new MemoryStreamStore());
    const { service } = await node('n1', { store: failing.store });
    await service.join(APP, 's', viewer('n1.1'));
    failing.fail('state');
    await expect(service.signal(APP, 's', 'n1.1', 'viewer', { restart: true })).rejects.toBeInstanceOf(StoreError);
  });

  it('a closed page leaves its other streams when one leave fails', async () => {
    const failing = failable<StreamStore>(new MemoryStreamStore());
    const { service, units } = await node('n1', { store: failing.store });
    await service.join(APP, 's', presenter('n1.9'));
    await service.join(APP, 's', viewer('n1.1', 'ann'));
    await service.join(APP, 't', presenter('n1.1', 'ann'));
    await goLive(service, units, 'n1.1', 't');
    failing.fail('leave', 1);
    await expect(service.pageClosed(APP, 'n1.1')).resolves.toBeUndefined();
    expect(events.of('stream.ended').map((e) => e.stream)).toEqual(['t']);
    expect(service.streamsOf('n1.1')).toBe(0);
  });

  it('each event is recorded though one could not be; a go-live the store could not take is logged', async () => {
    const failing = failable<StreamStore>(new MemoryStreamStore());
    const log = pino({ level: 'silent' });
    const logged = vi.spyOn(log, 'error');
    const { service, units } = await node('n1', { store: failing.store, log });
    await service.join(APP, 's', presenter('n1.1', 'pat'));
    await service.join(APP, 's', viewer('n1.2', 'ann'));
    events.fail.add('stream.live');
    await service.signal(APP, 's', 'n1.1', 'presenter', { sdp: 'v=0' });
    units.events('n1.1').connected();
    await vi.waitFor(() => expect(events.of('stream.joined')).toHaveLength(2));
    expect(events.of('stream.live')).toEqual([]);
    // The run is live for all that.
    await vi.waitFor(() => expect(signals.got('n1.2', 'stream.live')).toHaveLength(1));
    expect(logged).toHaveBeenCalledWith(
      expect.objectContaining({ type: 'stream.live' }),
      'recording a stream event failed',
    );
    // A new offer ends the run; the store cannot take the next go-live: logged, nobody told, nothing reported.
    await service.signal(APP, 's', 'n1.1', 'presenter', { sdp: 'v=1' });
    failing.fail('goLive');
    const before = events.recorded.length;
    units.events('n1.1').connected();
    await vi.waitFor(() =>
      expect(logged).toHaveBeenCalledWith(expect.objectContaining({ stream: 's' }), 'a stream could not go live'),
    );
    expect(events.recorded.slice(before)).toEqual([]);
    expect(signals.got('n1.2', 'stream.live')).toHaveLength(1);
  });
});
