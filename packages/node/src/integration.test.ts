import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newApp, type RunningServer, startServer } from '@realtime/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Realtime, RealtimeError, roomLabel } from './index.js';

describe('@realtime/node against the real server', () => {
  let server: RunningServer;
  let dataDir: string;
  let realtime: Realtime;
  const app = newApp({ name: 'sdk' });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'realtime-sdk-'));
    server = await startServer({ host: '127.0.0.1', port: 0, dataDir, apps: [app], logLevel: 'silent' });
    realtime = new Realtime({
      url: server.url,
      key: app.key,
      secret: app.secret,
      localKey: new Uint8Array(32).fill(7),
    });
  });
  afterAll(async () => {
    await realtime.close();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('emits, with ids for the rooms that keep the event', async () => {
    expect(await realtime.emit({ rooms: ['lobby'], event: 'hello', data: { text: 'hi' } })).toEqual({});
    const ids = await realtime.emit({
      rooms: ['kept', 'other'],
      users: ['alice'],
      event: 'e',
      history: { kept: [5, 1] },
    });
    expect(Object.keys(ids)).toEqual(['kept']);
  });

  it('emits a batch', async () => {
    const ids = await realtime.emitBatch([
      { rooms: ['a'], event: 'x', data: 1, history: { a: [5, 1] } },
      { users: ['bob'], event: 'y', data: 2 },
    ]);
    expect(ids).toHaveLength(2);
    expect(ids[0]?.a).toMatch(/^\d+-\d+$/);
    expect(ids[1]).toEqual({});
  });

  it('asks a user with no open page and gets no reply', async () => {
    expect(await realtime.ask('alice / é', { event: 'confirm', data: 1, timeout: 2000 })).toEqual([]);
  });

  it('asks who is online', async () => {
    expect(await realtime.online(['alice', 'b,ob', 'é'])).toEqual([]);
  });

  it('carries sealed data the service cannot read', async () => {
    const sealed = realtime.seal(roomLabel('vault'), { pin: 1234 });
    const ids = await realtime.emit({ rooms: ['vault'], event: 'secret', data: sealed, history: { vault: [1, 1] } });
    expect(Object.keys(ids)).toEqual(['vault']);
    expect(realtime.open(sealed, roomLabel('vault'))).toEqual({ pin: 1234 });
  });

  it('lists webhook deliveries, and reports the webhook endpoints errors as RealtimeError', async () => {
    await expect(realtime.webhooks.list()).rejects.toMatchObject({ code: 'no_webhook', status: 409 });
    await expect(realtime.webhooks.test()).rejects.toMatchObject({ code: 'no_webhook', status: 409 });
    await expect(realtime.webhooks.resend('nope')).rejects.toMatchObject({ code: 'no_webhook', status: 409 });
  });

  it('turns refusals into RealtimeError with code and status', async () => {
    const error = await realtime.emit({ rooms: ['$x'], event: 'e' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RealtimeError);
    expect(error).toMatchObject({ code: 'bad_room', status: 400 });
    const many = Array.from({ length: 101 }, () => ({ rooms: ['a'], event: 'e' }));
    await expect(realtime.emitBatch(many)).rejects.toMatchObject({ code: 'too_many', status: 413 });
    const wrong = new Realtime({ url: server.url, key: app.key, secret: 'a-wrong-secret-entirely' });
    await expect(wrong.emit({ rooms: ['a'], event: 'e' })).rejects.toMatchObject({
      code: 'bad_signature',
      status: 401,
    });
    await wrong.close();
  });
});
