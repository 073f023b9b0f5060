import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedStores } from '../src/engines/embedded.js';
import { StoreError, type StoreErrorKind } from '../src/engines/store-error.js';
import type { AppStore, WebhookStore } from '../src/engines/types.js';
import { failingAppends } from './failing-stores.js';
import { API, fetchPlain, post, startTestServer, type TestServer } from './helpers.js';
import { helloPage, isEvent, type RawPage } from './pages.js';

/** Stores that fail on demand, made through the server's store seam (`wrapStores`). */
interface Failures {
  /** When set, history appends fail with this kind (in `rooms` only, when given). */
  history?: { kind: StoreErrorKind; rooms?: string[] };
  /** When set, adding a webhook event fails with this kind. */
  webhooks?: StoreErrorKind;
}

function failing(failures: Failures) {
  return (stores: EmbeddedStores): EmbeddedStores => {
    const { history, webhooks, apps } = stores;
    const wrappedHistory = failingAppends(history, (room) => {
      const fail = failures.history;
      return fail && (fail.rooms === undefined || fail.rooms.includes(room)) ? fail.kind : undefined;
    });
    const wrappedWebhooks: WebhookStore = Object.create(webhooks);
    wrappedWebhooks.addEvent = (app, json) => {
      if (failures.webhooks) throw new StoreError(failures.webhooks);
      return webhooks.addEvent(app, json);
    };
    return { history: wrappedHistory, webhooks: wrappedWebhooks, apps };
  };
}

/** A small tmpfs of our own (root only); false when it cannot be mounted. */
function mountTmpfs(dir: string, size: string): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Writes a file until the disk refuses: nothing is left for SQLite to grow into. */
function fillDisk(path: string): void {
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, block);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
  // The last pages too: smaller writes until not one byte more fits.
  const tail = openSync(`${path}-tail`, 'w');
  try {
    for (;;) writeSync(tail, Buffer.alloc(512, 1));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(tail);
  }
}

interface Env {
  server: TestServer;
  sdk: Realtime;
  pages: RawPage[];
  ref: number;
}

async function openEnv(server: TestServer): Promise<Env> {
  return {
    server,
    sdk: new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret }),
    pages: [],
    ref: 0,
  };
}

async function page(env: Env, user: string): Promise<RawPage> {
  const p = await helloPage(env.server.url, env.server.app.key, await env.sdk.identityToken(user));
  env.pages.push(p);
  return p;
}

async function joinRoom(
  env: Env,
  p: RawPage,
  room: string,
  rules: Parameters<Realtime['roomToken']>[1] = {},
  extra: Record<string, unknown> = {},
): Promise<RawPage> {
  const ref = ++env.ref;
  p.send({ t: 'join', ref, room, token: await env.sdk.roomToken(room, rules), ...extra });
  const answer = await p.next((f) => f.ref === ref, `joined ${room}`);
  expect(answer.t).toBe('joined');
  return p;
}

/** Where each page's frames were last read up to. */
const readUpTo = new WeakMap<RawPage, number>();

/**
 * The room events a page got since the last look, proving it got nothing else: a marker emit that
 * stores nothing (so it gets through a full disk) reaches the page after anything sent earlier.
 */
async function eventsBeforeMarker(env: Env, p: RawPage, room: string): Promise<string[]> {
  const marker = `mark${++env.ref}`;
  const answer = await post(env.server, `${API}/emit`, { rooms: [room], event: marker, data: null });
  expect(answer.status).toBe(200);
  await p.next(isEvent(marker, room), marker);
  const from = readUpTo.get(p) ?? 0;
  const at = p.frames.findIndex((f) => f.t === 'event' && f.event === marker);
  readUpTo.set(p, at + 1);
  return p.frames
    .slice(from, at)
    .filter((f) => f.t === 'event' && f.room === room && !/^(\$|mark)/.test(String(f.event)))
    .map((f) => String(f.event));
}

