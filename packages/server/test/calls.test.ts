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
const pages: RawPage[] = [];

const identity = (user: string) => signToken({ sub: user, exp: nowSeconds() + 600 }, { secret: server.app.secret });
const callToken = (claims: Record<string, unknown>, key?: Uint8Array) =>
  signToken(
    { media: ['audio', 'video'], exp: nowSeconds() + 600, ...claims },
    { key: key ?? deriveKey(server.app.secret, 'calls') },
  );

async function pageOf(user: string | undefined): Promise<RawPage> {
  const page = await helloPage(server.url, server.app.key, user === undefined ? undefined : await identity(user));
  pages.push(page);
  return page;
}

const recorded = () => (server.events as MemoryEventSink).events.map((e) => e.event as unknown as Frame);
const endedOf = (call: unknown) => recorded().filter((e) => e.type === 'call.ended' && e.call_id === call);

let ref = 0;
/** alice calls bob; answers the placed call's id. */
async function invite(from: RawPage, fromUser: string, to: string, extra: Record<string, unknown> = {}) {
  const r = ++ref;
  from.send({ t: 'call.invite', ref: r, to, token: await callToken({ sub: fromUser, call: { to, ...extra } }) });
  const answer = await from.next((f) => f.ref === r, 'the answer to call.invite');
  return answer;
}

async function accept(page: RawPage, call: unknown): Promise<Frame> {
  const r = ++ref;
  page.send({ t: 'call.accept', ref: r, call });
  return page.next((f) => f.ref === r, 'the answer to call.accept');
}

const ended = (page: RawPage, call: unknown) =>
  page.next((f) => f.t === 'call.ended' && f.call === call, `call.ended of ${String(call)}`);

beforeAll(async () => {
  server = await startTestServer({ calls: { ringMs: 1500 }, events: new MemoryEventSink(), now: clock.now });
});

afterAll(async () => {
  await server.close();
});

