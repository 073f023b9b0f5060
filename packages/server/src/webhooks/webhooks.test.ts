import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Receiver, startReceiver } from '../../test/receiver.js';
import { newApp } from '../apps/generate.js';
import { SqliteAppStore } from '../engines/sqlite/apps.js';
import { type Db, openDb } from '../engines/sqlite/db.js';
import { SqliteWebhookStore } from '../engines/sqlite/webhooks.js';
import type { App } from '../engines/types.js';
import { createLogger } from '../log.js';
import { createDeliverer } from './deliver.js';
import { ResendRefused, Webhooks } from './webhooks.js';

/**
 * The webhook queue as nodes run it: each node a Webhooks on its own connection to one SQLite file
 * (as processes sharing the file would be), delivering to a real receiver on 127.0.0.1.
 */

const TIMINGS = { windowMs: 60, answerMs: 400, retryDelaysMs: [300, 300, 300] };

interface Setup {
  app: App;
  receiver: Receiver;
  dir: string;
  dbs: Db[];
  nodes: Webhooks[];
}

const setups: Setup[] = [];

afterEach(async () => {
  for (const setup of setups.splice(0)) {
    await Promise.all(setup.nodes.map((node) => node.close()));
    for (const db of setup.dbs) db.close();
    await setup.receiver.close();
    rmSync(setup.dir, { recursive: true, force: true });
  }
});

async function setup(
  appFields: Partial<App> = {},
): Promise<Setup & { node(name: string): Promise<Webhooks>; store(): SqliteWebhookStore }> {
  const app = newApp({ name: 'hooks', ...appFields });
  const receiver = await startReceiver(app);
  if (appFields.webhook === undefined) app.webhook = receiver.url;
  const dir = mkdtempSync(join(tmpdir(), 'realtime-webhook-nodes-'));
  const s: Setup = { app, receiver, dir, dbs: [], nodes: [] };
  setups.push(s);
  const open = () => {
    const db = openDb(dir);
    s.dbs.push(db);
    return db;
  };
  new SqliteAppStore(open()).upsert(app);
  return {
    ...s,
    /** A node on its own connection, started. */
    async node(name: string) {
      const db = open();
      const webhooks = new Webhooks({
        store: new SqliteWebhookStore(db),
        apps: new SqliteAppStore(db),
        deliverer: createDeliverer({ allowPrivate: true, timeoutMs: TIMINGS.answerMs }),
        log: createLogger('silent'),
        now: Date.now,
        node: name,
        timings: TIMINGS,
      });
      s.nodes.push(webhooks);
      await webhooks.start();
      return webhooks;
    },
    /** The queue as another process sees it. */
    store: () => new SqliteWebhookStore(open()),
  };
}

const online = (user: string) => ({ type: 'user.online' as const, user });

