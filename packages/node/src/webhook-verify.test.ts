import { deriveKey, sign } from '@realtime/protocol';
import { describe, expect, it } from 'vitest';
import vectors from '../../protocol/vectors/v1.json' with { type: 'json' };
import {
  createWebhookVerifier,
  verifyWebhook,
  verifyWithKey,
  WEBHOOK_EVENT_TYPES,
  type WebhookEvent,
  type WebhookEventType,
} from './webhook-verify.js';

const KEY = 'app1';
const SECRET = 's3cret-for-webhooks';
const TS = '1700000000';
const NOW = Number(TS) * 1000;
const PATH = '/hooks/realtime?x=1';
const BODY = JSON.stringify({ events: [{ id: 'w1', at: 1700000000000, type: 'webhook.test' }] });

function signature(body: string | Uint8Array, options: { path?: string; timestamp?: string; secret?: string } = {}) {
  return sign({
    key: deriveKey(options.secret ?? SECRET, 'webhook'),
    timestamp: options.timestamp ?? TS,
    method: 'POST',
    path: options.path ?? PATH,
    body,
  });
}

function headersFor(body: string | Uint8Array, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { 'x-service-site': KEY, 'x-service-timestamp': TS, 'x-service-signature': signature(body), ...extra };
}

function check(overrides: Partial<Parameters<typeof verifyWebhook>[0]> = {}) {
  return verifyWebhook({
    rawBody: BODY,
    headers: headersFor(BODY),
    path: PATH,
    key: KEY,
    secret: SECRET,
    now: NOW,
    ...overrides,
  });
}

describe('protocol vectors (webhooks)', () => {
  for (const v of vectors.webhooks) {
    const events = (JSON.parse(v.body) as { events: unknown[] }).events;
    const headers = {
      'X-Service-Site': 'vector-app',
      'X-Service-Timestamp': v.timestamp,
      'X-Service-Signature': v.signature,
    };
    const now = Number(v.timestamp) * 1000;

    it(`verifies ${v.path} ${v.body.slice(0, 24)}… with secret ${JSON.stringify(v.secret)}`, () => {
      const webhookKey = deriveKey(v.secret, 'webhook');
      for (const rawBody of [v.body, new TextEncoder().encode(v.body)]) {
        const result = verifyWithKey('vector-app', webhookKey, { rawBody, headers, path: v.path }, now);
        expect(result).toEqual({ ok: true, batch: undefined, events });
      }
      if (v.secret === '') {
        // The public entry points refuse an empty secret (the service never issues one).
        expect(() =>
          verifyWebhook({ rawBody: v.body, headers, path: v.path, key: 'vector-app', secret: v.secret, now }),
        ).toThrow(TypeError);
      } else {
        expect(
          verifyWebhook({ rawBody: v.body, headers, path: v.path, key: 'vector-app', secret: v.secret, now }),
        ).toEqual({
          ok: true,
          batch: undefined,
          events,
        });
        const verifier = createWebhookVerifier({ key: 'vector-app', secret: v.secret, now: () => now });
        expect(verifier.verify({ rawBody: Buffer.from(v.body), headers: new Headers(headers), path: v.path })).toEqual({
          ok: true,
          batch: undefined,
          events,
        });
      }
    });

    it(`refuses the vector ${v.path} under another app key or a changed signature`, () => {
      const webhookKey = deriveKey(v.secret, 'webhook');
      expect(verifyWithKey('other-app', webhookKey, { rawBody: v.body, headers, path: v.path }, now)).toEqual({
        ok: false,
        error: 'missing_signature',
      });
      const flipped = v.signature.slice(0, -1) + (v.signature.endsWith('0') ? '1' : '0');
      const changed = { ...headers, 'X-Service-Signature': flipped };
      expect(verifyWithKey('vector-app', webhookKey, { rawBody: v.body, headers: changed, path: v.path }, now)).toEqual(
        {
          ok: false,
          error: 'bad_signature',
        },
      );
    });
  }
});

