import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, send, startTestServer, type TestServer } from './helpers.js';

const body = JSON.stringify({ rooms: ['lobby'], event: 'hello', data: 1 });
const path = `${API}/emit`;
const now = () => String(Math.floor(Date.now() / 1000));

describe('signature checks (section 5.2), in order', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('accepts a correct signature', async () => {
    const a = await send(server, { path, body });
    expect(a.status).toBe(200);
    expect(a.json).toEqual({ ok: true, ids: {} });
  });

  for (const header of ['X-Service-Site', 'X-Service-Timestamp', 'X-Service-Signature']) {
    it(`answers missing_signature without ${header}`, async () => {
      const a = await send(server, { path, body, headers: [[header, '']] });
      expect(a.status).toBe(401);
      expect(a.json.error).toBe('missing_signature');
      expect(a.json.message).toContain(header);
    });
  }

  it('answers missing_signature with no headers at all', async () => {
    const a = await send(server, { path, body, unsigned: true });
    expect([a.status, a.json.error]).toEqual([401, 'missing_signature']);
  });

  for (const timestamp of ['12a4', '-5', '1.5', '1 7', '1234567890123', '0x10', '1e9']) {
    it(`answers missing_signature for the timestamp ${JSON.stringify(timestamp)}`, async () => {
      const a = await send(server, { path, body, headers: [['X-Service-Timestamp', timestamp]] });
      expect([a.status, a.json.error]).toEqual([401, 'missing_signature']);
    });
  }

  it('answers stale_signature 301 seconds off either way, and accepts 299', async () => {
    const t = Math.floor(Date.now() / 1000);
    for (const offset of [301, -301, 10_000]) {
      const a = await send(server, { path, body, timestamp: String(t + offset) });
      expect([a.status, a.json.error]).toEqual([401, 'stale_signature']);
    }
    for (const offset of [299, -299]) {
      const a = await send(server, { path, body, timestamp: String(t + offset) });
      expect(a.status).toBe(200);
    }
  });

  it('answers unknown_site for a key no app has', async () => {
    const a = await send(server, { path, body, site: 'nobody' });
    expect([a.status, a.json.error]).toEqual([401, 'unknown_site']);
  });

  it('answers bad_signature for a wrong secret, path, query, body or method', async () => {
    const wrongSecret = await send(server, { path, body, secret: 'not-the-secret-at-all' });
    expect([wrongSecret.status, wrongSecret.json.error]).toEqual([401, 'bad_signature']);

    const signedOther = await send(server, {
      path,
      body,
      headers: [['X-Service-Signature', 'a'.repeat(64)]],
    });
    expect(signedOther.json.error).toBe('bad_signature');

    for (const signature of ['A'.repeat(64), 'zz', 'g'.repeat(64)]) {
      const a = await send(server, { path, body, headers: [['X-Service-Signature', signature]] });
      expect(a.json.error).toBe('bad_signature');
    }
  });

  it('signs the path and query exactly as sent', async () => {
    // Same request signed for a different path or query: refused.
    const { deriveKey, sign } = await import('@realtime/protocol');
    const key = deriveKey(server.app.secret, 'publish');
    const timestamp = now();
    const signedForOther = sign({ key, timestamp, method: 'POST', path: `${API}/emit?x=1`, body });
    const a = await send(server, {
      path,
      body,
      headers: [
        ['X-Service-Timestamp', timestamp],
        ['X-Service-Signature', signedForOther],
      ],
    });
    expect(a.json.error).toBe('bad_signature');

    const online = await send(server, { path: `${API}/online?ids=a%2Cb`, method: 'GET' });
    expect(online.status).toBe(200);
    const signedDecoded = sign({ key, timestamp, method: 'GET', path: `${API}/online?ids=a,b`, body: '' });
    const b = await send(server, {
      path: `${API}/online?ids=a%2Cb`,
      method: 'GET',
      headers: [
        ['X-Service-Timestamp', timestamp],
        ['X-Service-Signature', signedDecoded],
      ],
    });
    expect(b.json.error).toBe('bad_signature');
  });

  it('signs the body byte for byte', async () => {
    const { deriveKey, sign } = await import('@realtime/protocol');
    const key = deriveKey(server.app.secret, 'publish');
    const timestamp = now();
    const spaced = JSON.stringify({ rooms: ['lobby'], event: 'hello', data: 1 }, null, 1);
    const signature = sign({ key, timestamp, method: 'POST', path, body: spaced });
    const a = await send(server, {
      path,
      body,
      headers: [
        ['X-Service-Timestamp', timestamp],
        ['X-Service-Signature', signature],
      ],
    });
    expect(a.json.error).toBe('bad_signature');
    const b = await send(server, { path, body: spaced });
    expect(b.status).toBe(200);
  });

  it('checks missing before stale before unknown site before bad signature', async () => {
    const stale = String(Math.floor(Date.now() / 1000) - 1000);
    // Missing signature and stale and unknown site: missing wins.
    const a = await send(server, {
      path,
      body,
      site: 'nobody',
      timestamp: stale,
      headers: [['X-Service-Signature', '']],
    });
    expect(a.json.error).toBe('missing_signature');
    // Stale and unknown site and bad signature: stale wins.
    const b = await send(server, { path, body, site: 'nobody', timestamp: stale, secret: 'wrong-secret-wrong' });
    expect(b.json.error).toBe('stale_signature');
    // Unknown site and bad signature: unknown wins.
    const c = await send(server, { path, body, site: 'nobody', secret: 'wrong-secret-wrong' });
    expect(c.json.error).toBe('unknown_site');
  });

  it('refuses a repeated signature header with bad_request', async () => {
    for (const header of ['X-Service-Site', 'X-Service-Timestamp', 'X-Service-Signature', 'Content-Type']) {
      const a = await send(server, {
        path,
        body,
        headers: [
          [header, 'x'],
          [header, 'y'],
        ],
      });
      expect([a.status, a.json.error]).toEqual([400, 'bad_request']);
      expect(a.json.message).toContain('more than once');
    }
  });
});
