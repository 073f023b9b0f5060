import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { EmitIncomplete } from '../core/emit.js';
import { MemoryIdempotencyStore } from '../engines/memory/idempotency.js';
import { StoreError } from '../engines/store-error.js';
import type { App } from '../engines/types.js';
import { ApiError } from './api-error.js';
import type { ApiRequest } from './context.js';
import { IDEMPOTENCY_HOLD_MS, idempotencyKey, idempotent } from './idempotency.js';

const log = pino({ level: 'silent' });
const app = { key: 'app1' } as App;

function request(body: string, key?: string): ApiRequest {
  return {
    app,
    params: [],
    query: '',
    body: Buffer.from(body),
    headers: key === undefined ? {} : { 'idempotency-key': key },
  };
}

describe('idempotencyKey', () => {
  it('takes 1 to 200 printable ASCII characters, none without the header', () => {
    expect(idempotencyKey({})).toBeUndefined();
    expect(idempotencyKey({ 'idempotency-key': ' ~' })).toBe(' ~');
    expect(idempotencyKey({ 'idempotency-key': 'k'.repeat(200) })).toBe('k'.repeat(200));
  });

  it.each([[''], ['k'.repeat(201)], ['tab\there'], ['caf\u00e9'], ['\u007f']])('refuses %j with bad_request', (key) => {
    expect(() => idempotencyKey({ 'idempotency-key': key })).toThrow(ApiError);
    try {
      idempotencyKey({ 'idempotency-key': key });
    } catch (error) {
      expect((error as ApiError).code).toBe('bad_request');
    }
  });
});

describe('idempotent', () => {
  const deps = (store = new MemoryIdempotencyStore(), now = () => 1_000_000) => ({ idempotency: store, log, now });

  it('runs once per key and body; answers the stored answer after', async () => {
    const d = deps();
    let runs = 0;
    const run = async () => ({ ids: { r: `1-${runs++}` } });
    expect(await idempotent(request('{"a":1}', 'k'), d, 'emit', run)).toEqual({ ids: { r: '1-0' } });
    expect(await idempotent(request('{"a":1}', 'k'), d, 'emit', run)).toEqual({ ids: { r: '1-0' } });
    expect(runs).toBe(1);
    // Without a key: run as is.
    await idempotent(request('{"a":1}'), d, 'emit', run);
    expect(runs).toBe(2);
  });

  it('refuses another body, or the other route, with idempotency_conflict', async () => {
    const d = deps();
    await idempotent(request('{"a":1}', 'k'), d, 'emit', async () => ({ ids: {} }));
    await expect(idempotent(request('{"a":2}', 'k'), d, 'emit', async () => ({}))).rejects.toMatchObject({
      code: 'idempotency_conflict',
    });
    await expect(idempotent(request('{"a":1}', 'k'), d, 'emit_batch', async () => ({}))).rejects.toMatchObject({
      code: 'idempotency_conflict',
    });
  });

  it('a request that outlived its hold neither frees nor answers for the retry that took the key', async () => {
    let now = 1_000_000;
    const d = deps(new MemoryIdempotencyStore(), () => now);
    let failFirst: ((error: Error) => void) | undefined;
    const first = idempotent(
      request('{}', 'k'),
      d,
      'emit',
      () => new Promise<Record<string, unknown>>((_, reject) => (failFirst = reject)),
    );
    await expect.poll(() => failFirst).toBeDefined();
    // Its hold ends; the retry takes the key and is still running when the first fails.
    now += IDEMPOTENCY_HOLD_MS;
    let answerRetry: ((answer: Record<string, unknown>) => void) | undefined;
    const retry = idempotent(
      request('{}', 'k'),
      d,
      'emit',
      () => new Promise<Record<string, unknown>>((resolve) => (answerRetry = resolve)),
    );
    await expect.poll(() => answerRetry).toBeDefined();
    failFirst?.(new ApiError('bad_request', 'refused late'));
    await expect(first).rejects.toBeInstanceOf(ApiError);
    // The retry still holds the key: a third request waits on it and is refused as in flight.
    await expect(
      idempotent(request('{}', 'k'), { ...d, inFlightWaitMs: 0 }, 'emit', async () => ({ ids: { r: 'third' } })),
    ).rejects.toMatchObject({ code: 'idempotency_conflict' });
    answerRetry?.({ ids: { r: 'retry' } });
    expect(await retry).toEqual({ ids: { r: 'retry' } });
    expect(await idempotent(request('{}', 'k'), d, 'emit', async () => ({ ids: { r: 'third' } }))).toEqual({
      ids: { r: 'retry' },
    });
  });

  it('a refusal before anything was sent frees the key: the retry runs', async () => {
    const d = deps();
    await expect(
      idempotent(request('{}', 'k'), d, 'emit', async () => {
        throw new ApiError('bad_request', 'refused before sending');
      }),
    ).rejects.toBeInstanceOf(ApiError);
    expect(await idempotent(request('{}', 'k'), d, 'emit', async () => ({ ids: { r: '2-0' } }))).toEqual({
      ids: { r: '2-0' },
    });
  });

  for (const [what, failure] of [
    // A command that timed out or a connection dropped after sending: the store may have taken it.
    ['a store failure (the outcome unknown)', () => new StoreError('unavailable')],
    [
      'an emit that reached some rooms',
      () => new EmitIncomplete('unavailable', [{ event: 0, room: 'r' }], 1, undefined),
    ],
  ] as const) {
    it(`${what} keeps the key held: a retry within the hold does not run`, async () => {
      let now = 1_000_000;
      const d = { ...deps(new MemoryIdempotencyStore(), () => now), inFlightWaitMs: 0 };
      await expect(
        idempotent(request('{}', 'k'), d, 'emit', async () => {
          throw failure();
        }),
      ).rejects.toBeInstanceOf(Error);
      let ran = false;
      await expect(
        idempotent(request('{}', 'k'), d, 'emit', async () => {
          ran = true;
          return {};
        }),
      ).rejects.toMatchObject({ code: 'idempotency_conflict', headers: { 'Retry-After': '1' } });
      expect(ran).toBe(false);
      now += IDEMPOTENCY_HOLD_MS;
      expect(await idempotent(request('{}', 'k'), d, 'emit', async () => ({ ids: {} }))).toEqual({ ids: {} });
    });
  }

  it('a duplicate while the first is in flight waits for its answer', async () => {
    const d = deps();
    let release: (value: Record<string, unknown>) => void = () => {};
    const first = idempotent(
      request('{}', 'k'),
      d,
      'emit',
      () =>
        new Promise<Record<string, unknown>>((resolve) => {
          release = resolve;
        }),
    );
    let secondRan = false;
    const second = idempotent(request('{}', 'k'), d, 'emit', async () => {
      secondRan = true;
      return {};
    });
    // Let the second see the key in flight before the first answers.
    await new Promise((resolve) => setImmediate(resolve));
    release({ ids: { r: '9-0' } });
    expect(await first).toEqual({ ids: { r: '9-0' } });
    expect(await second).toEqual({ ids: { r: '9-0' } });
    expect(secondRan).toBe(false);
  });

  it('an answer that could not be stored still answers', async () => {
    const store = new MemoryIdempotencyStore();
    store.complete = () => {
      throw new StoreError('unavailable');
    };
    expect(await idempotent(request('{}', 'k'), deps(store), 'emit', async () => ({ ids: {} }))).toEqual({ ids: {} });
  });
});