describe('verifyWebhook: a genuine batch', () => {
  it('returns the events and the batch id', () => {
    const result = check({ headers: headersFor(BODY, { 'X-Service-Batch': 'b_1' }) });
    expect(result).toEqual({ ok: true, batch: 'b_1', events: [{ id: 'w1', at: 1700000000000, type: 'webhook.test' }] });
  });

  it('finds headers in any case, in a plain object or a Headers object', () => {
    const mixed = { 'X-SERVICE-SITE': KEY, 'x-Service-Timestamp': TS, 'X-Service-Signature': signature(BODY) };
    expect(check({ headers: mixed }).ok).toBe(true);
    expect(check({ headers: new Headers(mixed) }).ok).toBe(true);
    expect(check({ headers: new Map(Object.entries(headersFor(BODY))) }).ok).toBe(true);
  });

  it('takes the body as a string, a Buffer or a Uint8Array', () => {
    for (const rawBody of [BODY, Buffer.from(BODY), new Uint8Array(Buffer.from(BODY))]) {
      expect(check({ rawBody }).ok).toBe(true);
    }
  });

  it('accepts a timestamp up to 300 seconds either side of the clock', () => {
    expect(check({ now: NOW + 300_000 }).ok).toBe(true);
    expect(check({ now: NOW + 300_999 }).ok).toBe(true);
    expect(check({ now: NOW - 300_000 }).ok).toBe(true);
  });

  it('passes on events of every type of section 6 as sent, including fields it does not check', () => {
    const at = 1700000000000;
    const events: WebhookEvent[] = [
      {
        id: 'e1',
        at,
        type: 'emit',
        room: 'lobby',
        event: 'chat',
        data: { text: 'hi' },
        from: 'alice',
        event_id: '1-0',
      },
      { id: 'e2', at, type: 'room.occupied', room: 'lobby' },
      { id: 'e3', at, type: 'room.vacated', room: 'lobby' },
      { id: 'e4', at, type: 'member.joined', room: 'lobby', user: 'alice' },
      { id: 'e5', at, type: 'member.left', room: 'lobby', user: 'alice' },
      { id: 'e6', at, type: 'user.online', user: 'alice' },
      { id: 'e7', at, type: 'user.offline', user: 'alice' },
      { id: 'e8', at, type: 'stream.live', stream: 's', started_at: at, ended_at: null },
      { id: 'e9', at, type: 'stream.ended', stream: 's', started_at: at, ended_at: at + 1000 },
      {
        id: 'e10',
        at,
        type: 'call.ended',
        call: 'c',
        call_id: 'c1',
        from: 'alice',
        to: 'bob',
        media: ['audio', 'video'],
        started_at: at,
        answered_at: null,
        ended_at: at + 5000,
        seconds: 0,
        reason: 'missed',
      },
      { id: 'e11', at, type: 'group.joined', call: 'standup', user: 'alice', media: ['audio'], joined_at: at },
      {
        id: 'e12',
        at,
        type: 'group.left',
        call: 'standup',
        user: 'alice',
        media: ['audio'],
        joined_at: at,
        left_at: at + 61_000,
        seconds: 61,
      },
      { id: 'e13', at, type: 'stream.joined', stream: 's', user: 'bob', role: 'viewer', watch: 'w1', joined_at: at },
      {
        id: 'e14',
        at,
        type: 'stream.left',
        stream: 's',
        user: 'bob',
        role: 'viewer',
        watch: 'w1',
        joined_at: at,
        left_at: at + 2000,
        seconds: 2,
      },
      { id: 'e15', at, type: 'webhook.test' },
    ];
    expect(events.map((e) => e.type)).toEqual([...WEBHOOK_EVENT_TYPES]);
    const body = JSON.stringify({ events: [...events, { id: 'e16', at, type: 'future.thing', extra: 1 }] });
    const result = check({ rawBody: body, headers: headersFor(body) });
    expect(result.ok && result.events).toEqual([...events, { id: 'e16', at, type: 'future.thing', extra: 1 }]);
  });

  it('types: narrowing on `type` gives the fields of that type', () => {
    const describeEvent = (event: WebhookEvent): string => {
      switch (event.type) {
        case 'emit':
          return `${event.room}/${event.event} from ${event.from ?? 'a visitor'} (${event.event_id})`;
        case 'call.ended':
          return `${event.call_id} ${event.reason} ${event.seconds}s`;
        case 'stream.left':
          return `${event.watch} ${event.seconds}s`;
        default:
          return event.type;
      }
    };
    const at = 1;
    expect(describeEvent({ id: 'a', at, type: 'emit', room: 'r', event: 'e', data: null, event_id: '1-0' })).toBe(
      'r/e from a visitor (1-0)',
    );
    const type: WebhookEventType = 'user.offline';
    expect(describeEvent({ id: 'b', at, type, user: 'u' })).toBe('user.offline');
  });
});