/** The events a room keeps, as a page joining with `last` sees them. */
async function kept(env: Env, room: string): Promise<string[]> {
  const p = await page(env, `reader${++env.ref}`);
  const ref = ++env.ref;
  p.send({ t: 'join', ref, room, token: await env.sdk.roomToken(room), last: 100 });
  await p.next((f) => f.t === 'joined' && f.ref === ref, 'joined');
  const marker = await eventsBeforeMarker(env, p, room);
  await p.close();
  return marker;
}

const BIG = 'x'.repeat(200_000);

describe('a full disk', () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-full-'));
  const mounted = mountTmpfs(dir, '8m');
  // Without root (or a mount), the same checks run against stores that fail on demand.
  const failures: Failures = {};
  const filler = join(dir, 'filler');
  let env: Env;
  let plain: RawPage;
  let hist: RawPage;
  let sender: RawPage;
  let listener: RawPage;

  const diskFull = () => {
    if (mounted) fillDisk(filler);
    else Object.assign(failures, { history: { kind: 'full' }, webhooks: 'full' });
  };
  const diskFreed = () => {
    if (mounted) {
      rmSync(filler, { force: true });
      rmSync(`${filler}-tail`, { force: true });
    } else {
      delete failures.history;
      delete failures.webhooks;
    }
  };

  beforeAll(async () => {
    const server = await startTestServer({
      dataDir: join(dir, 'data'),
      app: { webhook: 'http://127.0.0.1:9/hook' },
      allowPrivateWebhooks: true,
      // No batch forms during the test: the webhook events stay in the store.
      webhooks: { windowMs: 600_000 },
      ...(mounted ? {} : { wrapStores: failing(failures) }),
    });
    env = await openEnv(server);
    plain = await joinRoom(env, await page(env, 'alice'), 'plainA');
    hist = await joinRoom(env, await page(env, 'bob'), 'histB');
    const rules = { send: ['msg', 'mark'], w: ['msg'], history: [10, 1] as [number, number] };
    sender = await joinRoom(env, await page(env, 'carol'), 'talk', rules);
    listener = await joinRoom(env, await page(env, 'dave'), 'talk', rules);
  });

  afterAll(async () => {
    diskFreed();
    await Promise.all(env?.pages.map((p) => p.close()) ?? []);
    await env?.sdk.close();
    await env?.server.close();
    if (mounted) execFileSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  });

  it(`runs on a real full disk when it can (${mounted ? 'a tmpfs of 8 MB' : 'stores that fail on demand'})`, () => {
    expect(mounted).toBe(process.getuid?.() === 0);
  });

  it('emit to a plain room and a kept room: 503 storage_full, and the plain room got nothing', async () => {
    diskFull();
    const emit = { rooms: ['plainA', 'histB'], event: 'e1', data: BIG, history: { histB: [10, 1] } };
    const answer = await post(env.server, `${API}/emit`, emit);
    expect(answer.status).toBe(503);
    expect(answer.json).toMatchObject({ ok: false, error: 'storage_full' });
    expect(answer.json.message).toMatch(/^[^\n]+$/);
    expect(await eventsBeforeMarker(env, plain, 'plainA')).toEqual([]);
    expect(await eventsBeforeMarker(env, hist, 'histB')).toEqual([]);
  });

  it('emit/batch: 503 storage_full, and no event of the batch was delivered', async () => {
    const batch = {
      events: [
        { rooms: ['plainA'], event: 'b1', data: 1 },
        { rooms: ['histB'], event: 'b2', data: BIG, history: { histB: [10, 1] } },
      ],
    };
    const answer = await post(env.server, `${API}/emit/batch`, batch);
    expect(answer.status).toBe(503);
    expect(answer.json.error).toBe('storage_full');
    expect(await eventsBeforeMarker(env, plain, 'plainA')).toEqual([]);
  });

  it('a page send with a w rule: an error frame with its ref and room, and the other page got nothing', async () => {
    sender.send({ t: 'send', ref: 900, room: 'talk', event: 'msg', data: { text: BIG } });
    const refused = await sender.next((f) => f.ref === 900, 'the answer to the send');
    expect(refused).toMatchObject({ t: 'error', code: 'storage_full', ref: 900, room: 'talk' });
    expect(typeof refused.message).toBe('string');
    expect(sender.frames.some((f) => f.t === 'sent' && f.ref === 900)).toBe(false);
    expect(await eventsBeforeMarker(env, listener, 'talk')).toEqual([]);
  });

  it('once space is freed, a retry delivers each event exactly once', async () => {
    diskFreed();
    const emit = { rooms: ['plainA', 'histB'], event: 'e1', data: 'again', history: { histB: [10, 1] } };
    const answer = await post(env.server, `${API}/emit`, emit);
    expect(answer.status).toBe(200);
    expect(Object.keys((answer.json.ids ?? {}) as object)).toEqual(['histB']);
    const batch = await post(env.server, `${API}/emit/batch`, {
      events: [
        { rooms: ['plainA'], event: 'b1', data: 1 },
        { rooms: ['histB'], event: 'b2', data: 2, history: { histB: [10, 1] } },
      ],
    });
    expect(batch.status).toBe(200);
    sender.send({ t: 'send', ref: 901, room: 'talk', event: 'msg', data: { text: 'again' } });
    const sent = await sender.next((f) => f.ref === 901, 'sent');
    expect(sent.t).toBe('sent');

    expect(await eventsBeforeMarker(env, plain, 'plainA')).toEqual(['e1', 'b1']);
    expect(await eventsBeforeMarker(env, hist, 'histB')).toEqual(['e1', 'b2']);
    expect(await eventsBeforeMarker(env, listener, 'talk')).toEqual(['msg']);
    expect(await kept(env, 'histB')).toEqual(['e1', 'b2']);
    expect(await kept(env, 'talk')).toEqual(['msg']);
    const recorded = env.server.events as unknown as { events: { event: { type: string; event_id?: string } }[] };
    const emits = recorded.events.filter((e) => e.event.type === 'emit');
    expect(emits.at(-1)?.event.event_id).toBe(sent.id);
  });
});

