import { deriveKey, ERRORS, isErrorCode, LIMITS, sign } from '@realtime/protocol';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, type RawAnswer, type RawRequest, send, startTestServer, type TestServer } from './helpers.js';

/**
 * Random requests at every endpoint of a running server, unsigned and correctly signed. Whatever
 * comes in, the answer follows the error catalogue: never 5xx, always JSON, `ok: false` with a code
 * of ERRORS at exactly its status and a one-line message, `ok: true` only with 200 and only for a
 * correctly signed request. The seed is fast-check's own: it prints it (and the shrunk request) on failure.
 */

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

// ---------------------------------------------------------------------------------------------
// The property

/** Line breaks of any kind (LF, CR, VT, FF, NEL, LS, PS; Unicode's mandatory breaks): a message is one line. */
const LINE_BREAK = /[\n\r\v\f\u0085\u2028\u2029]/;

interface Sent {
  method: string;
  path: string;
  /** Whether the signature headers are the right ones for this request (only then may it succeed). */
  signed: boolean;
}

/** JSON text with every character outside printable ASCII escaped, so that nothing hides in a report. */
function visible(value: unknown): string {
  return (JSON.stringify(value) ?? String(value)).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function describeRequest(sent: Sent, request: RawRequest): string {
  const body = Buffer.from(request.body ?? '');
  const shown =
    body.length > 300 ? `${body.subarray(0, 300).toString('utf8')}... (${body.length} bytes)` : String(body);
  return `${sent.method} ${visible(sent.path)} headers=${visible(request.headers ?? []).slice(0, 600)} body=${visible(shown)}`;
}

function checkAnswer(answer: RawAnswer, sent: Sent, request: RawRequest): void {
  const what = `${describeRequest(sent, request)}\n=> ${answer.status} ${visible(answer.text.slice(0, 500))}`;
  expect(answer.status, what).toBeLessThan(500);
  expect(String(answer.headers['content-type']), what).toMatch(/^application\/json/);
  if (sent.method === 'HEAD') {
    // No body comes back to HEAD; the status still follows the catalogue.
    expect(answer.text, what).toBe('');
    expect(answer.status, what).not.toBe(200);
    expect(
      Object.values(ERRORS).some((e) => e.status === answer.status),
      what,
    ).toBe(true);
    return;
  }
  let json: unknown;
  expect(() => {
    json = JSON.parse(answer.text);
  }, what).not.toThrow();
  expect(typeof json === 'object' && json !== null && !Array.isArray(json), what).toBe(true);
  const body = json as Record<string, unknown>;
  if (body.ok === true) {
    expect(answer.status, what).toBe(200);
    expect(sent.signed, `only a correctly signed request may succeed: ${what}`).toBe(true);
    return;
  }
  expect(body.ok, what).toBe(false);
  expect(isErrorCode(body.error), what).toBe(true);
  const code = body.error as keyof typeof ERRORS;
  expect(answer.status, what).toBe(ERRORS[code].status);
  expect(typeof body.message, what).toBe('string');
  const message = body.message as string;
  expect(message.trim(), what).not.toBe('');
  expect(LINE_BREAK.test(message), `the message is one line: ${what}`).toBe(false);
}

async function exchange(request: RawRequest, signed: boolean): Promise<void> {
  const method = request.method ?? (request.body === undefined ? 'GET' : 'POST');
  const sent = { method: method.toUpperCase(), path: request.path, signed };
  let answer: RawAnswer;
  try {
    answer = await send(server, request);
  } catch (error) {
    // No readable HTTP answer at all (connection dropped, malformed response).
    throw new Error(`no answer: ${(error as Error).message}\n${describeRequest(sent, request)}`);
  }
  checkAnswer(answer, sent, request);
}

/** fast-check picks the seed (and prints it on failure); each property gets its own share of runs. */
function check<T>(arbitrary: fc.Arbitrary<T>, numRuns: number, predicate: (value: T) => Promise<void>) {
  return fc.assert(fc.asyncProperty(arbitrary, predicate), { numRuns });
}

// ---------------------------------------------------------------------------------------------
// Generators

/** Characters that break lines, end strings or are not text at all, mixed into random text. */
const nasty = fc.constantFrom(
  '\n',
  '\r',
  '\u2028',
  '\u2029',
  '\v',
  '\f',
  '\u0085',
  '\u0000',
  '\u001b',
  '"',
  '\\',
  '\u007f',
);
const text = (maxLength: number) =>
  fc.oneof(
    { weight: 1, arbitrary: fc.string({ maxLength }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength }) },
    {
      weight: 3,
      arbitrary: fc.array(fc.oneof(nasty, fc.string({ maxLength: 3 })), { maxLength }).map((parts) => parts.join('')),
    },
  );

