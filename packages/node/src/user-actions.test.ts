import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLOSE, SOCKET_PATH } from '@realtime/protocol';
import { newApp, type RunningServer, startServer } from '@realtime/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { Realtime, RealtimeError } from './index.js';

/** A page of the user that says hello with its identity; resolves once welcomed, with its close to come. */
async function userPage(url: string, site: string, identity: string): Promise<{ closed: Promise<number> }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${SOCKET_PATH}?site=${site}`);
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.on('message', (data) => {
      if (JSON.parse(data.toString()).t === 'welcome') resolve();
    });
    ws.once('open', () => ws.send(JSON.stringify({ t: 'hello', v: 1, identity })));
    ws.once('error', reject);
  });
  return { closed };
}

describe('@realtime/node: disconnect, revokeTokens, idempotencyKey', () => {
  let server: RunningServer;
  let dataDir: string;
  let realtime: Realtime;
  const app = newApp({ name: 'sdk-users' });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'realtime-sdk-users-'));
    server = await startServer({ host: '127.0.0.1', port: 0, dataDir, apps: [app], logLevel: 'silent' });
    realtime = new Realtime({ url: server.url, key: app.key, secret: app.secret });
  });
  afterAll(async () => {
    await realtime.close();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('disconnect closes the pages of the user with 4004', async () => {
    const page = await userPage(server.url, app.key, await realtime.identityToken('alice'));
    await realtime.disconnect('alice');
    expect(await page.closed).toBe(CLOSE.disconnected);
  });

  it('revokeTokens (before defaults to now) closes pages with older identities with 4005', async () => {
    const identity = await realtime.identityToken('bob');
    const page = await userPage(server.url, app.key, identity);
    // iat is whole seconds: a revocation a second later covers the identity for sure.
    await realtime.revokeTokens({ user: 'bob', before: Date.now() + 1000 });
    expect(await page.closed).toBe(CLOSE.tokenRevoked);
    await expect(realtime.revokeTokens({ before: Date.now() + 3_600_000 })).rejects.toMatchObject({
      code: 'bad_request',
      status: 400,
    });
    await realtime.revokeTokens();
  });

  it('emit and emitBatch with an idempotencyKey answer a retry with the same ids', async () => {
    const event = { rooms: ['kept'], event: 'e', history: { kept: [5, 1] as [number, number] } };
    const first = await realtime.emit(event, { idempotencyKey: 'sdk-1' });
    expect(await realtime.emit(event, { idempotencyKey: 'sdk-1' })).toEqual(first);
    const conflict = await realtime.emit({ ...event, event: 'other' }, { idempotencyKey: 'sdk-1' }).catch((e) => e);
    expect(conflict).toBeInstanceOf(RealtimeError);
    expect([conflict.code, conflict.status]).toEqual(['idempotency_conflict', 409]);
    const batch = await realtime.emitBatch([event], { idempotencyKey: 'sdk-2' });
    expect(await realtime.emitBatch([event], { idempotencyKey: 'sdk-2' })).toEqual(batch);
  });
});
