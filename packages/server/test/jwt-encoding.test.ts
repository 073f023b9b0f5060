import { createHmac } from 'node:crypto';
import { CLOSE, deriveKey } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, openRawPage, type RawPage } from './pages.js';

/**
 * JWT parts must be canonical base64url: no padding, no `+` or `/`, and a last character whose
 * unused bits are zero. Every token below is correctly signed over exactly the text it carries (or,
 * for the signature's own spelling, decodes to the right signature), so only its encoding is wrong:
 * identity tokens close the page with 4002, room tokens are answered `bad_token`.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

const SECRET = 'jwt-encoding-secret-0123456789';
const key = deriveKey(SECRET, 'channels');
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ app: { secret: SECRET } });
});
afterAll(() => server.close());

const sign = (header: string, payload: string) =>
  `${header}.${payload}.${createHmac('sha256', key).update(`${header}.${payload}`).digest('base64url')}`;

/** The same bytes with the last character's unused bits set: decodes the same, spelled otherwise. */
function strayBits(part: string): string {
  const unused = part.length % 4 === 2 ? 4 : part.length % 4 === 3 ? 2 : 0;
  if (unused === 0) throw new Error(`no unused bits in a part of length ${part.length}`);
  const last = ALPHABET.indexOf(part.at(-1) ?? '');
  return part.slice(0, -1) + ALPHABET[last | 1];
}

const padded = (part: string) => part + '='.repeat((4 - (part.length % 4)) % 4 || 2);
const standard = (part: string) => part.replace(/-/g, '+').replace(/_/g, '/');

/** A header and claims whose base64url has unused bits and both `-` or `_`, found by a filler field. */
function parts(claims: Record<string, unknown>): { header: string; payload: string } {
  let header = '';
  let payload = '';
  for (let i = 0; ; i++) {
    header = b64({ alg: 'HS256', typ: 'JWT', kid: 'k'.repeat(i % 3) });
    payload = b64({ ...claims, pad: '?'.repeat(i), more: '>'.repeat(i % 5) });
    const unusedBits = (p: string) => p.length % 4 === 2 || p.length % 4 === 3;
    if (unusedBits(header) && unusedBits(payload) && /[-_]/.test(payload)) return { header, payload };
  }
}

/** Each way of spelling a token wrongly, and the canonical token itself. */
function variants(claims: Record<string, unknown>): { good: string; bad: [string, string][] } {
  const { header, payload } = parts(claims);
  const good = sign(header, payload);
  const signature = good.split('.')[2] ?? '';
  let withSignatureSymbols = good;
  // A signature with `-` or `_` in it, for its standard-base64 spelling: change the filler until one has.
  for (let i = 0; !/[-_]/.test(withSignatureSymbols.split('.')[2] ?? ''); i++) {
    withSignatureSymbols = sign(header, b64({ ...claims, n: i }));
  }
  const [sh, sp, ss] = withSignatureSymbols.split('.') as [string, string, string];
  return {
    good,
    bad: [
      ['a padded signature', `${header}.${payload}.${padded(signature)}`],
      ['a signature with stray bits in its last character', `${header}.${payload}.${strayBits(signature)}`],
      ['a signature with + or /', `${sh}.${sp}.${standard(ss)}`],
      ['a padded payload', sign(header, padded(payload))],
      ['a payload with stray bits', sign(header, strayBits(payload))],
      ['a payload with + or /', sign(header, standard(payload))],
      ['a padded header', sign(padded(header), payload)],
      ['a header with stray bits', sign(strayBits(header), payload)],
    ],
  };
}

const exp = () => Math.floor(Date.now() / 1000) + 600;

describe('identity tokens in canonical base64url only', () => {
  const { good, bad } = variants({ sub: 'alice', exp: exp() });

  it('takes the canonical token', async () => {
    const page = await helloPage(server.url, server.app.key, good);
    expect(page.frames.find((f) => f.t === 'welcome')).toMatchObject({ user: 'alice' });
    await page.close();
  });

  for (const [what, token] of bad) {
    it(`closes the page with 4002 for ${what}`, async () => {
      const page = await openRawPage(server.url, server.app.key);
      page.send({ t: 'hello', v: 1, identity: token });
      const closed = await page.closed;
      expect(closed.code).toBe(CLOSE.badIdentity);
      expect(closed.reason).toMatch(/identity token/);
      expect(page.frames.filter((f) => f.t === 'welcome')).toEqual([]);
    });
  }
});

describe('room tokens in canonical base64url only', () => {
  const { good, bad } = variants({ room: 'lobby', exp: exp() });
  let page: RawPage;

  beforeAll(async () => {
    page = await helloPage(server.url, server.app.key);
  });
  afterAll(() => page.close());

  for (const [i, [what, token]] of bad.entries()) {
    it(`answers bad_token for ${what}`, async () => {
      page.send({ t: 'join', ref: i, room: 'lobby', token });
      const answer = await page.next((f) => f.ref === i, `the answer to join ${i}`);
      expect(answer).toMatchObject({ t: 'error', code: 'bad_token', ref: i, room: 'lobby' });
    });
  }

  it('takes the canonical token', async () => {
    page.send({ t: 'join', ref: 100, room: 'lobby', token: good });
    expect(await page.next((f) => f.ref === 100, 'joined')).toMatchObject({ t: 'joined', room: 'lobby' });
  });
});
