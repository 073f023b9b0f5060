import { Writable } from 'node:stream';
import { Realtime } from '@realtime/node';
import { deriveKey } from '@realtime/protocol';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { nowSeconds, signToken } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * Signal data nested 5,000 deep: JSON.parse takes it, JSON.stringify overflows the stack. Each
 * signal frame refuses it as a room send does, naming its call, group or stream, and logs nothing.
 */
const DEPTH = 5000;

let server: TestServer;
let sdk: Realtime;
const pages: RawPage[] = [];
/** What the server logged as errors (an unexpected frame failure is one, with its stack). */
const logged: string[] = [];

const identity = (user: string) => signToken({ sub: user, exp: nowSeconds() + 600 }, { secret: server.app.secret });
const callToken = (claims: Record<string, unknown>) =>
  signToken({ media: ['audio'], exp: nowSeconds() + 600, ...claims }, { key: deriveKey(server.app.secret, 'calls') });

async function pageOf(user: string): Promise<RawPage> {
  const page = await helloPage(server.url, server.app.key, await identity(user));
  pages.push(page);
  return page;
}

/** Sends the frame with `"data":` an object `depth` deep, as raw text (JSON.stringify could not write it). */
function sendDeep(page: RawPage, frame: Record<string, unknown>, depth = DEPTH): void {
  const head = JSON.stringify(frame).slice(0, -1);
  page.sendText(`${head},"data":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`);
}

let ref = 0;
async function answer(page: RawPage, frame: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = ++ref;
  page.send({ ...frame, ref: r });
  return page.next((f) => f.ref === r, `the answer to ${String(frame.t)}`);
}

/**
 * Finds the depth where the frame's data is first refused as nested too deeply, and sends the
 * depths around it: each is handled (relayed, or refused bad_frame naming `about`), none fails.
 * A frame with a ref after each marks when the page's queue has handled it.
 */
async function walkTheEdge(page: RawPage, frame: Record<string, unknown>, about: Record<string, unknown>) {
  const tooDeep = async (depth: number): Promise<boolean> => {
    const from = page.frames.length;
    sendDeep(page, frame, depth);
    await answer(page, { t: 'call.accept', call: 'call_marker' });
    const errors = page.frames.slice(from).filter((f) => f.t === 'error' && f.call !== 'call_marker');
    for (const error of errors) expect(error).toMatchObject({ code: 'bad_frame', ...about });
    return errors.some((f) => f.message === `${String(frame.t)}: data is nested too deeply`);
  };
  let passed = 1;
  let refused = DEPTH;
  expect(await tooDeep(refused)).toBe(true);
  while (refused - passed > 1) {
    const mid = Math.floor((passed + refused) / 2);
    if (await tooDeep(mid)) refused = mid;
    else passed = mid;
  }
  for (let depth = passed - 2; depth <= refused + 2; depth++) await tooDeep(depth);
  expect(logged).toEqual([]);
}

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logged.push(String(chunk));
      done();
    },
  });
  server = await startTestServer({ logger: pino({ level: 'error' }, sink) });
  sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
});

beforeEach(() => {
  logged.length = 0;
});

afterAll(async () => {
  await Promise.all(pages.map((p) => p.close()));
  await sdk.close();
  await server.close();
});