describe('verifyWebhook: the checks of section 5.5, in order', () => {
  const without = (name: string) => {
    const headers = headersFor(BODY);
    delete headers[name];
    return headers;
  };

  it('missing_signature: site, timestamp or signature missing or empty', () => {
    expect(check({ headers: without('x-service-site') })).toEqual({ ok: false, error: 'missing_signature' });
    expect(check({ headers: without('x-service-timestamp') })).toEqual({ ok: false, error: 'missing_signature' });
    expect(check({ headers: without('x-service-signature') })).toEqual({ ok: false, error: 'missing_signature' });
    expect(check({ headers: headersFor(BODY, { 'x-service-signature': '' }) })).toEqual({
      ok: false,
      error: 'missing_signature',
    });
    expect(check({ headers: {} })).toEqual({ ok: false, error: 'missing_signature' });
  });

  it('missing_signature: another app key in X-Service-Site', () => {
    expect(check({ headers: headersFor(BODY, { 'x-service-site': 'app2' }) })).toEqual({
      ok: false,
      error: 'missing_signature',
    });
    expect(check({ key: 'app2' })).toEqual({ ok: false, error: 'missing_signature' });
  });

  it('missing_signature: a timestamp that is not 1 to 12 digits', () => {
    for (const timestamp of ['', '17000000a0', '-1700000000', '1700000000.5', ' 1700000000', '0x65', '1700000000000']) {
      const headers = headersFor(BODY, {
        'x-service-timestamp': timestamp,
        'x-service-signature': signature(BODY, { timestamp }),
      });
      expect(check({ headers }), JSON.stringify(timestamp)).toEqual({ ok: false, error: 'missing_signature' });
    }
    // 12 digits pass the first check and are then judged by the clock.
    const twelve = '170000000000';
    const headers = headersFor(BODY, {
      'x-service-timestamp': twelve,
      'x-service-signature': signature(BODY, { timestamp: twelve }),
    });
    expect(check({ headers })).toEqual({ ok: false, error: 'stale_signature' });
  });

  it('missing_signature: a header sent twice (an array) counts as missing', () => {
    const sig = signature(BODY);
    expect(check({ headers: headersFor(BODY, { 'x-service-signature': [sig, sig] }) })).toEqual({
      ok: false,
      error: 'missing_signature',
    });
    expect(check({ headers: headersFor(BODY, { 'x-service-site': [KEY] }) })).toEqual({
      ok: false,
      error: 'missing_signature',
    });
    expect(check({ headers: headersFor(BODY, { 'x-service-timestamp': [TS, TS] }) })).toEqual({
      ok: false,
      error: 'missing_signature',
    });
  });

  it('missing_signature: a header given under two spellings of its name', () => {
    expect(check({ headers: headersFor(BODY, { 'X-Service-Site': KEY }) })).toEqual({
      ok: false,
      error: 'missing_signature',
    });
  });

  it('stale_signature: 301 seconds either side of the clock', () => {
    expect(check({ now: NOW + 301_000 })).toEqual({ ok: false, error: 'stale_signature' });
    expect(check({ now: NOW - 301_000 })).toEqual({ ok: false, error: 'stale_signature' });
  });

  it('bad_signature: body, path, query or secret changed', () => {
    expect(check({ rawBody: BODY.replace('w1', 'w2') })).toEqual({ ok: false, error: 'bad_signature' });
    expect(check({ rawBody: `${BODY} ` })).toEqual({ ok: false, error: 'bad_signature' });
    expect(check({ path: '/hooks/realtime' })).toEqual({ ok: false, error: 'bad_signature' });
    expect(check({ path: '/hooks/realtime?x=2' })).toEqual({ ok: false, error: 'bad_signature' });
    expect(check({ path: '/hooks/realtime?x=1&y=2' })).toEqual({ ok: false, error: 'bad_signature' });
    expect(check({ path: '/hooks/other?x=1' })).toEqual({ ok: false, error: 'bad_signature' });
    expect(check({ secret: `${SECRET}x` })).toEqual({ ok: false, error: 'bad_signature' });
  });

  it('bad_signature: the right signature in uppercase hex, or cut short', () => {
    const sig = signature(BODY);
    expect(sig).toMatch(/^[0-9a-f]{64}$/);
    expect(check({ headers: headersFor(BODY, { 'x-service-signature': sig.toUpperCase() }) })).toEqual({
      ok: false,
      error: 'bad_signature',
    });
    expect(check({ headers: headersFor(BODY, { 'x-service-signature': sig.slice(0, 63) }) })).toEqual({
      ok: false,
      error: 'bad_signature',
    });
  });

  it('reports the first failing check when several fail', () => {
    // Wrong site, stale and bad signature: the site check comes first.
    expect(check({ key: 'app2', now: NOW + 999_000, rawBody: 'x' })).toEqual({ ok: false, error: 'missing_signature' });
    // Stale and bad signature: the clock comes before the signature.
    expect(check({ now: NOW + 999_000, rawBody: 'x' })).toEqual({ ok: false, error: 'stale_signature' });
  });
});