const anyJson = fc.jsonValue({ maxDepth: 3 });

/** Names for rooms, users, events: mostly fine, often at or over an edge. */
const name = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('a', 'b', 'lobby', 'user-1', 'é', 'room/with/slashes', 'x y') },
  { weight: 2, arbitrary: text(12) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      '$',
      '$member.joined',
      'a\u0000',
      'a\u007f',
      '\n',
      'a\u2028\u0000',
      '\u0085\u0001',
      '\ud800',
      'x'.repeat(100),
      'x'.repeat(101),
      'x'.repeat(200),
      'x'.repeat(201),
      'é'.repeat(100),
      'é'.repeat(101),
    ),
  },
);

const list = (item: fc.Arbitrary<unknown>) =>
  fc.oneof({ weight: 5, arbitrary: fc.array(item, { maxLength: 4 }) }, { weight: 1, arbitrary: anyJson });

const number = fc.oneof(
  fc.integer({ min: -10, max: 40_000 }),
  fc.double(),
  fc.constantFrom(0, 1, 1000, 1001, 168, 168.0001, 0.0001, -0, 30_000, 30_001),
);

const historyRule = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(number, number) },
  { weight: 1, arbitrary: fc.array(number, { maxLength: 3 }) },
  { weight: 1, arbitrary: anyJson },
);

/** An event to send: every field optional, each right, wrong in type, or at an edge. */
const event = fc.record(
  {
    rooms: list(name),
    users: list(name),
    event: fc.oneof({ weight: 4, arbitrary: name }, { weight: 1, arbitrary: anyJson }),
    data: anyJson,
    history: fc.oneof(fc.dictionary(name, historyRule, { maxKeys: 3 }), anyJson),
    extra: anyJson,
  },
  { requiredKeys: [] },
);

const batch = fc.record(
  {
    events: fc.oneof({ weight: 4, arbitrary: fc.array(event, { maxLength: 4 }) }, { weight: 1, arbitrary: anyJson }),
    extra: anyJson,
  },
  { requiredKeys: [] },
);

const ask = fc.record(
  {
    event: fc.oneof({ weight: 4, arbitrary: name }, { weight: 1, arbitrary: anyJson }),
    data: anyJson,
    timeout: fc.oneof(number, anyJson),
    all: fc.oneof(fc.boolean(), anyJson),
    extra: anyJson,
  },
  { requiredKeys: [] },
);

/** A JSON object written by hand: duplicate keys, odd spacing, keys JSON.stringify would never repeat. */
const rawObject = fc
  .array(
    fc.tuple(
      fc.constantFrom(
        'rooms',
        'users',
        'event',
        'data',
        'history',
        'events',
        'timeout',
        'all',
        '__proto__',
        'dat\\u0061',
      ),
      anyJson,
    ),
    { maxLength: 6 },
  )
  .chain((entries) =>
    fc.constantFrom(' ', '', '\n\t').map((space) => {
      const members = entries.map(([key, value]) => `${space}"${key}"${space}:${space}${JSON.stringify(value)}`);
      return `{${members.join(',')}${space}}`;
    }),
  );