describe('webhooks on several nodes sharing one store', () => {
  it('delivers every event recorded on either node once, in batches of at most 100', async () => {
    const env = await setup();
    const [one, two] = [await env.node('node-1'), await env.node('node-2')];
    const users = Array.from({ length: 300 }, (_, i) => `u${i}`);
    await Promise.all(users.map((user, i) => (i % 2 === 0 ? one : two).record(env.app.key, online(user))));
    await env.receiver.waitFor(() => env.receiver.events().length >= users.length, 'every event');
    // One more event on each node, once all came: a second delivery of anything would come before these.
    await one.record(env.app.key, online('marker-1'));
    await two.record(env.app.key, online('marker-2'));
    const markers = () => env.receiver.events().filter((e) => String(e.user).startsWith('marker-'));
    await env.receiver.waitFor(() => markers().length >= 2, 'the markers');
    expect(markers()).toHaveLength(2);
    const events = env.receiver.events().filter((e) => !String(e.user).startsWith('marker-'));
    expect(events.map((e) => e.user).sort()).toEqual([...users].sort());
    expect(new Set(events.map((e) => e.id)).size).toBe(users.length);
    expect(Math.max(...env.receiver.batches.map((b) => b.events.length))).toBeLessThanOrEqual(100);
    // Within a batch, in the order recorded.
    for (const batch of env.receiver.batches) {
      const order = batch.events
        .filter((e) => !String(e.user).startsWith('marker-'))
        .map((e) => Number(String(e.user).slice(1)));
      expect(order).toEqual([...order].sort((x, y) => x - y));
    }
  });

  it('leaves a batch leased to a node that died alone until the lease ends, then another node sends it', async () => {
    const env = await setup();
    const queue = env.store();
    await queue.addEvent(
      env.app.key,
      JSON.stringify({ id: 'ev_dead', at: Date.now(), type: 'user.online', user: 'x' }),
    );
    await queue.formBatch(env.app.key, 'b_dead', 100, Date.now());
    // A node claimed it and died mid-try.
    const leasedAt = Date.now();
    expect(await queue.claimDue(leasedAt, 10, { holder: 'dead-node', ms: 1500 })).toHaveLength(1);
    await env.node('node-2');
    await env.receiver.waitFor(() => env.receiver.events().length === 1, 'the batch, after the lease');
    // It came once the lease ran out, in the first try made: none while the dead node held it.
    expect((env.receiver.batches[0]?.at ?? 0) - leasedAt).toBeGreaterThanOrEqual(1500);
    expect(env.receiver.requests).toBe(1);
    expect(env.receiver.batches[0]?.id).toBe('b_dead');
    // The receiver answers before the node records the try: wait for the record, bounded.
    await vi.waitFor(async () => expect(await queue.get('b_dead')).toMatchObject({ state: 'taken', attempts: 1 }), {
      timeout: 5000,
      interval: 20,
    });
  });

  it('refuses a resend while a try of the batch is under way, here or on another node', async () => {
    const env = await setup();
    const node = await env.node('node-1');
    const queue = env.store();
    await queue.addEvent(env.app.key, JSON.stringify({ id: 'ev_1', at: Date.now(), type: 'user.online', user: 'x' }));
    await queue.formBatch(env.app.key, 'b_elsewhere', 100, Date.now());
    await queue.claimDue(Date.now(), 10, { holder: 'other-node', ms: 60_000 });
    const refused = node.resend(env.app.key, 'b_elsewhere');
    await expect(refused).rejects.toBeInstanceOf(ResendRefused);
    await expect(refused).rejects.toMatchObject({
      code: 'not_resendable',
      message: 'a try of this batch is under way',
    });
    expect((await node.list(env.app.key)).find((d) => d.id === 'b_elsewhere')).toMatchObject({ state: 'pending' });

    // Here: the receiver hangs, so this node's test try is under way when the resend comes.
    env.receiver.mode = 'hang';
    const testing = node.test(env.app.key);
    await env.receiver.waitFor(() => env.receiver.requests === 1, 'the test try');
    const [record] = (await node.list(env.app.key)).filter((d) => d.id !== 'b_elsewhere');
    expect(record?.resendable).toBe(false);
    await expect(node.resend(env.app.key, record?.id ?? '')).rejects.toMatchObject({
      code: 'not_resendable',
      message: 'a try of this batch is under way',
    });
    expect(await testing).toEqual({ delivered: false, status: 0 });
    await expect(node.resend(env.app.key, 'b_nope')).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('reports of page sends', () => {
  it('cuts the emit event where its id goes; the batcher sends what the broker stored', async () => {
    const env = await setup();
    const node = await env.node('node-1');
    const send = { type: 'emit' as const, room: 'lobby', event: 'chat', data: { text: 'hi "you"' }, from: 'ann' };
    const report = node.reportOf(env.app, send);
    if (!report) throw new Error('the app gets webhooks: a report is due');
    const text = `${report.before}1700000000000-7${report.after}`;
    expect(JSON.parse(text)).toEqual({
      id: expect.stringMatching(/^ev_/),
      at: expect.any(Number),
      ...send,
      event_id: '1700000000000-7',
    });
    expect(text.endsWith('"event_id":"1700000000000-7"}')).toBe(true);
    // What the broker does in the send's step, then tells the sink.
    await env.store().addEvent(env.app.key, text);
    node.reported(env.app.key, { ...send, event_id: '1700000000000-7' });
    await env.receiver.waitFor(() => env.receiver.events('emit').length === 1, 'the emit event');
    expect(env.receiver.events('emit')[0]?.event_id).toBe('1700000000000-7');
  });

  it('gives no report for an app without an address or without webhooks in its plan', async () => {
    const env = await setup();
    const node = await env.node('node-1');
    const send = { type: 'emit' as const, room: 'r', event: 'e', data: 1 };
    expect(node.reportOf({ ...env.app, webhook: '' }, send)).toBe(undefined);
    expect(node.reportOf({ ...env.app, features: ['history'] }, send)).toBe(undefined);
    expect(node.reportOf(env.app, send)).toBeDefined();
  });
});

describe('store failures', () => {
  it('rejects the record of an event the store could not keep, and never throws', async () => {
    const env = await setup();
    const db = openDb(env.dir);
    const webhooks = new Webhooks({
      store: new SqliteWebhookStore(db),
      apps: {
        get: () => env.app,
        list: () => [env.app],
        upsert() {},
        setSecret: () => true,
        setWebhook: () => true,
        remove: () => true,
        close() {},
      },
      deliverer: createDeliverer({ allowPrivate: true }),
      log: createLogger('silent'),
      now: Date.now,
      node: 'node-x',
    });
    db.close();
    const recorded = webhooks.record(env.app.key, online('ann'));
    await expect(recorded).rejects.toMatchObject({ name: 'StoreError' });
    await webhooks.close();
  });
});