describe('verifyWebhook: never throws on bad input', () => {
  it('headers that are not an object, a body or path of the wrong type', () => {
    expect(check({ headers: null as never })).toEqual({ ok: false, error: 'missing_signature' });
    expect(check({ headers: undefined as never })).toEqual({ ok: false, error: 'missing_signature' });
    expect(check({ headers: 'x' as never })).toEqual({ ok: false, error: 'missing_signature' });
    expect(check({ headers: { get: () => 42 } })).toEqual({ ok: false, error: 'missing_signature' });
    expect(
      check({
        headers: {
          get: () => {
            throw new Error('boom');
          },
        },
      }),
    ).toEqual({ ok: false, error: 'missing_signature' });
    expect(check({ rawBody: 42 as never })).toEqual({ ok: false, error: 'bad_signature' });
    expect(check({ rawBody: undefined as never })).toEqual({ ok: false, error: 'bad_signature' });
    expect(check({ path: undefined as never })).toEqual({ ok: false, error: 'bad_signature' });
    const verifier = createWebhookVerifier({ key: KEY, secret: SECRET, now: () => NOW });
    expect(verifier.verify(undefined as never)).toEqual({ ok: false, error: 'missing_signature' });
  });

  it('bad_body: a genuine signature over a body that is not a batch', () => {
    const bodies: (string | Uint8Array)[] = [
      '',
      'not json',
      '[]',
      'null',
      '{"events":{}}',
      '{"event":[]}',
      '{"events":[null]}',
      '{"events":[{"at":1,"type":"webhook.test"}]}',
      '{"events":[{"id":7,"at":1,"type":"webhook.test"}]}',
      '{"events":[{"id":"w1","at":"1","type":"webhook.test"}]}',
      '{"events":[{"id":"w1","at":1}]}',
      new Uint8Array([0x7b, 0xff, 0x7d]),
    ];
    for (const rawBody of bodies) {
      expect(check({ rawBody, headers: headersFor(rawBody) }), String(rawBody)).toEqual({
        ok: false,
        error: 'bad_body',
      });
    }
    // An empty batch is a batch.
    expect(check({ rawBody: '{"events":[]}', headers: headersFor('{"events":[]}') })).toEqual({
      ok: true,
      batch: undefined,
      events: [],
    });
  });

  it('a body that is not a batch and not genuine is bad_signature, not bad_body', () => {
    expect(check({ rawBody: 'not json' })).toEqual({ ok: false, error: 'bad_signature' });
  });
});