describe('calls between two people over raw frames', () => {
  it('rings every page of the callee, connects on one, relays signals both ways, and reports completed once', async () => {
    const alice = await pageOf('alice');
    const bob1 = await pageOf('bob');
    const bob2 = await pageOf('bob');
    const placed = await invite(alice, 'alice', 'bob', { name: 'chat-42' });
    expect(placed).toMatchObject({ t: 'call.placed', call: expect.stringMatching(/^call_/), ice: [] });
    const call = placed.call;
    for (const bob of [bob1, bob2]) {
      expect(await bob.next((f) => f.t === 'call.ring', 'ring')).toEqual({
        t: 'call.ring',
        call,
        from: 'alice',
        media: ['audio', 'video'],
        ice: [],
      });
    }
    expect(await accept(bob2, call)).toEqual({ t: 'call.accepted', ref, call });
    await alice.next((f) => f.t === 'call.answered' && f.call === call, 'answered');
    expect(await ended(bob1, call)).toMatchObject({ reason: 'elsewhere' });
    // A page of bob opened after the answer: the call never reached it.
    const bob3 = await pageOf('bob');
    // The page that answered is not told the call ended elsewhere.
    alice.send({ t: 'call.signal', call, data: { sdp: { type: 'offer', sdp: 'v=0' } } });
    expect(await bob2.next((f) => f.t === 'call.signal', 'offer')).toEqual({
      t: 'call.signal',
      call,
      data: { sdp: { type: 'offer', sdp: 'v=0' } },
    });
    bob2.send({ t: 'call.signal', call, data: { candidate: { candidate: 'c', sdpMid: '0' } } });
    expect(await alice.next((f) => f.t === 'call.signal', 'candidate')).toMatchObject({ data: { candidate: {} } });
    // bob1 stopped ringing: it may not signal or hang up this call.
    bob1.send({ t: 'call.signal', call, data: { x: 1 } });
    expect(await bob1.next((f) => f.t === 'error', 'no_call')).toMatchObject({ code: 'no_call', call });
    clock.advance(1100); // over a second on the service's clock: whole seconds of at least 1
    alice.send({ t: 'call.hangup', call });
    expect(await ended(alice, call)).toMatchObject({ reason: 'completed' });
    expect(await ended(bob2, call)).toMatchObject({ reason: 'completed' });
    // The next ring to bob's pages comes after anything the hang-up sent them.
    const next = (await invite(alice, 'alice', 'bob')).call;
    for (const bob of [bob1, bob3]) await bob.next((f) => f.t === 'call.ring' && f.call === next, 'the next ring');
    alice.send({ t: 'call.hangup', call: next });
    await waitFor(() => endedOf(call).length === 1, 'call.ended recorded');
    const event = endedOf(call)[0] as Frame;
    expect(event).toMatchObject({
      id: `ev_${String(call).slice(5)}`,
      call: 'chat-42',
      from: 'alice',
      to: 'bob',
      media: ['audio', 'video'],
      reason: 'completed',
    });
    expect(event.seconds).toBeGreaterThanOrEqual(1);
    expect(event.seconds).toBeLessThan(10);
    expect(event.answered_at as number).toBeGreaterThanOrEqual(event.started_at as number);
    expect(event.ended_at as number).toBeGreaterThanOrEqual(event.answered_at as number);
    // Each page the call reached heard it end once: bob1 `elsewhere` at the answer, bob2 at the hang-up.
    expect(bob1.frames.filter((f) => f.t === 'call.ended' && f.call === call)).toHaveLength(1);
    expect(bob2.frames.filter((f) => f.t === 'call.ended' && f.call === call)).toHaveLength(1);
    expect(bob3.frames.filter((f) => f.call === call)).toEqual([]);
  });

  it('ends missed when nobody answers in the ring time, with seconds 0 and no answered_at', async () => {
    const carol = await pageOf('carol');
    const dave = await pageOf('dave');
    const { call } = await invite(carol, 'carol', 'dave');
    await dave.next((f) => f.t === 'call.ring', 'ring');
    expect(await ended(carol, call)).toMatchObject({ reason: 'missed' });
    expect(await ended(dave, call)).toMatchObject({ reason: 'missed' });
    await waitFor(() => endedOf(call).length === 1, 'call.ended missed');
    expect(endedOf(call)[0]).toMatchObject({ reason: 'missed', seconds: 0, answered_at: null, call });
  });

  it('ends rejected when a page of the callee rejects (elsewhere on their other page), cancelled when the caller hangs up first', async () => {
    const erin = await pageOf('erin');
    const frank = await pageOf('frank');
    const frankLaptop = await pageOf('frank');
    const first = (await invite(erin, 'erin', 'frank')).call;
    await frank.next((f) => f.t === 'call.ring' && f.call === first, 'ring');
    await frankLaptop.next((f) => f.t === 'call.ring' && f.call === first, 'ring');
    frank.send({ t: 'call.reject', call: first });
    expect(await ended(erin, first)).toMatchObject({ reason: 'rejected' });
    expect(await ended(frank, first)).toMatchObject({ reason: 'rejected' });
    expect(await ended(frankLaptop, first)).toMatchObject({ reason: 'elsewhere' });
    const second = (await invite(erin, 'erin', 'frank')).call;
    await frank.next((f) => f.t === 'call.ring' && f.call === second, 'ring');
    erin.send({ t: 'call.hangup', call: second });
    expect(await ended(frank, second)).toMatchObject({ reason: 'cancelled' });
    await waitFor(() => endedOf(first).length === 1 && endedOf(second).length === 1, 'both reported');
    expect(endedOf(first)[0]).toMatchObject({ reason: 'rejected' });
    expect(endedOf(second)[0]).toMatchObject({ reason: 'cancelled' });
    for (const page of [frank, frankLaptop]) {
      expect(page.frames.filter((f) => f.t === 'call.ended' && f.call === first)).toHaveLength(1);
    }
  });

  it('answers busy when the callee is in a call, and in_call when the caller is', async () => {
    const gina = await pageOf('gina');
    const hank = await pageOf('hank');
    const ivan = await pageOf('ivan');
    const call = (await invite(gina, 'gina', 'hank')).call;
    await hank.next((f) => f.t === 'call.ring', 'ring');
    await accept(hank, call);
    const placed = await invite(ivan, 'ivan', 'hank');
    expect(placed).toMatchObject({ t: 'call.placed' });
    expect(await ended(ivan, placed.call)).toMatchObject({ reason: 'busy' });
    expect(hank.frames.some((f) => f.t === 'call.ring' && f.call === placed.call)).toBe(false);
    await waitFor(() => endedOf(placed.call).length === 1, 'busy reported');
    expect(endedOf(placed.call)[0]).toMatchObject({ reason: 'busy', from: 'ivan', to: 'hank', seconds: 0 });
    expect(await invite(gina, 'gina', 'ivan')).toMatchObject({ t: 'error', code: 'in_call' });
    gina.send({ t: 'call.hangup', call });
    await ended(hank, call);
  });

  it('ends failed when a page of the call closes without hanging up, or reports that its media failed', async () => {
    const jack = await pageOf('jack');
    const kate = await pageOf('kate');
    const first = (await invite(jack, 'jack', 'kate')).call;
    await kate.next((f) => f.t === 'call.ring', 'ring');
    await accept(kate, first);
    await kate.close();
    expect(await ended(jack, first)).toMatchObject({ reason: 'failed' });
    const kate2 = await pageOf('kate');
    const second = (await invite(jack, 'jack', 'kate')).call;
    await kate2.next((f) => f.t === 'call.ring' && f.call === second, 'ring');
    await accept(kate2, second);
    kate2.send({ t: 'call.hangup', call: second, failed: true });
    expect(await ended(jack, second)).toMatchObject({ reason: 'failed' });
    await waitFor(() => endedOf(first).length === 1 && endedOf(second).length === 1, 'both reported');
  });

  it('rings a page of the callee that opens while the call rings', async () => {
    const lena = await pageOf('lena');
    const { call } = await invite(lena, 'lena', 'mike');
    const mike = await pageOf('mike');
    expect(await mike.next((f) => f.t === 'call.ring', 'ring')).toMatchObject({ call, from: 'lena' });
    lena.send({ t: 'call.hangup', call });
    await ended(mike, call);
  });
});