describe('stores that fail: nothing is delivered, nothing is kept', () => {
  const failures: Failures = {
    webhooks: 'unavailable',
    history: { kind: 'unavailable', rooms: ['broken'] },
  };
  let env: Env;

  beforeAll(async () => {
    const server = await startTestServer({
      app: { webhook: 'http://127.0.0.1:9/hook' },
      allowPrivateWebhooks: true,
      webhooks: { windowMs: 600_000 },
      wrapStores: failing(failures),
    });
    env = await openEnv(server);
  });

  afterAll(async () => {
    await Promise.all(env?.pages.map((p) => p.close()) ?? []);
    await env?.sdk.close();
    await env?.server.close();
  });

  it('a page send whose webhook event is not stored: error frame unavailable, not delivered', async () => {
    const rules = { send: ['msg', 'mark'], w: ['msg'] };
    const sender = await joinRoom(env, await page(env, 'erin'), 'hooked', rules);
    const other = await joinRoom(env, await page(env, 'frank'), 'hooked', rules);
    sender.send({ t: 'send', ref: 700, room: 'hooked', event: 'msg', data: 1 });
    const refused = await sender.next((f) => f.ref === 700, 'the answer to the send');
    expect(refused).toMatchObject({ t: 'error', code: 'unavailable', ref: 700, room: 'hooked' });
    // A send the w rule does not report stores nothing, so it still goes through.
    sender.send({ t: 'send', ref: 701, room: 'hooked', event: 'mark', data: 2 });
    expect(await sender.next((f) => f.ref === 701, 'sent')).toMatchObject({ t: 'sent' });
    await other.next(isEvent('mark', 'hooked'), 'the mark');
    expect(other.frames.filter((f) => f.t === 'event' && f.room === 'hooked').map((f) => f.event)).toEqual(['mark']);
  });

  it('emit to two kept rooms, one failing: 503 unavailable, neither room keeps or gets it', async () => {
    const ok = await joinRoom(env, await page(env, 'gina'), 'keptA');
    const answer = await post(env.server, `${API}/emit`, {
      rooms: ['keptA', 'broken'],
      event: 'e2',
      data: 1,
      history: { keptA: [10, 1], broken: [10, 1] },
    });
    expect(answer.status).toBe(503);
    expect(answer.json).toMatchObject({ ok: false, error: 'unavailable' });
    expect(await eventsBeforeMarker(env, ok, 'keptA')).toEqual([]);
    expect(await kept(env, 'keptA')).toEqual([]);
  });

  it('emit/batch with one failing event: nothing of the batch is kept or delivered', async () => {
    const ok = await joinRoom(env, await page(env, 'hank'), 'keptC');
    const answer = await post(env.server, `${API}/emit/batch`, {
      events: [
        { rooms: ['keptC'], event: 'b1', data: 1, history: { keptC: [10, 1] } },
        { rooms: ['broken'], event: 'b2', data: 2, history: { broken: [10, 1] } },
      ],
    });
    expect(answer.status).toBe(503);
    expect(answer.json.error).toBe('unavailable');
    expect(await eventsBeforeMarker(env, ok, 'keptC')).toEqual([]);
    expect(await kept(env, 'keptC')).toEqual([]);
    // The same batch without the failing room goes through, once.
    const retry = await post(env.server, `${API}/emit/batch`, {
      events: [{ rooms: ['keptC'], event: 'b1', data: 1, history: { keptC: [10, 1] } }],
    });
    expect(retry.status).toBe(200);
    expect(await kept(env, 'keptC')).toEqual(['b1']);
  });
});