/** Bodies of every kind; `shaped` is a near-valid body for the endpoint at hand. */
const body = (shaped: fc.Arbitrary<unknown>): fc.Arbitrary<string | Buffer | undefined> =>
  fc.oneof(
    { weight: 1, arbitrary: fc.constant<string | Buffer | undefined>(undefined) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)) },
    { weight: 2, arbitrary: text(60) },
    { weight: 2, arbitrary: anyJson.map((value) => JSON.stringify(value)) },
    { weight: 2, arbitrary: rawObject },
    { weight: 6, arbitrary: shaped.map((value) => JSON.stringify(value)) },
  );

/** Path segments: fine, reserved, too long, badly percent-encoded, raw. */
const segment = fc.oneof(
  { weight: 3, arbitrary: name.map((value) => encodeURIComponent(value.replace(/[\ud800-\udfff]/g, 'x'))) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '%',
      '%zz',
      '%E0%A4%A',
      '%C0%80',
      '%FF',
      'a%2',
      '%%',
      '%24x',
      '%00',
      '%0A',
      '%7F',
      '..',
      '.',
    ),
  },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@%-]{1,30}$/) },
  { weight: 1, arbitrary: fc.integer({ min: 190, max: 210 }).map((n) => 'u'.repeat(n)) },
);

const query = fc.oneof(
  { weight: 5, arbitrary: fc.constant('') },
  {
    weight: 1,
    arbitrary: fc.constantFrom('?', '?&', '?ids', '?ids=', '?ids=a&ids=b', '?x=1', '?%zz=1', '?ids=%zz', '?ids=+'),
  },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.tuple(fc.constantFrom('ids', 'id', 'x', '', 'IDS', 'ids%5B%5D'), fc.array(segment, { maxLength: 4 })), {
        minLength: 1,
        maxLength: 3,
      })
      .map((parts) => `?${parts.map(([key, ids]) => `${key}=${ids.join(',')}`).join('&')}`),
  },
);

interface Endpoint {
  method: string;
  path: fc.Arbitrary<string>;
  body: fc.Arbitrary<unknown>;
}

const ENDPOINTS: Endpoint[] = [
  { method: 'POST', path: fc.constant(`${API}/emit`), body: event },
  { method: 'POST', path: fc.constant(`${API}/emit/batch`), body: batch },
  { method: 'POST', path: segment.map((user) => `${API}/users/${user}/ask`), body: ask },
  { method: 'GET', path: fc.constant(`${API}/online`), body: fc.constant({}) },
  { method: 'POST', path: fc.constant(`${API}/webhooks/test`), body: fc.constant({}) },
  { method: 'GET', path: fc.constant(`${API}/webhooks`), body: fc.constant({}) },
  { method: 'POST', path: segment.map((id) => `${API}/webhooks/${id}/resend`), body: fc.constant({}) },
];

const endpoint = fc.constantFrom(...ENDPOINTS);

/** The real paths, bent: trailing slash, doubled slash, case, extra or missing segments, nonsense. */
const bentPath = fc.oneof(
  endpoint.chain((e) => e.path).map((path) => `${path}/`),
  endpoint.chain((e) => e.path).map((path) => path.replace('/realtime/', '//realtime/')),
  endpoint.chain((e) => e.path).map((path) => path.toUpperCase()),
  endpoint.chain((e) => e.path).map((path) => path.replace('/service/realtime', '')),
  fc
    .tuple(
      endpoint.chain((e) => e.path),
      segment,
    )
    .map(([path, extra]) => `${path}/${extra}`),
  fc.array(segment, { maxLength: 5 }).map((parts) => `/${parts.join('/')}`),
  fc.constantFrom('/', '*', `${API}`, `${API}/`, `${API}/users/ask`, `${API}/users//ask`, `${API}/webhooks//resend`),
);

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE'];
// CONNECT is left out: Node's client reports its answer as a tunnel, not a response; ask-online.test.ts checks it raw.
const method = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...METHODS) },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Z]{3,9}$/).filter((m) => m !== 'CONNECT') },
  { weight: 1, arbitrary: fc.constantFrom('post', 'Get') },
);

