/**
 * A secret rotated with an overlap, end to end over real HTTP and WebSockets (docs/operations.md,
 * "Rotating a secret"): during the overlap the API takes requests signed under either secret,
 * tokens minted under either hold, and webhooks carry a signature under each, so the node SDK's
 * verifier takes them with either secret; once the old secret retires (by the clock or by the
 * operator) it is refused with `bad_signature` and `bad_token`. Runs on every engine (ENGINE_SUITES).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Realtime, verifyWebhook } from '@realtime/node';
import { CLOSE, HEADERS } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retireSecret, rotateSecret, setWebhookSigner } from '../src/apps/secret-rotation.js';
import { newApp } from '../src/index.js';
import { API, send, startTestServer, type TestServer } from './helpers.js';
import { helloPage, openRawPage, type RawPage } from './pages.js';

interface Captured {
  headers: IncomingHttpHeaders;
  body: Buffer;
  path: string;
}

/** A customer's webhook address that keeps each request as it came, and takes it (204). */
async function captureReceiver() {
  const got: Captured[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks), path: req.url ?? '' });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/in?x=1`,
    got,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const WINDOW_MS = 120_000;

describe('a secret rotated with an overlap', () => {
  let receiver: Awaited<ReturnType<typeof captureReceiver>>;
  let server: TestServer;
  /** The server's clock runs this far ahead of the real one: the window ends without waiting. */
  let ahead = 0;
  const now = () => Date.now() + ahead;
  const app = newApp({ name: 'rotating' });
  const oldSecret = app.secret;
  let newSecret = '';
  /** The secret the app signs with now (test webhooks are requested with it). */
  let current = oldSecret;
  const pages: RawPage[] = [];

  beforeAll(async () => {
    receiver = await captureReceiver();
    server = await startTestServer({ app: { ...app, webhook: receiver.url }, allowPrivateWebhooks: true, now });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await Promise.all(sdks.map((sdk) => sdk.close()));
    await server?.close();
    await receiver?.close();
  });

  /** Past the node's app cache (a second of its clock): what the store holds now applies. */
  const pastCache = () => {
    ahead += 1100;
  };
  const emitUnder = (secret: string) =>
    send(server, { path: `${API}/emit`, body: JSON.stringify({ rooms: ['r'], event: 'e', data: 1 }), secret });
  /** The customer's server minting tokens with the node SDK under one secret. */
  const sdks: Realtime[] = [];
  const sdkOf = (secret: string) => {
    const sdk = new Realtime({ url: server.url, key: app.key, secret });
    sdks.push(sdk);
    return sdk;
  };
  /**
   * A test webhook, as the customer's address received it: the one new request holding the
   * `webhook.test` event (the pages the test opened send batches of their own at any moment).
   */
  const testWebhook = async (): Promise<Captured> => {
    const before = receiver.got.length;
    const answer = await send(server, { path: `${API}/webhooks/test`, method: 'POST', body: '', secret: current });
    expect(answer.json, answer.text).toMatchObject({ ok: true, delivered: true });
    const tests = receiver.got.slice(before).filter((request) => request.body.toString().includes('"webhook.test"'));
    expect(tests).toHaveLength(1);
    return tests[0] as Captured;
  };
  const verifyWith = (secret: string, request: Captured, drop?: string) => {
    const headers = { ...request.headers };
    if (drop !== undefined) delete headers[drop.toLowerCase()];
    return verifyWebhook({
      rawBody: request.body,
      headers,
      path: request.path,
      key: app.key,
      secret,
      now: Date.now(),
    });
  };
  const hello = async (identity: string) => {
    const p = await openRawPage(server.url, app.key);
    pages.push(p);
    p.send({ t: 'hello', v: 1, identity });
    return p;
  };
  let ref = 0;
  const join = async (secret: string) => {
    const p = await helloPage(server.url, app.key);
    pages.push(p);
    const r = ++ref;
    p.send({ t: 'join', ref: r, room: 'lobby', token: await sdkOf(secret).roomToken('lobby') });
    return p.next((f) => f.ref === r);
  };

  it('before a rotation: one secret, one signature header', async () => {
    expect((await emitUnder(oldSecret)).status).toBe(200);
    const hook = await testWebhook();
    expect(hook.headers[HEADERS.otherSignature.toLowerCase()]).toBeUndefined();
    expect(verifyWith(oldSecret, hook).ok).toBe(true);
  });

  it('during the overlap: the API, tokens and webhooks take either secret', async () => {
    const rotated = await rotateSecret(server.apps, app.key, { overlapMs: WINDOW_MS, signer: 'new', nowMs: now() });
    if (!rotated.ok) throw new Error(`rotation refused: ${rotated.error}`);
    newSecret = rotated.secret;
    current = newSecret;
    expect(rotated.rotation).toEqual({ retiresAt: expect.any(Number), signer: 'new' });
    pastCache();

    // API calls signed under the old and the new secret are both taken; any other is refused.
    expect((await emitUnder(oldSecret)).json).toEqual({ ok: true, ids: {} });
    expect((await emitUnder(newSecret)).json).toEqual({ ok: true, ids: {} });
    const stranger = await emitUnder('not-a-secret-of-this-app-000000');
    expect([stranger.status, stranger.json.error]).toEqual([401, 'bad_signature']);

    // Identities and room tokens minted under either secret hold.
    for (const secret of [oldSecret, newSecret]) {
      const p = await hello(await sdkOf(secret).identityToken(`user-${sdks.length}`));
      expect(await p.next((f) => f.t === 'welcome')).toMatchObject({ t: 'welcome' });
      expect(await join(secret)).toMatchObject({ t: 'joined' });
    }
    expect(await join('not-a-secret-of-this-app-000000')).toMatchObject({ t: 'error', code: 'bad_token' });

    // The webhook is signed with the new secret and carries the old one's signature too: the SDK's
    // verifier takes it with either secret.
    const hook = await testWebhook();
    expect(hook.headers[HEADERS.otherSignature.toLowerCase()]).toMatch(/^[0-9a-f]{64}$/);
    expect(verifyWith(oldSecret, hook)).toMatchObject({ ok: true, events: [{ type: 'webhook.test' }] });
    expect(verifyWith(newSecret, hook)).toMatchObject({ ok: true, events: [{ type: 'webhook.test' }] });
    // X-Service-Signature itself, as section 5.5 checks it, is the new secret's.
    expect(verifyWith(newSecret, hook, HEADERS.otherSignature).ok).toBe(true);
    expect(verifyWith(oldSecret, hook, HEADERS.otherSignature)).toEqual({ ok: false, error: 'bad_signature' });
    expect(verifyWith('not-a-secret-of-this-app-000000', hook)).toEqual({ ok: false, error: 'bad_signature' });
  });

  it('the operator may have the old secret sign webhooks for the rest of the overlap', async () => {
    expect(await setWebhookSigner(server.apps, app.key, 'old', now())).toMatchObject({ ok: true });
    pastCache();
    const hook = await testWebhook();
    expect(verifyWith(oldSecret, hook, HEADERS.otherSignature).ok).toBe(true);
    expect(verifyWith(newSecret, hook, HEADERS.otherSignature)).toEqual({ ok: false, error: 'bad_signature' });
    expect(verifyWith(newSecret, hook).ok).toBe(true);
  });

  it('once the window is over the old secret is refused: bad_signature, bad_token, one signature header', async () => {
    ahead += WINDOW_MS;
    const old = await emitUnder(oldSecret);
    expect([old.status, old.json.error]).toEqual([401, 'bad_signature']);
    expect((await emitUnder(newSecret)).status).toBe(200);

    const refused = await hello(await sdkOf(oldSecret).identityToken('late'));
    expect((await refused.closed).code).toBe(CLOSE.badIdentity);
    expect(await join(oldSecret)).toMatchObject({ t: 'error', code: 'bad_token' });
    expect(await join(newSecret)).toMatchObject({ t: 'joined' });

    const hook = await testWebhook();
    expect(hook.headers[HEADERS.otherSignature.toLowerCase()]).toBeUndefined();
    expect(verifyWith(newSecret, hook).ok).toBe(true);
    expect(verifyWith(oldSecret, hook)).toEqual({ ok: false, error: 'bad_signature' });
  });

  it('retired by the operator before the window ends: refused from then on', async () => {
    const second = await rotateSecret(server.apps, app.key, { overlapMs: WINDOW_MS, signer: 'new', nowMs: now() });
    if (!second.ok) throw new Error(`rotation refused: ${second.error}`);
    current = second.secret;
    pastCache();
    expect((await emitUnder(newSecret)).status).toBe(200);
    expect((await emitUnder(second.secret)).status).toBe(200);
    expect(await join(newSecret)).toMatchObject({ t: 'joined' });

    expect(await retireSecret(server.apps, app.key, now())).toEqual({ ok: true, retired: true });
    pastCache();
    const old = await emitUnder(newSecret);
    expect([old.status, old.json.error]).toEqual([401, 'bad_signature']);
    expect(await join(newSecret)).toMatchObject({ t: 'error', code: 'bad_token' });
    expect((await emitUnder(second.secret)).status).toBe(200);
    expect(verifyWith(newSecret, await testWebhook())).toEqual({ ok: false, error: 'bad_signature' });
  });
});