// The embedded engine's stores wrapped to fail (the Redis engine's outages are tested on a real redis-server).
describe('readiness when a store fails', () => {
  it('answers 503 unavailable while the webhook store does not answer, 200 again once it does', async () => {
    let failing = false;
    const server = await startTestServer({
      wrapStores: ({ history, webhooks, apps }) => ({
        history,
        apps,
        // Every call goes to the real store (bound: it keeps private fields) but `waiting`, which fails on demand.
        webhooks: new Proxy(webhooks, {
          get(target, name) {
            if (name === 'waiting') {
              return () => {
                if (failing) throw new Error('disk I/O error');
                return target.waiting();
              };
            }
            const value: unknown = Reflect.get(target, name, target);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        }),
      }),
    });
    try {
      expect((await fetchPlain(server.url, `${API}/ready`)).status).toBe(200);
      failing = true;
      const down = await fetchPlain(server.url, `${API}/ready`);
      expect(down.status).toBe(503);
      expect(JSON.parse(down.text)).toMatchObject({
        ok: false,
        error: 'unavailable',
        message: 'a store does not answer: disk I/O error',
      });
      expect((await fetchPlain(server.url, `${API}/health`)).status).toBe(200);
      failing = false;
      expect((await fetchPlain(server.url, `${API}/ready`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('an app store that fails', () => {
  it('answers 503 unavailable (not 500, not 401) while apps cannot be read, and serves again after', async () => {
    let broken = false;
    const server = await startTestServer({
      wrapStores: (stores) => {
        const apps: AppStore = Object.create(stores.apps);
        apps.get = (key) => {
          if (broken) throw new StoreError('unavailable', { cause: new Error('disk I/O error') });
          return stores.apps.get(key);
        };
        return { ...stores, apps };
      },
    });
    try {
      // A key the service has not read yet: nothing cached stands in for the store.
      const stranger = { ...server.app, key: 'app_never_read_before_0001' };
      broken = true;
      const refused = await post({ ...server, app: stranger }, `${API}/emit`, { rooms: ['r'], event: 'e' });
      expect([refused.status, refused.json.error]).toEqual([503, 'unavailable']);
      broken = false;
      const known = await post(server, `${API}/emit`, { rooms: ['r'], event: 'e' });
      expect(known.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
