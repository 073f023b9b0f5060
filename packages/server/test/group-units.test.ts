import { deriveKey } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryEventSink } from '../src/index.js';
import { ForwardingUnit } from '../src/units/forwarding-unit.js';
import { nowSeconds, signToken, waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';
import { MediaPeer } from './stream-peers.js';

type Frame = Record<string, unknown>;
type Sdp = { type?: string; sdp: string };

/** A page in a group call, with its werift peers: the one sending its media and one per page it receives. */
interface Member {
  user: string;
  group: string;
  page: RawPage;
  /** Its page id in the group. */
  id: string;
  joined: Frame;
  sender?: MediaPeer;
  /** Receiving peers by the sending page's id. */
  from: Map<string, MediaPeer>;
}

let server: TestServer;
let ref = 0;
const peers: MediaPeer[] = [];
const pages: RawPage[] = [];

const groupToken = (user: string, group: string) =>
  signToken(
    { sub: user, group, media: ['audio', 'video'], exp: nowSeconds() + 600 },
    { key: deriveKey(server.app.secret, 'calls') },
  );

async function pageOf(user: string): Promise<RawPage> {
  const identity = await signToken({ sub: user, exp: nowSeconds() + 600 }, { secret: server.app.secret });
  const page = await helloPage(server.url, server.app.key, identity);
  pages.push(page);
  return page;
}

const recorded = (type: string, call: string) =>
  (server.events as MemoryEventSink).events
    .map((e) => e.event as unknown as Frame)
    .filter((e) => e.type === type && e.call === call);

const sdpOf = (f: Frame): Sdp | undefined => (f.data as { sdp?: Sdp } | undefined)?.sdp;

/**
 * The first frame from index `from` on that matches, waiting for it (RawPage.next skips what it
 * passed over, and several offers arrive in any order here).
 */
async function frameOf(page: RawPage, match: (f: Frame) => boolean, what: string, from = 0): Promise<Frame> {
  const find = () => page.frames.slice(from).find(match);
  await waitFor(() => find() !== undefined, `${what}; last frames ${JSON.stringify(page.frames.slice(-4))}`, 10_000);
  return find() as Frame;
}

async function ask(page: RawPage, frame: Frame): Promise<Frame> {
  const r = ++ref;
  page.send({ ...frame, ref: r });
  return frameOf(page, (f) => f.ref === r, `the answer to ${String(frame.t)}`);
}

async function joinWith(page: RawPage, user: string, group: string): Promise<Frame> {
  return ask(page, { t: 'group.join', group, token: await groupToken(user, group) });
}

/** A new page for `user` joins `group`. */
async function join(user: string, group: string): Promise<Member> {
  const page = await pageOf(user);
  const joined = await joinWith(page, user, group);
  expect(joined).toMatchObject({ t: 'group.joined', group });
  return { user, group, page, id: joined.page as string, joined, from: new Map() };
}

let markers = 0;

/**
 * A barrier for "nothing more is recorded": a later page's whole group call, joined and closed, is
 * recorded after anything the earlier leaves and closes still had to record.
 */
async function laterCallRecorded(): Promise<void> {
  const group = `marker-${++markers}`;
  const m = await join('marker', group);
  await m.page.close();
  await waitFor(() => recorded('group.left', group).length === 1, 'the marker call recorded');
}

async function leave(m: Member): Promise<void> {
  expect(await ask(m.page, { t: 'group.leave', group: m.group })).toMatchObject({ t: 'group.left', group: m.group });
}

/** The page offers its media to its own unit (`to` its own id), takes the answer `from` its own id, and sends RTP. */
async function sendMedia(m: Member): Promise<void> {
  const peer = new MediaPeer();
  peers.push(peer);
  m.sender = peer;
  const from = m.page.frames.length;
  m.page.send({
    t: 'group.signal',
    group: m.group,
    to: m.id,
    data: { sdp: { type: 'offer', sdp: await peer.offer() } },
  });
  const answer = await frameOf(
    m.page,
    (f) => f.t === 'group.signal' && f.from === m.id && sdpOf(f)?.type === 'answer',
    `${m.user}: its unit's answer`,
    from,
  );
  expect(answer.group).toBe(m.group);
  await peer.accept((sdpOf(answer) as Sdp).sdp);
  await peer.connected;
  peer.send();
}

/** The page takes the offer of `sender`'s unit (`from` the sender), answers it `to` the sender, and connects. */
async function receive(m: Member, sender: Member, from = 0): Promise<MediaPeer> {
  const offer = await frameOf(
    m.page,
    (f) => f.t === 'group.signal' && f.from === sender.id && sdpOf(f)?.type === 'offer',
    `${m.user}: the offer of ${sender.user}'s unit`,
    from,
  );
  expect(offer.group).toBe(m.group);
  const peer = new MediaPeer();
  peers.push(peer);
  const sdp = await peer.answer((sdpOf(offer) as Sdp).sdp);
  m.page.send({ t: 'group.signal', group: m.group, to: sender.id, data: { sdp: { type: 'answer', sdp } } });
  await peer.connected;
  m.from.set(sender.id, peer);
  return peer;
}

const snapshot = (peer: MediaPeer) => ({ ...peer.received });

/** Packets of both kinds keep arriving on the peer (more than a few since now). */
async function flowing(peer: MediaPeer, what: string): Promise<void> {
  const start = snapshot(peer);
  await waitFor(
    () => peer.received.audio >= start.audio + 5 && peer.received.video >= start.video + 5,
    `RTP: ${what} (got ${JSON.stringify(peer.received)})`,
    10_000,
  );
}

/**
 * No packet arrives on the peer for half a second (packets in flight when it stopped are let through
 * first). RTP has no later packet to wait for: a quiet window, polled until it holds, is the condition.
 */
async function stopped(peer: MediaPeer, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const before = snapshot(peer);
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (peer.received.audio === before.audio && peer.received.video === before.video) return;
    if (Date.now() > deadline) throw new Error(`RTP still arrives: ${what}`);
  }
}

