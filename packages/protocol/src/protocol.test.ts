import { describe, expect, it } from 'vitest';
import names from '../vectors/names.json' with { type: 'json' };
import vectors from '../vectors/v1.json' with { type: 'json' };
import {
  checkWebhookSignature,
  deriveKey,
  eventNameProblem,
  fromBase64Url,
  fromHex,
  isReservedEvent,
  isSealed,
  type KeyName,
  open,
  openWithKey,
  roomNameProblem,
  seal,
  sealingKey,
  sha256Hex,
  sign,
  signingMessage,
  toBase64Url,
  toHex,
} from './index.js';

const hex = (h: string) => fromHex(h) ?? new Uint8Array();

describe('keys (section 5.3)', () => {
  for (const v of vectors.keys) {
    it(`derives every key of secret ${JSON.stringify(v.secret.slice(0, 12))}`, () => {
      for (const name of ['publish', 'webhook', 'channels', 'calls', 'streamGrant'] as KeyName[]) {
        expect(toHex(deriveKey(v.secret, name))).toBe(v[name]);
      }
    });
  }
});

describe('request signatures (section 5.2)', () => {
  for (const v of vectors.requests) {
    it(`signs ${v.method} ${v.path}`, () => {
      expect(sha256Hex(v.body)).toBe(v.body_sha256);
      expect(signingMessage(v.timestamp, v.method, v.path, v.body_sha256)).toBe(v.message);
      const key = deriveKey(v.secret, 'publish');
      expect(sign({ key, timestamp: v.timestamp, method: v.method, path: v.path, body: v.body })).toBe(v.signature);
    });
  }
});

describe('webhook signatures (section 5.5)', () => {
  const site = 'app-key';
  for (const v of vectors.webhooks) {
    const webhookKey = deriveKey(v.secret, 'webhook');
    const now = Number(v.timestamp) * 1000;
    const base = { site, webhookKey, path: v.path, body: v.body, nowMs: now };
    const headers = { site, timestamp: v.timestamp, signature: v.signature };
    it(`accepts the vector for ${v.path}`, () => {
      expect(checkWebhookSignature({ ...base, headers })).toBeNull();
    });
    it('checks in order: missing, stale, bad', () => {
      expect(checkWebhookSignature({ ...base, headers: { ...headers, site: 'other' } })).toBe('missing_signature');
      expect(checkWebhookSignature({ ...base, headers: { ...headers, timestamp: '12a' } })).toBe('missing_signature');
      expect(checkWebhookSignature({ ...base, headers: { ...headers, timestamp: '1234567890123' } })).toBe(
        'missing_signature',
      );
      expect(checkWebhookSignature({ ...base, headers: { ...headers, signature: undefined } })).toBe(
        'missing_signature',
      );
      expect(checkWebhookSignature({ ...base, nowMs: now + 301_000, headers })).toBe('stale_signature');
      expect(checkWebhookSignature({ ...base, nowMs: now - 301_000, headers })).toBe('stale_signature');
      expect(checkWebhookSignature({ ...base, nowMs: now + 300_000, headers })).toBeNull();
      expect(checkWebhookSignature({ ...base, body: `${v.body} `, headers })).toBe('bad_signature');
      expect(checkWebhookSignature({ ...base, path: `${v.path}&`, headers })).toBe('bad_signature');
      expect(checkWebhookSignature({ ...base, headers: { ...headers, signature: v.signature.toUpperCase() } })).toBe(
        'bad_signature',
      );
    });
  }
});

describe('sealing (section 5.4)', () => {
  for (const v of vectors.seal) {
    it(`seals and opens label ${v.label}`, () => {
      const local = hex(v.local_key);
      expect(toHex(sealingKey(local, v.label))).toBe(v.key);
      expect(seal(local, v.label, v.plaintext, hex(v.nonce))).toBe(v.sealed);
      expect(open(local, v.sealed)).toBe(v.plaintext);
      expect(openWithKey(hex(v.key), v.sealed)).toBe(v.plaintext);
      expect(isSealed(v.sealed)).toBe(true);
      expect(open(hex(vectors.local_key_other_app), v.sealed)).toBeNull();
    });
  }
  it('seals with a fresh random nonce each time', () => {
    const local = hex(vectors.seal[0]?.local_key ?? '');
    const a = seal(local, 'room:x', 'same');
    const b = seal(local, 'room:x', 'same');
    expect(a).not.toBe(b);
    expect(open(local, a)).toBe('same');
  });
  for (const v of vectors.open_null) {
    it(`opens to null: ${v.why}`, () => {
      expect(open(hex(vectors.seal[0]?.local_key ?? ''), v.value)).toBeNull();
    });
  }
  it('never throws on values of the wrong type', () => {
    const local = hex(vectors.seal[0]?.local_key ?? '');
    for (const bad of [null, undefined, 42, {}, []]) expect(open(local, bad as unknown as string)).toBeNull();
  });
});

describe('base64url', () => {
  it('round-trips every length and refuses non-canonical text', () => {
    for (let n = 0; n < 40; n++) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 255);
      const text = toBase64Url(bytes);
      expect(text).toBe(Buffer.from(bytes).toString('base64url'));
      expect(fromBase64Url(text)).toEqual(bytes);
    }
    expect(fromBase64Url('AB')).toBeNull(); // leftover bits not zero
    expect(fromBase64Url('A')).toBeNull();
    expect(fromBase64Url('AA==')).toBeNull();
    expect(fromBase64Url('AA+/')).toBeNull();
  });
});

describe('names (decisions.md)', () => {
  for (const name of names.rooms.good)
    it(`accepts room ${JSON.stringify(name).slice(0, 30)}`, () => {
      expect(roomNameProblem(name)).toBeUndefined();
    });
  for (const name of names.rooms.bad)
    it(`refuses room ${JSON.stringify(name).slice(0, 30)}`, () => {
      expect(roomNameProblem(name)).toBeTypeOf('string');
    });
  for (const name of names.events.good)
    it(`accepts event ${JSON.stringify(name).slice(0, 30)}`, () => {
      expect(eventNameProblem(name)).toBeUndefined();
    });
  for (const name of names.events.bad)
    it(`refuses event ${JSON.stringify(name).slice(0, 30)}`, () => {
      expect(eventNameProblem(name)).toBeTypeOf('string');
    });
  it('knows the reserved event names', () => {
    for (const name of names.events.reserved) expect(isReservedEvent(name)).toBe(true);
    expect(isReservedEvent('hello')).toBe(false);
  });
});

describe('names with lone surrogates', () => {
  it('refuses them as not UTF-8', () => {
    expect(roomNameProblem('\ud800x')).toMatch(/UTF-8/);
    expect(roomNameProblem('x\udc00')).toMatch(/UTF-8/);
    expect(roomNameProblem('\ud83d\ude00')).toBeUndefined();
  });
});
