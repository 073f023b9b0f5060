import { deriveKey } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryEventSink } from '../src/index.js';
import { nowSeconds, signToken, skewedClock, waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

type Frame = Record<string, unknown>;
/** The service's clock: the test moves it past a second instead of waiting one. */
const clock = skewedClock();

let server: TestServer;
let ref = 0;

const identity = (user: string) => signToken({ sub: user, exp: nowSeconds() + 600 }, { secret: server.app.secret });
const groupToken = (claims: Record<string, unknown>, key?: Uint8Array) =>
  signToken(
    { media: ['audio'], exp: nowSeconds() + 600, ...claims },
    { key: key ?? deriveKey(server.app.secret, 'calls') },
  );

const pageOf = async (user?: string) =>
  helloPage(server.url, server.app.key, user === undefined ? undefined : await identity(user));

const recorded = (type: string, call: string) =>
  (server.events as MemoryEventSink).events
    .map((e) => e.event as unknown as Frame)
    .filter((e) => e.type === type && e.call === call);

async function join(page: RawPage, user: string, group: string, claims: Record<string, unknown> = {}): Promise<Frame> {
  const r = ++ref;
  page.send({ t: 'group.join', ref: r, group, token: await groupToken({ sub: user, group, ...claims }) });
  return page.next((f) => f.ref === r, 'the answer to group.join');
}

beforeAll(async () => {
  server = await startTestServer({ calls: { groupMaxPages: 3 }, events: new MemoryEventSink(), now: clock.now });
});

afterAll(async () => {
  await server.close();
});

describe('group calls over raw frames', () => {
  it('tells each page who is there and who comes and goes, relays signals, and reports each join and leave once', async () => {
    const ann = await pageOf('ann');
    const ben = await pageOf('ben');
    const cid = await pageOf('cid');
    const first = await join(ann, 'ann', 'standup', { media: ['audio', 'video'] });
    expect(first).toMatchObject({ t: 'group.joined', group: 'standup', peers: [], ice: [] });
    const annPage = first.page;
    const second = await join(ben, 'ben', 'standup');
    expect(second.peers).toEqual([{ page: annPage, user: 'ann', media: ['audio', 'video'] }]);
    const benPage = second.page;
    expect(await ann.next((f) => f.t === 'group.peer-joined', 'ben joined')).toEqual({
      t: 'group.peer-joined',
      group: 'standup',
      page: benPage,
      user: 'ben',
      media: ['audio'],
    });
    const third = await join(cid, 'cid', 'standup');
    expect((third.peers as Frame[]).map((p) => p.user)).toEqual(['ann', 'ben']);
    await ann.next((f) => f.t === 'group.peer-joined' && f.user === 'cid', 'cid joined (ann)');
    await ben.next((f) => f.t === 'group.peer-joined' && f.user === 'cid', 'cid joined (ben)');

    // The newcomer offers to each page there; the signal names who sent it.
    cid.send({ t: 'group.signal', group: 'standup', to: annPage, data: { sdp: { type: 'offer', sdp: 'v=0' } } });
    expect(await ann.next((f) => f.t === 'group.signal', 'offer')).toEqual({
      t: 'group.signal',
      group: 'standup',
      from: third.page,
      data: { sdp: { type: 'offer', sdp: 'v=0' } },
    });

    clock.advance(1100); // over a second on the service's clock: whole seconds of at least 1
    const r = ++ref;
    ben.send({ t: 'group.leave', ref: r, group: 'standup' });
    expect(await ben.next((f) => f.ref === r, 'left')).toEqual({ t: 'group.left', ref: r, group: 'standup' });
    for (const page of [ann, cid]) {
      expect(await page.next((f) => f.t === 'group.peer-left', 'ben left')).toEqual({
        t: 'group.peer-left',
        group: 'standup',
        page: benPage,
        user: 'ben',
      });
    }
    await cid.close();
    await ann.next((f) => f.t === 'group.peer-left' && f.user === 'cid', 'cid gone');
    await waitFor(() => recorded('group.left', 'standup').length === 2, 'two group.left');
    expect(recorded('group.joined', 'standup').map((e) => e.user)).toEqual(['ann', 'ben', 'cid']);
    const benLeft = recorded('group.left', 'standup').find((e) => e.user === 'ben') as Frame;
    expect(benLeft).toMatchObject({ media: ['audio'], call: 'standup' });
    expect(benLeft.seconds).toBeGreaterThanOrEqual(1);
    expect(benLeft.left_at as number).toBeGreaterThan(benLeft.joined_at as number);
    await ann.close();
    await ben.close();
    await waitFor(() => recorded('group.left', 'standup').length === 3, 'ann left by closing');
  });

  it('refuses a fourth page past the limit with group_full, and joins again once one left', async () => {
    const pages = await Promise.all(['d1', 'd2', 'd3', 'd4'].map((u) => pageOf(u)));
    for (const [i, page] of pages.slice(0, 3).entries()) {
      expect(await join(page, `d${i + 1}`, 'full-house')).toMatchObject({ t: 'group.joined' });
    }
    const [d1, , , d4] = pages as [RawPage, RawPage, RawPage, RawPage];
    expect(await join(d4, 'd4', 'full-house')).toMatchObject({ t: 'error', code: 'group_full' });
    await d1.close();
    expect(await join(d4, 'd4', 'full-house')).toMatchObject({ t: 'group.joined' });
    for (const page of pages) await page.close();
  });

  it('refuses tokens for another group, a call to one person, another user, and signals outside the group', async () => {
    const eve = await pageOf('eve');
    const cases: [Record<string, unknown>, Uint8Array | undefined, string][] = [
      [{ sub: 'eve', group: 'other' }, undefined, 'wrong_call'],
      [{ sub: 'eve', group: undefined, call: { to: 'x' } }, undefined, 'wrong_call'],
      [{ sub: 'zed', group: 'g' }, undefined, 'wrong_user'],
      [{ sub: 'eve', group: 'g' }, deriveKey(server.app.secret, 'channels'), 'bad_token'],
      [{ sub: 'eve', group: 'g', exp: nowSeconds() - 3600 }, undefined, 'token_expired'],
    ];
    for (const [claims, key, code] of cases) {
      const r = ++ref;
      eve.send({ t: 'group.join', ref: r, group: 'g', token: await groupToken(claims, key) });
      expect(await eve.next((f) => f.ref === r, `answer ${r}`), JSON.stringify(claims)).toMatchObject({
        t: 'error',
        code,
        ref: r,
      });
    }
    eve.send({ t: 'group.signal', group: 'g', to: 'x.1', data: {} });
    expect(await eve.next((f) => f.t === 'error', 'not in group')).toMatchObject({ code: 'not_in_group' });
    const r = ++ref;
    eve.send({ t: 'group.leave', ref: r, group: 'g' });
    expect(await eve.next((f) => f.ref === r, 'leave')).toMatchObject({ code: 'not_in_group' });
    const anonymous = await pageOf();
    anonymous.send({ t: 'group.join', ref: 1, group: 'g', token: await groupToken({ sub: 'eve', group: 'g' }) });
    expect(await anonymous.next((f) => f.ref === 1, 'anonymous')).toMatchObject({ code: 'wrong_user' });
    await eve.close();
    await anonymous.close();
  });

  it('answers not_included to an app whose plan has no group calls', async () => {
    const other = await startTestServer({ app: { features: ['calls'] } });
    try {
      const page = await helloPage(
        other.url,
        other.app.key,
        await signToken({ sub: 'u', exp: nowSeconds() + 600 }, { secret: other.app.secret }),
      );
      const token = await signToken(
        { sub: 'u', group: 'g', media: ['audio'], exp: nowSeconds() + 600 },
        { key: deriveKey(other.app.secret, 'calls') },
      );
      page.send({ t: 'group.join', ref: 1, group: 'g', token });
      expect(await page.next((f) => f.ref === 1, 'answer')).toMatchObject({ code: 'not_included' });
      await page.close();
    } finally {
      await other.close();
    }
  });
});