describe('setup mistakes throw a TypeError', () => {
  it('an empty or missing key or secret', () => {
    expect(() => check({ key: '' })).toThrow(TypeError);
    expect(() => check({ secret: '' })).toThrow(/secret/);
    expect(() => check({ secret: undefined as never })).toThrow(TypeError);
    expect(() => createWebhookVerifier({ key: KEY, secret: '' })).toThrow(TypeError);
    expect(() => createWebhookVerifier({ key: '', secret: SECRET })).toThrow(/key/);
    expect(() => createWebhookVerifier(undefined as never)).toThrow(TypeError);
  });

  it('createWebhookVerifier reads its clock on every check', () => {
    let now = NOW;
    const verifier = createWebhookVerifier({ key: KEY, secret: SECRET, now: () => now });
    const input = { rawBody: BODY, headers: headersFor(BODY), path: PATH };
    expect(verifier.verify(input).ok).toBe(true);
    now = NOW + 301_000;
    expect(verifier.verify(input)).toEqual({ ok: false, error: 'stale_signature' });
  });
});

describe('verifyWebhook during a secret rotation: a signature under each secret', () => {
  const OLD = 'the-secret-before-the-rotation';
  const rotating = (main: string, other: string, extra: Record<string, unknown> = {}) =>
    headersFor(BODY, {
      'x-service-signature': signature(BODY, { secret: main }),
      'X-Service-Signature-Other': signature(BODY, { secret: other }),
      ...extra,
    });

  it('takes the batch with either secret, whichever signs X-Service-Signature', () => {
    for (const headers of [rotating(SECRET, OLD), rotating(OLD, SECRET)]) {
      expect(check({ headers })).toMatchObject({ ok: true, events: [{ id: 'w1' }] });
      expect(check({ headers, secret: OLD })).toMatchObject({ ok: true, events: [{ id: 'w1' }] });
      const verifier = createWebhookVerifier({ key: KEY, secret: OLD, now: () => NOW });
      expect(verifier.verify({ rawBody: BODY, headers, path: PATH })).toMatchObject({ ok: true });
    }
    expect(check({ headers: rotating(SECRET, OLD), secret: 'a-third-secret' })).toEqual({
      ok: false,
      error: 'bad_signature',
    });
  });

  it('still needs X-Service-Signature, the timestamp and the body as signed', () => {
    const headers = rotating(SECRET, OLD);
    delete headers['x-service-signature'];
    expect(check({ headers, secret: OLD })).toEqual({ ok: false, error: 'missing_signature' });
    expect(check({ headers: rotating(SECRET, OLD), secret: OLD, now: NOW + 301_000 })).toEqual({
      ok: false,
      error: 'stale_signature',
    });
    expect(check({ headers: rotating(SECRET, OLD), secret: OLD, rawBody: `${BODY} ` })).toEqual({
      ok: false,
      error: 'bad_signature',
    });
    // The second header sent twice counts as missing.
    const twice = rotating(SECRET, OLD, { 'X-Service-Signature-Other': [signature(BODY, { secret: OLD }), 'x'] });
    expect(check({ headers: twice, secret: OLD })).toEqual({ ok: false, error: 'bad_signature' });
  });
});