describe('call frames refused', () => {
  it('refuses call tokens that are not for this page, call or app', async () => {
    const nina = await pageOf('nina');
    const base = { sub: 'nina', call: { to: 'omar' } };
    const cases: [Record<string, unknown>, Uint8Array | undefined, string][] = [
      [base, deriveKey(server.app.secret, 'channels'), 'bad_token'],
      [base, deriveKey('another-secret-of-another-app', 'calls'), 'bad_token'],
      [{ ...base, exp: nowSeconds() - 3600 }, undefined, 'token_expired'],
      [{ ...base, sub: 'omar', call: { to: 'nina' } }, undefined, 'wrong_user'],
      [{ sub: 'nina', call: { to: 'paul' } }, undefined, 'wrong_call'],
      [{ sub: 'nina', group: 'standup' }, undefined, 'wrong_call'],
      [{ ...base, media: ['video'] }, undefined, 'bad_token'],
    ];
    for (const [claims, key, code] of cases) {
      const r = ++ref;
      nina.send({ t: 'call.invite', ref: r, to: 'omar', token: await callToken(claims, key) });
      const answer = await nina.next((f) => f.ref === r, `answer ${r}`);
      expect(answer, JSON.stringify(claims)).toMatchObject({ t: 'error', code, ref: r });
      expect(typeof answer.message).toBe('string');
    }
  });

  it('refuses an invite-then-hang-up loop rate_limited once the caller placed 5, naming the bound', async () => {
    const tess = await pageOf('tess');
    const uma = await pageOf('uma');
    // One call token, reused as in the report.
    const token = await callToken({ sub: 'tess', call: { to: 'uma' } });
    const answers: Frame[] = [];
    for (let i = 0; i < 8; i++) {
      const r = ++ref;
      tess.send({ t: 'call.invite', ref: r, to: 'uma', token });
      const answer = await tess.next((f) => f.ref === r, `the answer to invite ${i}`);
      answers.push(answer);
      if (answer.t === 'call.placed') tess.send({ t: 'call.hangup', call: answer.call });
    }
    expect(answers.map((a) => (a.t === 'error' ? a.code : a.t))).toEqual([
      ...Array<string>(5).fill('call.placed'),
      ...Array<string>(3).fill('rate_limited'),
    ]);
    expect(answers[5]).toEqual({
      t: 'error',
      code: 'rate_limited',
      ref: answers[5]?.ref,
      // 6 s from the first token, less what refilled since (a slow machine).
      message: expect.stringMatching(
        /^too many calls placed by this user: at most 10 a minute, 5 at once \(calls\.invites\.perCaller\); try again in [1-6] s$/,
      ),
    });
    // Another caller's ring comes after any of tess's: uma rang 5 times, each reported once.
    const vera = await pageOf('vera');
    const other = (await invite(vera, 'vera', 'uma')).call;
    await uma.next((f) => f.t === 'call.ring' && f.call === other, "vera's ring");
    vera.send({ t: 'call.hangup', call: other });
    expect(uma.frames.filter((f) => f.t === 'call.ring' && f.from === 'tess')).toHaveLength(5);
    await waitFor(
      () => recorded().filter((e) => e.type === 'call.ended' && e.from === 'tess').length === 5,
      'five call.ended',
    );
  });

  it('refuses anonymous pages, unknown calls, bad fields and signals over 64 KB', async () => {
    const anonymous = await pageOf(undefined);
    let r = ++ref;
    anonymous.send({ t: 'call.invite', ref: r, to: 'x', token: await callToken({ sub: 'y', call: { to: 'x' } }) });
    expect(await anonymous.next((f) => f.ref === r, 'answer')).toMatchObject({ code: 'wrong_user' });
    const quinn = await pageOf('quinn');
    r = ++ref;
    quinn.send({ t: 'call.accept', ref: r, call: 'call_nope' });
    expect(await quinn.next((f) => f.ref === r, 'answer')).toMatchObject({ code: 'no_call', call: 'call_nope' });
    quinn.send({ t: 'call.hangup', call: 'call_nope', failed: 'yes' });
    expect(await quinn.next((f) => f.t === 'error', 'bad field')).toMatchObject({
      code: 'bad_frame',
      call: 'call_nope',
    });
    quinn.send({ t: 'call.signal', call: 'call_nope', data: { sdp: 'x'.repeat(70_000) } });
    expect(await quinn.next((f) => f.t === 'error' && f.code === 'too_large', 'too large')).toMatchObject({
      call: 'call_nope',
    });
    quinn.send({ t: 'call.signal', call: 'call_nope', data: 'text' });
    expect(await quinn.next((f) => f.t === 'error' && f.code === 'bad_frame', 'data not an object')).toBeTruthy();
  });

  it('answers not_included to an app whose plan has no calls', async () => {
    const other = await startTestServer({ app: { features: ['history', 'presence'] } });
    try {
      const page = await helloPage(
        other.url,
        other.app.key,
        await signToken({ sub: 'rita', exp: nowSeconds() + 600 }, { secret: other.app.secret }),
      );
      const token = await signToken(
        { sub: 'rita', call: { to: 'sam' }, media: ['audio'], exp: nowSeconds() + 600 },
        { key: deriveKey(other.app.secret, 'calls') },
      );
      page.send({ t: 'call.invite', ref: 1, to: 'sam', token });
      expect(await page.next((f) => f.ref === 1, 'answer')).toMatchObject({ t: 'error', code: 'not_included' });
      await page.close();
    } finally {
      await other.close();
    }
  });
});