describe('signal data nested too deeply', () => {
  it('call.signal: refused bad_frame naming the call; the call goes on', async () => {
    const alice = await pageOf('deep-alice');
    const bob = await pageOf('deep-bob');
    const placed = await answer(alice, {
      t: 'call.invite',
      to: 'deep-bob',
      token: await callToken({ sub: 'deep-alice', call: { to: 'deep-bob' } }),
    });
    const call = placed.call;
    expect(await answer(bob, { t: 'call.accept', call })).toMatchObject({ t: 'call.accepted' });
    sendDeep(alice, { t: 'call.signal', call });
    expect(await alice.next((f) => f.t === 'error', 'the refusal')).toEqual({
      t: 'error',
      code: 'bad_frame',
      message: 'call.signal: data is nested too deeply',
      call,
    });
    alice.send({ t: 'call.signal', call, data: { candidate: { candidate: 'c' } } });
    expect(await bob.next((f) => f.t === 'call.signal', 'the next signal')).toMatchObject({ call });
    expect(logged).toEqual([]);
  });

  it('call.signal at every depth around where JSON.stringify gives up: relayed or refused, never a failure', async () => {
    const alice = await pageOf('edge-alice');
    const bob = await pageOf('edge-bob');
    const placed = await answer(alice, {
      t: 'call.invite',
      to: 'edge-bob',
      token: await callToken({ sub: 'edge-alice', call: { to: 'edge-bob' } }),
    });
    await answer(bob, { t: 'call.accept', call: placed.call });
    await walkTheEdge(alice, { t: 'call.signal', call: placed.call }, { call: placed.call });
  });

  it('group.signal and stream.signal at every depth around the edge: never a failure', async () => {
    const token = (user: string) => callToken({ sub: user, group: 'edge-room' });
    const ann = await pageOf('edge-ann');
    const ben = await pageOf('edge-ben');
    const joined = await answer(ann, { t: 'group.join', group: 'edge-room', token: await token('edge-ann') });
    await answer(ben, { t: 'group.join', group: 'edge-room', token: await token('edge-ben') });
    await walkTheEdge(ben, { t: 'group.signal', group: 'edge-room', to: joined.page }, { group: 'edge-room' });
    const cam = await pageOf('edge-cam');
    const grant = await sdk.streamGrant('edge-live', { role: 'presenter', userId: 'edge-cam' });
    await answer(cam, { t: 'stream.present', stream: 'edge-live', grant });
    await walkTheEdge(cam, { t: 'stream.signal', stream: 'edge-live' }, { stream: 'edge-live' });
  });

  it('group.signal: refused bad_frame naming the group; signals between its pages go on', async () => {
    const token = (user: string) => callToken({ sub: user, group: 'deep-room' });
    const ann = await pageOf('deep-ann');
    const ben = await pageOf('deep-ben');
    const joined = await answer(ann, { t: 'group.join', group: 'deep-room', token: await token('deep-ann') });
    await answer(ben, { t: 'group.join', group: 'deep-room', token: await token('deep-ben') });
    sendDeep(ben, { t: 'group.signal', group: 'deep-room', to: joined.page });
    expect(await ben.next((f) => f.t === 'error', 'the refusal')).toEqual({
      t: 'error',
      code: 'bad_frame',
      message: 'group.signal: data is nested too deeply',
      group: 'deep-room',
    });
    ben.send({ t: 'group.signal', group: 'deep-room', to: joined.page, data: { candidate: { candidate: 'c' } } });
    expect(await ann.next((f) => f.t === 'group.signal', 'the next signal')).toMatchObject({ group: 'deep-room' });
    expect(logged).toEqual([]);
  });

  it('stream.signal: refused bad_frame naming the stream; the page stays on it', async () => {
    const cam = await pageOf('deep-cam');
    const grant = await sdk.streamGrant('deep-live', { role: 'presenter', userId: 'deep-cam' });
    expect(await answer(cam, { t: 'stream.present', stream: 'deep-live', grant })).toMatchObject({
      t: 'stream.presenting',
    });
    sendDeep(cam, { t: 'stream.signal', stream: 'deep-live' });
    expect(await cam.next((f) => f.t === 'error', 'the refusal')).toEqual({
      t: 'error',
      code: 'bad_frame',
      message: 'stream.signal: data is nested too deeply',
      stream: 'deep-live',
    });
    expect(await answer(cam, { t: 'stream.leave', stream: 'deep-live' })).toMatchObject({ t: 'stream.left' });
    expect(logged).toEqual([]);
  });
});