/** Every page receives every other page's media through that page's unit (offers after `marks`, by page). */
async function receiveAll(members: Member[], marks = new Map<Member, number>()): Promise<void> {
  await Promise.all(members.flatMap((m) => members.filter((s) => s !== m).map((s) => receive(m, s, marks.get(m)))));
  await Promise.all(
    members.flatMap((m) =>
      members.filter((s) => s !== m).map((s) => flowing(m.from.get(s.id) as MediaPeer, `${s.user} to ${m.user}`)),
    ),
  );
}

/** A group of three in unit mode with every page's media reaching the other two. */
async function unitGroup(group: string, users: [string, string, string]): Promise<Member[]> {
  const members: Member[] = [];
  for (const user of users) members.push(await join(user, group));
  expect(members.map((m) => m.joined.mode)).toEqual(['mesh', 'mesh', 'unit']);
  await Promise.all(members.map(sendMedia));
  await receiveAll(members);
  return members;
}

beforeAll(async () => {
  server = await startTestServer({
    calls: { groupUnitFrom: 3, groupMaxPages: 4 },
    // A sender's media that never connects fails within this (ms); connections here take well under a second.
    streams: { remoteAddresses: ['127.0.0.1'], connectTimeoutMs: 4000 },
    events: new MemoryEventSink(),
  });
});

afterAll(async () => {
  await Promise.all(peers.map((p) => p.close().catch(() => undefined)));
  await Promise.all(pages.map((p) => p.close()));
  await server.close();
});