/** A request at a real endpoint with its own method most of the time, so validation is reached. */
const target = fc.oneof(
  {
    weight: 4,
    arbitrary: endpoint.chain((e) =>
      fc.record({ method: fc.constant(e.method), path: e.path, query, body: body(e.body) }),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record({ method, path: endpoint.chain((e) => e.path), query, body: body(anyJson) }),
  },
  { weight: 1, arbitrary: fc.record({ method, path: bentPath, query, body: body(event) }) },
);

/** A long run of one character, printed short in a counterexample. */
class Run {
  constructor(
    readonly char: string,
    readonly count: number,
  ) {}
  toString(): string {
    return this.char.repeat(this.count);
  }
  [fc.toStringMethod](): string {
    return `${JSON.stringify(this.char)}.repeat(${this.count})`;
  }
}

/** Header values a client should never send (still legal bytes on the wire); some over 16 KB. */
const garbage = fc.oneof(
  fc.stringMatching(/^[\t\x20-\x7e]{0,40}$/),
  fc.string({ unit: fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 8 }),
  fc.integer({ min: 1000, max: 20_000 }).map((n) => new Run('x', n)),
);

type Choice<T extends string> = fc.Arbitrary<T>;
const site: Choice<string> = fc.constantFrom('right', 'missing', 'empty', 'unknown', 'twice', 'garbage');
const stamp: Choice<string> = fc.constantFrom(
  'now',
  'recent',
  'missing',
  'empty',
  'stale',
  'future',
  'nondigit',
  'overlong',
  'twice',
  'zero',
);
const signature: Choice<string> = fc.constantFrom(
  'right',
  'upper',
  'missing',
  'empty',
  'garbage',
  'short',
  'twice',
  'other-secret',
);
const contentType = fc.constantFrom(
  'json',
  'json; charset=utf-8',
  'JSON',
  'empty',
  'text/plain',
  'application/jsonx',
  'twice',
  'garbage',
);
const extraHeader = fc.tuple(
  fc.oneof(
    fc.constantFrom(
      'Expect',
      'Connection',
      'Upgrade',
      'Accept',
      'Content-Encoding',
      'Authorization',
      'X-Service-Batch',
    ),
    fc.stringMatching(/^X-[A-Za-z0-9-]{1,12}$/),
  ),
  fc.oneof(garbage, fc.constantFrom('100-continue', 'close', 'keep-alive', 'websocket', 'gzip')),
);

const headerPlan = fc.record({
  site,
  stamp,
  signature,
  contentType,
  extra: fc.array(extraHeader, { maxLength: 3 }),
  digits: fc.integer({ min: 13, max: 40 }),
  nondigit: fc.constantFrom('12a', '1e9', ' 123', '+123', '-1', '0x10', '1.5', '1_700_000_000', 'Infinity', 'NaN'),
  garbage,
});

// ---------------------------------------------------------------------------------------------
// Properties

describe('random requests at every endpoint', () => {
  it('random header sets (missing, repeated, garbage, stale, overlong) with random requests', async () => {
    await check(fc.tuple(target, headerPlan), 150, async ([t, plan]) => {
      const path = `${t.path}${t.query}`;
      const bodyBytes = t.body === undefined ? Buffer.alloc(0) : Buffer.from(t.body);
      const now = Math.floor(Date.now() / 1000);
      const timestamp = {
        now: String(now),
        recent: String(now - 200),
        missing: '',
        empty: '',
        stale: String(now - LIMITS.clockSkewSeconds - 100),
        future: String(now + LIMITS.clockSkewSeconds + 100),
        nondigit: plan.nondigit,
        overlong: '1'.repeat(plan.digits),
        twice: String(now),
        zero: '0',
      }[plan.stamp] as string;
      const right = sign({
        key: deriveKey(server.app.secret, 'publish'),
        timestamp,
        method: t.method,
        path,
        body: bodyBytes,
      });
      const headers: [string, string][] = [];
      const add = (header: string, choice: string, value: string, garbageValue: string | Run) => {
        if (choice === 'missing') return;
        if (choice === 'empty') headers.push([header, '']);
        else if (choice === 'garbage') headers.push([header, String(garbageValue)]);
        else headers.push([header, value]);
        if (choice === 'twice') headers.push([header, value]);
      };
      add('X-Service-Site', plan.site, plan.site === 'unknown' ? 'app_unknown' : server.app.key, plan.garbage);
      add('X-Service-Timestamp', plan.stamp, timestamp, plan.garbage);
      const signatures: Record<string, string> = {
        right,
        upper: right.toUpperCase(),
        short: right.slice(1),
        'other-secret': sign({
          key: deriveKey('another secret!!', 'publish'),
          timestamp,
          method: t.method,
          path,
          body: bodyBytes,
        }),
      };
      add('X-Service-Signature', plan.signature, signatures[plan.signature] ?? right, plan.garbage);
      const types: Record<string, string> = { json: 'application/json', JSON: 'APPLICATION/JSON' };
      const type = types[plan.contentType] ?? plan.contentType;
      if (plan.contentType === 'twice')
        headers.push(['Content-Type', 'application/json'], ['Content-Type', 'application/json']);
      else add('Content-Type', plan.contentType, type, plan.garbage);
      for (const [header, value] of plan.extra) headers.push([header, String(value)]);
      const signed =
        plan.site === 'right' &&
        (plan.stamp === 'now' || plan.stamp === 'recent') &&
        (plan.signature === 'right' || plan.signature === 'upper');
      const request: RawRequest = { method: t.method, path, unsigned: true, headers };
      if (t.body !== undefined) request.body = t.body;
      await exchange(request, signed);
    });
  });

  it('unsigned requests: method, path, query and body at random', async () => {
    await check(target, 60, async (t) => {
      const request: RawRequest = { method: t.method, path: `${t.path}${t.query}`, unsigned: true };
      if (t.body !== undefined) request.body = t.body;
      await exchange(request, false);
    });
  });

  it('correctly signed requests with random and near-valid bodies reach validation', async () => {
    await check(target, 150, async (t) => {
      const request: RawRequest = { method: t.method, path: `${t.path}${t.query}` };
      if (t.body !== undefined) request.body = t.body;
      await exchange(request, true);
    });
  });

  it('correctly signed requests at and over the limits (targets, batch size, data size, body size, ids)', async () => {
    // Small parameters are generated (and printed on failure); the bodies are built from them.
    const room = (i: number) => `r${i}`;
    const rooms = (n: number) => Array.from({ length: n }, (_, i) => room(i));
    const sizes = fc.oneof(
      fc.record({ kind: fc.constant('targets' as const), n: fc.integer({ min: 990, max: 1010 }), users: fc.nat(100) }),
      fc.record({ kind: fc.constant('batch' as const), n: fc.integer({ min: 95, max: 105 }) }),
      fc.record({
        kind: fc.constant('data' as const),
        delta: fc.integer({ min: -3, max: 3 }),
        spaces: fc.nat(4),
        where: fc.constantFrom('emit', 'batch', 'ask'),
      }),
      fc.record({ kind: fc.constant('body' as const), delta: fc.integer({ min: -2, max: 2 }), json: fc.boolean() }),
      fc.record({ kind: fc.constant('ids' as const), n: fc.integer({ min: 995, max: 1005 }) }),
      fc.record({ kind: fc.constant('history' as const), n: fc.integer({ min: 1, max: 1000 }) }),
    );
    await check(sizes, 40, async (size) => {
      let path = `${API}/emit`;
      let body: string | undefined;
      switch (size.kind) {
        case 'targets': {
          // Rooms plus users around 1,000.
          const users = Math.min(size.users, size.n);
          body = JSON.stringify({
            rooms: rooms(size.n - users),
            users: Array.from({ length: users }, (_, i) => `u${i}`),
            event: 'e',
          });
          break;
        }
        case 'batch':
          // Events per batch around 100.
          path = `${API}/emit/batch`;
          body = JSON.stringify({ events: rooms(size.n).map((r, i) => ({ rooms: [r], event: 'e', data: i })) });
          break;
        case 'data': {
          // data around 1 MB as sent (spaces count), in emit, batch and ask.
          const data = `[${' '.repeat(size.spaces)}"${'x'.repeat(LIMITS.dataBytes - 4 - size.spaces + size.delta)}"]`;
          const one = `{"rooms":["a"],"event":"e","data":${data}}`;
          if (size.where === 'emit') body = one;
          else if (size.where === 'batch') {
            path = `${API}/emit/batch`;
            body = `{"events":[{"rooms":["a"],"event":"e"},${one}]}`;
          } else {
            path = `${API}/users/u1/ask`;
            body = `{"event":"e","timeout":1,"data":${data}}`;
          }
          break;
        }
        case 'body': {
          // Whole bodies around 2 MB: refused before parsing, whatever they hold.
          const bytes = LIMITS.bodyBytes + size.delta;
          body = size.json ? `{"rooms":["a"],"event":"e","data":"${'y'.repeat(bytes - 37)}"}` : 'z'.repeat(bytes);
          break;
        }
        case 'ids':
          // Ids around 1,000 for online.
          path = `${API}/online?ids=${Array.from({ length: size.n }, (_, i) => `u${i}`).join(',')}`;
          break;
        case 'history':
          // Many history rules, one per room.
          body = JSON.stringify({
            rooms: rooms(size.n),
            event: 'e',
            history: Object.fromEntries(rooms(size.n).map((r) => [r, [1, 1]])),
          });
          break;
      }
      const request: RawRequest = { method: body === undefined ? 'GET' : 'POST', path };
      if (body !== undefined) request.body = body;
      await exchange(request, true);
    });
  });

  it('correctly signed requests with deeply nested JSON anywhere in the body', async () => {
    const nesting = fc.record({
      depth: fc.integer({ min: 1, max: 20_000 }),
      open: fc.constantFrom('[', '{"a":'),
      where: fc.constantFrom('data', 'rooms', 'history', 'body', 'batch', 'ask', 'events'),
    });
    await check(nesting, 40, async ({ depth, open, where }) => {
      const deep = `${open.repeat(depth)}1${(open === '[' ? ']' : '}').repeat(depth)}`;
      const bodies: Record<string, [string, string]> = {
        data: [`${API}/emit`, `{"rooms":["a"],"event":"e","data":${deep}}`],
        rooms: [`${API}/emit`, `{"rooms":${deep},"event":"e"}`],
        history: [`${API}/emit`, `{"rooms":["a"],"event":"e","history":{"a":${deep}}}`],
        body: [`${API}/emit`, deep],
        batch: [`${API}/emit/batch`, `{"events":[{"rooms":["a"],"event":"e","data":${deep}}]}`],
        ask: [`${API}/users/u1/ask`, `{"event":"e","timeout":1,"data":${deep}}`],
        events: [`${API}/emit/batch`, `{"events":${deep}}`],
      };
      const [path, body] = bodies[where] as [string, string];
      await exchange({ method: 'POST', path, body }, true);
    });
  });

  it('still answers a valid emit afterwards', async () => {
    const answer = await send(server, {
      path: `${API}/emit`,
      body: JSON.stringify({ rooms: ['lobby'], event: 'hello', data: { text: 'hi' } }),
    });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ ok: true, ids: {} });
  });
});