describe('group calls in unit mode over raw frames and werift peers', () => {
  it('switches at the third page: each page sends its media to its own unit, and receives the others’ from theirs', async () => {
    const group = 'all-hands';
    const ann = await join('ann', group);
    expect(ann.joined).toMatchObject({ peers: [], mode: 'mesh' });
    const ben = await join('ben', group);
    expect(ben.joined).toMatchObject({
      peers: [{ page: ann.id, user: 'ann', media: ['audio', 'video'] }],
      mode: 'mesh',
    });
    await frameOf(ann.page, (f) => f.t === 'group.peer-joined' && f.page === ben.id, 'ben joined');

    // Mesh: a signal goes page to page, as is.
    const meshOffer = { sdp: { type: 'offer', sdp: 'v=0 (mesh)' } };
    ben.page.send({ t: 'group.signal', group, to: ann.id, data: meshOffer });
    expect(await frameOf(ann.page, (f) => f.t === 'group.signal', 'the mesh offer')).toEqual({
      t: 'group.signal',
      group,
      from: ben.id,
      data: meshOffer,
    });

    // From here on, offers come from units only (the mesh offer above is not one).
    const marks = new Map([ann, ben].map((m) => [m, m.page.frames.length]));
    // The third page switches the group: the two there hear of it before they hear of the newcomer.
    const cid = await join('cid', group);
    expect(cid.joined.mode).toBe('unit');
    expect((cid.joined.peers as Frame[]).map((p) => p.page)).toEqual([ann.id, ben.id]);
    for (const m of [ann, ben]) {
      const joinedAt = (await frameOf(m.page, (f) => f.t === 'group.peer-joined' && f.page === cid.id, 'cid')) as Frame;
      const mode = m.page.frames.filter((f) => f.t === 'group.mode');
      expect(mode).toEqual([{ t: 'group.mode', group, mode: 'unit' }]);
      expect(m.page.frames.indexOf(mode[0] as Frame)).toBeLessThan(m.page.frames.indexOf(joinedAt));
    }
    expect(cid.page.frames.filter((f) => f.t === 'group.mode')).toEqual([]);

    // Each page sends its media once, to its own unit; each other page gets that unit's offer `from` it.
    await Promise.all([ann, ben, cid].map(sendMedia));
    await receiveAll([ann, ben, cid], marks);
    // Nobody is offered its own media back, and no page got a second offer from one unit.
    for (const m of [ann, ben, cid]) {
      const offers = m.page.frames
        .slice(marks.get(m) ?? 0)
        .filter((f) => f.t === 'group.signal' && sdpOf(f)?.type === 'offer');
      expect(offers.map((f) => f.from).sort()).toEqual(
        [ann, ben, cid]
          .filter((s) => s !== m)
          .map((s) => s.id)
          .sort(),
      );
    }

    // `restart` to ben asks ben's unit for a fresh offer to ann: a new session replaces the old one.
    const beforeRestart = ann.page.frames.length;
    const oldSession = ann.from.get(ben.id) as MediaPeer;
    ann.page.send({ t: 'group.signal', group, to: ben.id, data: { restart: true } });
    await receive(ann, ben, beforeRestart);
    await flowing(ann.from.get(ben.id) as MediaPeer, 'ben to ann, after the restart');
    await stopped(oldSession, 'ben to ann on the replaced session');

    // cid offers anew (its old peer still sending): a new unit, whose offers reach ann and ben once
    // cid's media connects to it; the old unit ends with its sessions.
    const beforeOffer = new Map([ann, ben].map((m) => [m, m.page.frames.length]));
    const oldSessions = [ann, ben].map((m) => m.from.get(cid.id) as MediaPeer);
    await sendMedia(cid);
    await Promise.all([ann, ben].map((m) => receive(m, cid, beforeOffer.get(m))));
    for (const m of [ann, ben]) await flowing(m.from.get(cid.id) as MediaPeer, `cid's new unit to ${m.user}`);
    for (const peer of oldSessions) await stopped(peer, "cid's old unit");
    for (const m of [ann, ben, cid]) await m.page.close();
  }, 30_000);

  it('a page leaving ends its unit and the group stays in unit mode until it empties', async () => {
    const group = 'retro';
    const [ann, ben, cid] = (await unitGroup(group, ['ann', 'ben', 'cid'])) as [Member, Member, Member];

    // ben leaves the group but keeps its socket and its sending peer: only the service can stop its media.
    await leave(ben);
    for (const m of [ann, cid]) {
      expect(await frameOf(m.page, (f) => f.t === 'group.peer-left', 'ben left')).toEqual({
        t: 'group.peer-left',
        group,
        page: ben.id,
        user: 'ben',
      });
    }
    for (const m of [ann, cid]) await stopped(m.from.get(ben.id) as MediaPeer, `ben's unit to ${m.user}`);
    // ben's sessions on the others' units closed too; ann's and cid's media still flow between them.
    for (const s of [ann, cid]) await stopped(ben.from.get(s.id) as MediaPeer, `${s.user}'s unit to ben`);
    await flowing(ann.from.get(cid.id) as MediaPeer, 'cid to ann, after ben left');
    await flowing(cid.from.get(ann.id) as MediaPeer, 'ann to cid, after ben left');

    // Two pages left, still unit mode: a newcomer offers to its unit and gets each remaining unit's offer.
    const dan = await join('dan', group);
    expect(dan.joined).toMatchObject({ mode: 'unit' });
    expect((dan.joined.peers as Frame[]).map((p) => p.page)).toEqual([ann.id, cid.id]);
    const marks = new Map([ann, cid].map((m) => [m, m.page.frames.length]));
    await sendMedia(dan);
    await Promise.all([
      receive(dan, ann),
      receive(dan, cid),
      receive(ann, dan, marks.get(ann)),
      receive(cid, dan, marks.get(cid)),
    ]);
    for (const [m, s] of [
      [dan, ann],
      [dan, cid],
      [ann, dan],
      [cid, dan],
    ] as const) {
      await flowing(m.from.get(s.id) as MediaPeer, `${s.user} to ${m.user}`);
    }
    // ben, out of the group, is offered nothing more.
    expect(ben.page.frames.filter((f) => f.t === 'group.signal' && f.from === dan.id)).toEqual([]);

    // Once every page is out, the group starts as a mesh again.
    await leave(ann);
    await cid.page.close();
    await stopped(dan.from.get(cid.id) as MediaPeer, "cid's unit to dan, after cid's page closed");
    await leave(dan);
    const eve = await join('eve', group);
    expect(eve.joined).toMatchObject({ mode: 'mesh', peers: [] });
    await leave(eve);

    // One group.joined per join and one group.left per leave (closing counts as leaving).
    await waitFor(() => recorded('group.left', group).length === 5, 'five group.left');
    await laterCallRecorded();
    expect(recorded('group.joined', group).map((e) => e.user)).toEqual(['ann', 'ben', 'cid', 'dan', 'eve']);
    expect(
      recorded('group.left', group)
        .map((e) => e.user)
        .sort(),
    ).toEqual(['ann', 'ben', 'cid', 'dan', 'eve']);
    for (const m of [ann, ben, dan, eve]) await m.page.close();
  }, 30_000);

  it('a page’s video wants for another page’s unit reach its session there; to its own unit, or badly shaped, bad_frame', async () => {
    const group = 'adaptive';
    const [a, b] = (await unitGroup(group, ['va', 'vb', 'vc'])) as [Member, Member, Member];
    const told = vi.spyOn(ForwardingUnit.prototype, 'setViewerVideo');
    try {
      a.page.send({ t: 'group.signal', group, to: b.id, data: { video: { maxWidth: 160, maxHeight: 90 } } });
      await waitFor(() => told.mock.calls.length === 1, 'the unit of vb told');
      expect(told.mock.calls[0]?.[1]).toEqual({ maxWidth: 160, maxHeight: 90 });
      expect(told.mock.results[0]?.value).toBe(true);

      const refusal = async (data: Frame, to: string, what: string): Promise<Frame> => {
        const from = a.page.frames.length;
        a.page.send({ t: 'group.signal', group, to, data });
        return frameOf(a.page, (f) => f.t === 'error', what, from);
      };
      expect(await refusal({ video: { paused: true } }, a.id, 'video wants of its own unit')).toEqual({
        t: 'error',
        code: 'bad_frame',
        message: 'group.signal: data.video is for a page receiving video, not from a page to its own unit',
        group,
      });
      expect(await refusal({ video: { maxHeight: 0 } }, b.id, 'a height of 0')).toEqual({
        t: 'error',
        code: 'bad_frame',
        message: 'group.signal: data.video.maxHeight must be a whole number of pixels from 1 to 16384',
        group,
      });
      expect(told).toHaveBeenCalledTimes(1);
    } finally {
      told.mockRestore();
    }
  });

  it('refuses bad unit signals, signals outside the group, too much data and too many groups, each naming the group', async () => {
    const group = 'refusals';
    const [f1, f2, f3] = [await join('f1', group), await join('f2', group), await join('f3', group)] as [
      Member,
      Member,
      Member,
    ];
    expect(f3.joined.mode).toBe('unit');
    const outsider = await join('out', 'elsewhere');
    const refusal = async (page: RawPage, data: Frame, to: string, what: string): Promise<Frame> => {
      const from = page.frames.length;
      page.send({ t: 'group.signal', group, to, data });
      return frameOf(page, (f) => f.t === 'error', what, from);
    };

    expect(
      await refusal(f1.page, { sdp: { type: 'offer', sdp: 'v=0\r\n' } }, f1.id, 'an offer without media'),
    ).toMatchObject({ t: 'error', code: 'bad_frame', group, message: expect.stringContaining('no audio or video') });
    expect(
      await refusal(f1.page, { sdp: { type: 'answer', sdp: 'v=0\r\n' } }, f1.id, 'an answer to itself'),
    ).toMatchObject({ code: 'bad_frame', group });
    expect(await refusal(f1.page, { restart: true }, f1.id, 'a restart of its own unit')).toMatchObject({
      code: 'bad_frame',
      group,
    });
    expect(await refusal(f1.page, { candidate: { sdpMid: '0' } }, f2.id, 'a candidate without text')).toMatchObject({
      code: 'bad_frame',
      group,
    });
    expect(await refusal(f1.page, { hello: 1 }, outsider.id, 'a page outside the group')).toMatchObject({
      code: 'not_in_group',
      group,
    });
    expect(await refusal(outsider.page, { hello: 1 }, f1.id, 'a page not in the group')).toMatchObject({
      code: 'not_in_group',
      group,
    });
    expect(await refusal(f1.page, { pad: 'x'.repeat(70_000) }, f2.id, 'too large')).toMatchObject({
      code: 'too_large',
      group,
    });

    // A page-to-page offer sent as the group switched is dropped quietly: the next frame's refusal is the only answer.
    const from = f1.page.frames.length;
    const seenByF2 = f2.page.frames.length;
    f1.page.send({ t: 'group.signal', group, to: f2.id, data: { sdp: { type: 'offer', sdp: 'v=0 (stale)' } } });
    const sentinel = await refusal(f1.page, { hello: 2 }, outsider.id, 'the frame after the stale offer');
    expect(f1.page.frames.slice(from)).toEqual([sentinel]);

    // groupMaxPages is 4: a fifth page is refused.
    const f4 = await join('f4', group);
    expect(f4.joined).toMatchObject({ mode: 'unit' });
    // f4's arrival, told to f2 after the stale offer was handled, is the first group frame f2 got since.
    await frameOf(f2.page, (f) => f.t === 'group.peer-joined' && f.page === f4.id, 'f4 joined (f2)', seenByF2);
    expect(f2.page.frames.slice(seenByF2).filter((f) => f.t === 'group.signal')).toEqual([]);
    const f5 = await pageOf('f5');
    expect(await joinWith(f5, 'f5', group)).toMatchObject({ t: 'error', code: 'group_full', group });

    // A page is in at most 8 group calls (GROUPS_PER_PAGE) at once.
    const many = await pageOf('gus');
    for (let i = 0; i < 8; i++) {
      expect(await joinWith(many, 'gus', `many-${i}`)).toMatchObject({ t: 'group.joined', group: `many-${i}` });
    }
    expect(await joinWith(many, 'gus', 'many-8')).toMatchObject({ t: 'error', code: 'group_full', group: 'many-8' });
    expect(await ask(many, { t: 'group.leave', group: 'many-0' })).toMatchObject({ t: 'group.left' });
    expect(await joinWith(many, 'gus', 'many-8')).toMatchObject({ t: 'group.joined', group: 'many-8' });

    // Refused joins and signals were never reported; each page's join and leave once.
    for (const m of [f1, f2, f3, f4]) await m.page.close();
    await f5.close();
    await waitFor(() => recorded('group.left', group).length === 4, 'four group.left');
    await laterCallRecorded();
    expect(recorded('group.joined', group).map((e) => e.user)).toEqual(['f1', 'f2', 'f3', 'f4']);
    expect(
      recorded('group.left', group)
        .map((e) => e.user)
        .sort(),
    ).toEqual(['f1', 'f2', 'f3', 'f4']);
    await many.close();
    await waitFor(() => recorded('group.left', 'many-8').length === 1, 'gus left many-8 by closing');
    expect(recorded('group.joined', 'many-8')).toHaveLength(1);
    expect(recorded('group.left', 'many-0')).toHaveLength(1);
  }, 30_000);

  it('a page sends to at most 4 units at once (streams.unitsPerPage): its fifth group’s offer is refused naming the group', async () => {
    const groups = ['u-0', 'u-1', 'u-2', 'u-3', 'u-4'];
    const [zed, x, y] = [await pageOf('zed'), await pageOf('xav'), await pageOf('yan')];
    const ids = new Map<string, string>();
    for (const group of groups) {
      for (const [page, user] of [
        [x, 'xav'],
        [y, 'yan'],
      ] as const) {
        expect(await joinWith(page, user, group)).toMatchObject({ t: 'group.joined', group });
      }
      const joined = await joinWith(zed, 'zed', group);
      expect(joined).toMatchObject({ t: 'group.joined', group, mode: 'unit' });
      ids.set(group, joined.page as string);
    }
    const replies: Frame[] = [];
    for (const group of groups) {
      const peer = new MediaPeer();
      peers.push(peer);
      const from = zed.frames.length;
      const to = ids.get(group) as string;
      zed.send({ t: 'group.signal', group, to, data: { sdp: { type: 'offer', sdp: await peer.offer() } } });
      replies.push(
        await frameOf(
          zed,
          (f) => f.group === group && (f.t === 'error' || (f.t === 'group.signal' && sdpOf(f)?.type === 'answer')),
          `the answer or refusal in ${group}`,
          from,
        ),
      );
    }
    expect(replies.slice(0, 4).map((f) => f.t)).toEqual([
      'group.signal',
      'group.signal',
      'group.signal',
      'group.signal',
    ]);
    expect(replies[4]).toStrictEqual({
      t: 'error',
      code: 'unavailable',
      message:
        'group.signal: a page sends to at most 4 forwarding units on a node at once (streams.unitsPerPage): leave a stream or group call first',
      group: 'u-4',
    });
    // Leaving one group ends its unit: the fifth group's offer is taken now.
    expect(await ask(zed, { t: 'group.leave', group: 'u-0' })).toMatchObject({ t: 'group.left' });
    const peer = new MediaPeer();
    peers.push(peer);
    const from = zed.frames.length;
    zed.send({
      t: 'group.signal',
      group: 'u-4',
      to: ids.get('u-4'),
      data: { sdp: { type: 'offer', sdp: await peer.offer() } },
    });
    expect(
      await frameOf(zed, (f) => f.group === 'u-4' && (f.t === 'error' || f.t === 'group.signal'), 'the retry', from),
    ).toMatchObject({ t: 'group.signal', data: { sdp: { type: 'answer' } } });
    for (const page of [zed, x, y]) await page.close();
  }, 30_000);

  it('a unit whose sender’s media never connects asks its page to offer again', async () => {
    const group = 'never-connects';
    const members = [await join('h1', group), await join('h2', group), await join('h3', group)];
    const h1 = members[0] as Member;
    // h1 offers to its unit but never takes the answer: its media cannot connect.
    const peer = new MediaPeer();
    peers.push(peer);
    h1.page.send({ t: 'group.signal', group, to: h1.id, data: { sdp: { type: 'offer', sdp: await peer.offer() } } });
    await frameOf(h1.page, (f) => f.t === 'group.signal' && f.from === h1.id && sdpOf(f)?.type === 'answer', 'answer');
    expect(
      await frameOf(
        h1.page,
        (f) => f.t === 'group.signal' && f.from === h1.id && f.data !== undefined && (f.data as Frame).restart === true,
        'restart',
      ),
    ).toEqual({ t: 'group.signal', group, from: h1.id, data: { restart: true } });
    // The page offers again and its media reaches the others.
    await sendMedia(h1);
    for (const m of members.slice(1)) {
      await receive(m, h1);
      await flowing(m.from.get(h1.id) as MediaPeer, `h1 to ${m.user}`);
    }
    for (const m of members) await m.page.close();
  }, 20_000);
});
