import { readFileSync } from 'node:fs';
import { Realtime } from '@realtime/node';
import { ERRORS } from '@realtime/protocol';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { StoreErrorKind } from '../packages/server/src/engines/store-error.js';
import type { HistoryStore, WebhookStore } from '../packages/server/src/engines/types.js';
import { HEALTH_PATH, METRICS_PATH, READY_PATH } from '../packages/server/src/http/ops.js';
import { ROUTES } from '../packages/server/src/http/routes.js';
import { type App, newApp } from '../packages/server/src/index.js';
import { failingAppends } from '../packages/server/test/failing-stores.js';
import {
  API,
  type RawAnswer,
  type RawRequest,
  send,
  startTestServer,
  type TestServer,
} from '../packages/server/test/helpers.js';
import { helloPage, type RawPage } from '../packages/server/test/pages.js';
import { type Receiver, startReceiver } from '../packages/server/test/receiver.js';

/**
 * docs/openapi.yaml against the OpenAPI 3.1 schema, against the server's routes (both ways), and
 * against real answers of a real server: every answer's status must be documented for its operation
 * and its body and headers must validate against what is documented.
 */

type Json = Record<string, unknown>;

const text = readFileSync(new URL('../docs/openapi.yaml', import.meta.url), 'utf8');
const doc = parse(text) as Json;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

function obj(value: unknown, what: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${what} is not an object`);
  return value as Json;
}

/** Follows a local `$ref` (`#/components/...`) to what it names, repeatedly. */
function deref(value: unknown, what: string): Json {
  let node = obj(value, what);
  for (let hops = 0; typeof node.$ref === 'string'; hops++) {
    if (hops > 10 || !node.$ref.startsWith('#/')) throw new Error(`${what}: cannot follow ${node.$ref}`);
    let target: unknown = doc;
    for (const part of node.$ref.slice(2).split('/'))
      target = obj(target, node.$ref)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
    node = obj(target, node.$ref);
  }
  return node;
}

const paths = obj(doc.paths, 'paths');
const components = obj(doc.components, 'components');

interface Operation {
  method: string;
  template: string;
  op: Json;
}

function operations(): Operation[] {
  const found: Operation[] = [];
  for (const [template, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = obj(item, template)[method];
      if (op !== undefined)
        found.push({ method: method.toUpperCase(), template, op: obj(op, `${method} ${template}`) });
    }
  }
  return found;
}

/** A concrete path for a template: each `{param}` becomes one segment. */
const sample = (template: string) => template.replace(/\{[^}]+\}/g, 'x');

// Schemas: components.schemas become $defs of one schema with an absolute id, so every $ref resolves.
const BASE = 'https://realtime.invalid/openapi.json';
function absolute(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(absolute);
  if (typeof node !== 'object' || node === null) return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] =
      key === '$ref' && typeof value === 'string' && value.startsWith('#/components/schemas/')
        ? `${BASE}#/$defs/${value.slice('#/components/schemas/'.length)}`
        : absolute(value);
  }
  return out;
}
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
ajv.addSchema({ $id: BASE, $defs: absolute(components.schemas) as Json });
const compiled = new Map<unknown, ValidateFunction>();

function schemaErrors(schema: unknown, value: unknown): string | undefined {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(absolute(schema) as Json);
    compiled.set(schema, validate);
  }
  return validate(value) ? undefined : ajv.errorsText(validate.errors);
}

function expectValid(schema: unknown, value: unknown, what: string): void {
  expect(schemaErrors(schema, value), `${what}: ${JSON.stringify(value)?.slice(0, 300)}`).toBeUndefined();
}

/** `${METHOD} ${template} ${status}` of every real answer checked. */
const checked = new Set<string>();

/**
 * Checks one real answer against the document: its path and method, its status among the documented
 * ones (a 405 against the operations of its path), its headers and its body.
 */
function checkAnswer(method: string, target: string, answer: RawAnswer): void {
  const path = target.split('?')[0] as string;
  const template = Object.keys(paths).find((t) =>
    new RegExp(`^${t.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+')}$`).test(path),
  );
  if (template === undefined) throw new Error(`${method} ${path} is no documented path (answered ${answer.status})`);
  const item = obj(paths[template], template);
  let op = item[method.toLowerCase()];
  if (op === undefined) {
    // A method the path does not take: any operation of the path documents the 405.
    expect(answer.status, `${method} ${path}`).toBe(405);
    op = Object.values(item).find((o) => obj(obj(o, template).responses, template)['405'] !== undefined);
  }
  const responses = obj(obj(op, `${method} ${template}`).responses, `${method} ${template}`);
  const documented = responses[String(answer.status)] ?? responses[`${String(answer.status)[0]}XX`];
  expect(documented, `${method} ${template} answered ${answer.status}: ${answer.text.slice(0, 200)}`).toBeDefined();
  const response = deref(documented, `${method} ${template} ${answer.status}`);
  const where = `${method} ${path} ${answer.status}`;
  for (const [name, raw] of Object.entries(obj(response.headers ?? {}, 'headers'))) {
    const header = deref(raw, name);
    const value = answer.headers[name.toLowerCase()];
    if (header.required === true) expect(value, `${where}: header ${name}`).toBeDefined();
    if (typeof value !== 'string') continue;
    const schema = obj(header.schema, name);
    expectValid(schema, schema.type === 'integer' ? Number(value) : value, `${where}: header ${name}`);
  }
  if (response.content === undefined) {
    expect(answer.text, `${where}: no body is documented`).toBe('');
  } else {
    const contentType = String(answer.headers['content-type'] ?? '');
    const media = Object.entries(obj(response.content, 'content')).find(([type]) => contentType.startsWith(type));
    expect(media, `${where}: content type ${contentType} is documented`).toBeDefined();
    const [type, body] = media as [string, unknown];
    const value = type === 'application/json' ? JSON.parse(answer.text) : answer.text;
    expectValid(obj(body, type).schema, value, where);
  }
  checked.add(`${method} ${template} ${answer.status}`);
}

/** Sends one request (signed unless told) and checks its answer against the document. */
async function call(server: { url: string; app: App }, req: RawRequest): Promise<RawAnswer> {
  const answer = await send(server, req);
  checkAnswer(req.method ?? (req.body === undefined ? 'GET' : 'POST'), req.path, answer);
  return answer;
}

const postJson = (server: { url: string; app: App }, path: string, value: unknown) =>
  call(server, { path, body: JSON.stringify(value) });

/** History appends fail for these rooms, through the server's store seam (as storage-full.test.ts does). */
const FAILING_ROOMS: Record<string, StoreErrorKind> = { 'full-room': 'full', 'broken-room': 'unavailable' };

function failingHistory(stores: { history: HistoryStore; webhooks: WebhookStore }) {
  const { history } = stores;
  const wrapped = failingAppends(history, (room) => FAILING_ROOMS[room]);
  return { history: wrapped, webhooks: stores.webhooks };
}

describe('docs/openapi.yaml', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors, JSON.stringify(result.errors, null, 1)?.slice(0, 2000)).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('documents every route of the server and the operational endpoints, and nothing else', () => {
    const documented = operations();
    for (const route of ROUTES) {
      const matches = documented.filter((o) => o.method === route.method && route.pattern.test(sample(o.template)));
      expect(
        matches.map((o) => o.template),
        `${route.method} ${route.name}`,
      ).toHaveLength(1);
    }
    const opsPaths = [HEALTH_PATH, READY_PATH, METRICS_PATH];
    for (const path of opsPaths) {
      expect(Object.keys(obj(paths[path], path)).filter((k) => (METHODS as readonly string[]).includes(k))).toEqual([
        'get',
        'head',
      ]);
    }
    for (const { method, template, op } of documented) {
      const route = ROUTES.find((r) => r.method === method && r.pattern.test(sample(template)));
      if (route) {
        // Signed: the document-wide signature requirement applies (no override).
        expect(op.security, `${method} ${template}`).toBeUndefined();
        continue;
      }
      expect(opsPaths, `${method} ${template} is a server route`).toContain(template);
      expect(op.security, `${method} ${template} is unsigned`).toBeDefined();
    }
    expect(doc.security).toEqual([{ ServiceSite: [], ServiceTimestamp: [], ServiceSignature: [] }]);
  });

  it('has the error codes of ERRORS, each only under its own status', () => {
    const codes = obj(components.schemas, 'schemas').ErrorCode as { enum: string[] };
    const known: Record<string, { status: number }> = { ...ERRORS };
    expect([...codes.enum].sort()).toEqual(Object.keys(known).sort());
    const used = new Set<string>();
    for (const { method, template, op } of operations()) {
      for (const [status, raw] of Object.entries(obj(op.responses, template))) {
        const response = deref(raw, `${method} ${template} ${status}`);
        const json: unknown = response.content && obj(response.content, status)['application/json'];
        const schema: unknown = json && obj(json, status).schema;
        const narrowing = schema ? (obj(schema, status).allOf as Json[] | undefined)?.[1] : undefined;
        if (!narrowing) continue;
        const error = obj(obj(narrowing.properties, status).error, status);
        const listed = (error.enum as string[] | undefined) ?? [error.const as string];
        for (const code of listed) {
          expect(known[code]?.status, `${method} ${template} ${status} ${code}`).toBe(Number(status));
          used.add(code);
        }
      }
    }
    // Every code an operation can give is under some operation; request_timeout belongs to the connection.
    expect(Object.keys(known).filter((code) => !used.has(code))).toEqual(['request_timeout']);
  });

  it('has examples that validate against their schemas', () => {
    let count = 0;
    const mediaExamples = (content: unknown, where: string) => {
      for (const [type, raw] of Object.entries(obj(content ?? {}, where))) {
        const media = obj(raw, `${where} ${type}`);
        if (media.example !== undefined) {
          expectValid(media.schema, media.example, `${where} ${type} example`);
          count++;
        }
        for (const [name, example] of Object.entries(obj(media.examples ?? {}, where))) {
          expectValid(media.schema, obj(example, name).value, `${where} ${type} example ${name}`);
          count++;
        }
      }
    };
    const hooks = Object.entries(obj(doc.webhooks, 'webhooks')).map(([name, item]) => ({
      method: 'POST',
      template: `webhook ${name}`,
      op: obj(obj(item, name).post, name),
    }));
    for (const { method, template, op } of [...operations(), ...hooks]) {
      const where = `${method} ${template}`;
      if (op.requestBody) mediaExamples(deref(op.requestBody, where).content, `${where} request`);
      for (const [status, raw] of Object.entries(obj(op.responses, where))) {
        mediaExamples(deref(raw, `${where} ${status}`).content, `${where} ${status}`);
      }
      for (const raw of (op.parameters as unknown[] | undefined) ?? []) {
        const parameter = deref(raw, where);
        if (parameter.example !== undefined)
          expectValid(parameter.schema, parameter.example, `${where} ${parameter.name}`);
      }
    }
    for (const [name, schema] of Object.entries(obj(components.schemas, 'schemas'))) {
      for (const example of (obj(schema, name).examples as unknown[] | undefined) ?? []) {
        expectValid(schema, example, `schema ${name} example`);
        count++;
      }
    }
    expect(count).toBeGreaterThan(30);
  });
});

describe('docs/openapi.yaml against a real server', () => {
  const METRICS_TOKEN = 'openapi-test-metrics-token';
  let server: TestServer;
  let receiver: Receiver;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  const fast = { perSecond: 100_000, burst: 100_000 };
  /** Has webhooks in its plan but no address. */
  const noHook = newApp({ name: 'no-hook', rateLimit: fast });
  /** A plan without any feature. */
  const bare = newApp({ name: 'bare', features: [], rateLimit: fast });
  /** One request, then rate limited for a long while. */
  const tiny = newApp({ name: 'tiny', rateLimit: { perSecond: 0.001, burst: 1 } });
  const as = (app: App) => ({ url: server.url, app });

  beforeAll(async () => {
    const app = newApp({ name: 'openapi', rateLimit: fast });
    receiver = await startReceiver(app);
    server = await startTestServer({
      app: { ...app, webhook: receiver.url },
      apps: [noHook, bare, tiny],
      allowPrivateWebhooks: true,
      metricsToken: METRICS_TOKEN,
      offlineDelayMs: 200,
      // Failed batches wait: nothing is retried while the test looks at them.
      webhooks: { windowMs: 100, retryDelaysMs: [600_000], answerMs: 2000 },
      wrapStores: failingHistory,
    });
    sdk = new Realtime({ url: server.url, key: app.key, secret: app.secret });
  });

  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk?.close();
    await server?.close();
    await receiver?.close();
  });

  it('emit and emit/batch: 200, 400, 413 and 503 answers', async () => {
    const ok = await postJson(server, `${API}/emit`, {
      rooms: ['lobby', 'plain'],
      users: ['alice'],
      event: 'chat',
      data: { text: 'hi' },
      history: { lobby: [100, 24] },
    });
    expect(Object.keys(ok.json.ids as Json)).toEqual(['lobby']);
    await postJson(server, `${API}/emit`, { users: ['alice'], event: 'direct' });
    const batch = await postJson(server, `${API}/emit/batch`, {
      events: [
        { rooms: ['a'], event: 'e', data: 1, history: { a: [10, 0.5] } },
        { users: ['bob'], event: 'f' },
      ],
    });
    expect(batch.json.ids).toHaveLength(2);

    const refusals: [string, unknown, string][] = [
      ['emit', { event: 'e' }, 'bad_request'],
      ['emit', { rooms: ['a'], event: 'e', extra: 1 }, 'bad_request'],
      ['emit', { rooms: ['a'], event: 'e', history: { b: [1, 1] } }, 'bad_request'],
      ['emit', { rooms: ['$x'], event: 'e' }, 'bad_room'],
      ['emit', { rooms: ['a'], event: '$e' }, 'reserved'],
      ['emit', { rooms: Array.from({ length: 1001 }, () => 'r'), event: 'e' }, 'too_many'],
      ['emit/batch', { events: [] }, 'bad_request'],
      [
        'emit/batch',
        {
          events: [
            { rooms: ['a'], event: 'e' },
            { rooms: ['a'], event: '$f' },
          ],
        },
        'reserved',
      ],
      ['emit/batch', { events: Array.from({ length: 101 }, () => ({ rooms: ['a'], event: 'e' })) }, 'too_many'],
      ['emit', { rooms: ['full-room'], event: 'e', history: { 'full-room': [10, 1] } }, 'storage_full'],
      ['emit', { rooms: ['broken-room'], event: 'e', history: { 'broken-room': [10, 1] } }, 'unavailable'],
      [
        'emit/batch',
        { events: [{ rooms: ['full-room'], event: 'e', history: { 'full-room': [1, 1] } }] },
        'storage_full',
      ],
      [
        'emit/batch',
        { events: [{ rooms: ['broken-room'], event: 'e', history: { 'broken-room': [1, 1] } }] },
        'unavailable',
      ],
    ];
    for (const [path, body, code] of refusals) {
      const answer = await postJson(server, `${API}/${path}`, body);
      expect(answer.json.error, `${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(code);
    }
    const tooLarge = await call(server, {
      path: `${API}/emit`,
      body: `{"rooms":["a"],"event":"e","data":"${'x'.repeat(1_048_576)}"}`,
    });
    expect([tooLarge.status, tooLarge.json.error]).toEqual([413, 'too_large']);
    const overBody = await call(server, { path: `${API}/emit/batch`, body: Buffer.alloc(2 * 1_048_576 + 1, 0x20) });
    expect([overBody.status, overBody.json.error]).toEqual([413, 'too_large']);
    const twice = await call(server, {
      path: `${API}/emit`,
      body: '{"rooms":["a"],"event":"e"}',
      // The first replaces the helper's own Content-Type, the second repeats it.
      headers: [
        ['Content-Type', 'application/json'],
        ['Content-Type', 'application/json'],
      ],
    });
    expect([twice.status, twice.json.error]).toEqual([400, 'bad_request']);
  });

  it('ask and online: 200 with a page that replies, and their 400 and 413 answers', async () => {
    const page = await helloPage(server.url, server.app.key, await sdk.identityToken('alice'));
    pages.push(page);
    const asked = postJson(server, `${API}/users/alice/ask`, { event: 'confirm', data: { n: 1 }, timeout: 5000 });
    const frame = await page.next((f) => f.t === 'ask', 'the ask');
    page.send({ t: 'reply', ask: frame.ask, data: { confirmed: true } });
    const answer = await asked;
    expect((answer.json.replies as Json[])[0]?.data).toEqual({ confirmed: true });
    const none = await postJson(server, `${API}/users/${encodeURIComponent('nobody here')}/ask`, {
      event: 'q',
      all: true,
      timeout: 1,
    });
    expect(none.json.replies).toEqual([]);

    const online = await call(server, { path: `${API}/online?ids=alice,bob%2Cjr,alice` });
    expect(online.json.online).toEqual(['alice']);

    for (const [path, body, code] of [
      ['/users/alice/ask', { event: '$q' }, 'bad_event'],
      ['/users/alice/ask', { event: 'q', timeout: 0 }, 'bad_request'],
      ['/users/alice/ask', { event: 'q', all: null }, 'bad_request'],
      ['/users/%24root/ask', { event: 'q' }, 'bad_request'],
      ['/users/%zz/ask', { event: 'q' }, 'bad_request'],
    ] as const) {
      expect((await postJson(server, `${API}${path}`, body)).json.error, path).toBe(code);
    }
    const big = await call(server, {
      path: `${API}/users/alice/ask`,
      body: `{"event":"q","data":"${'z'.repeat(1_048_576)}"}`,
    });
    expect([big.status, big.json.error]).toEqual([413, 'too_large']);

    for (const [target, code] of [
      [`${API}/online`, 'bad_request'],
      [`${API}/online?ids=`, 'bad_request'],
      [`${API}/online?ids=a,,b`, 'bad_request'],
      [`${API}/online?ids=a&x=1`, 'bad_request'],
      [`${API}/online?ids=${Array.from({ length: 1001 }, (_, i) => `u${i}`).join(',')}`, 'too_many'],
    ] as const) {
      expect((await call(server, { path: target })).json.error, target.slice(0, 60)).toBe(code);
    }
    const withBody = await call(server, { method: 'GET', path: `${API}/online?ids=a`, body: '{}' });
    expect(withBody.json.error).toBe('bad_request');
  });

  it('webhook endpoints: 200 for test, list and resend; 400, 404, 409 and 413', async () => {
    receiver.mode = 'ok';
    const taken = await call(server, { method: 'POST', path: `${API}/webhooks/test` });
    expect(taken.json).toEqual({ ok: true, delivered: true, status: 204 });
    receiver.mode = 'fail';
    const failed = await call(server, { path: `${API}/webhooks/test`, body: '{}' });
    expect(failed.json).toEqual({ ok: true, delivered: false, status: 500 });
    receiver.mode = 'drop';
    const dropped = await call(server, { method: 'POST', path: `${API}/webhooks/test` });
    expect(dropped.json).toEqual({ ok: true, delivered: false, status: 0 });

    const list = await call(server, { path: `${API}/webhooks` });
    const deliveries = list.json.deliveries as { id: string; status: number; error?: string; resendable: boolean }[];
    expect(deliveries.some((d) => d.status === 0 && d.error === 'unreachable')).toBe(true);
    const retrying = deliveries.find((d) => d.status === 500 && d.resendable);
    expect(retrying).toBeDefined();

    receiver.mode = 'ok';
    const resend = `${API}/webhooks/${encodeURIComponent(retrying?.id ?? '')}/resend`;
    const resent = await call(server, { method: 'POST', path: resend });
    expect(resent.json).toEqual({ ok: true, delivered: true, status: 204 });
    expect((await call(server, { method: 'POST', path: resend })).json.error).toBe('not_resendable');
    expect((await call(server, { method: 'POST', path: `${API}/webhooks/b_nothing/resend` })).json.error).toBe(
      'not_found',
    );
    expect((await call(server, { method: 'POST', path: `${API}/webhooks/%zz/resend` })).json.error).toBe('bad_request');
    expect((await call(server, { path: `${API}/webhooks?x=1` })).json.error).toBe('bad_request');
    expect((await call(server, { path: `${API}/webhooks/test`, body: '[1]' })).json.error).toBe('bad_request');
    const big = await call(server, { path: `${API}/webhooks/test`, body: Buffer.alloc(2 * 1_048_576 + 1, 0x20) });
    expect([big.status, big.json.error]).toEqual([413, 'too_large']);

    for (const [method, path] of [
      ['POST', `${API}/webhooks/test`],
      ['GET', `${API}/webhooks`],
      ['POST', `${API}/webhooks/b_nothing/resend`],
    ] as const) {
      expect((await call(as(noHook), { method, path })).json.error, path).toBe('no_webhook');
    }
  });

  it('disconnect, tokens/revoke and emit with an Idempotency-Key: 200, 400, 409 and 413 answers', async () => {
    const disconnected = await postJson(server, `${API}/users/alice/disconnect`, {});
    expect(disconnected.json).toEqual({ ok: true });
    expect((await call(server, { method: 'POST', path: `${API}/users/%24x/disconnect` })).json.error).toBe(
      'bad_request',
    );
    expect((await postJson(server, `${API}/tokens/revoke`, { user: 'alice', before: Date.now() })).json).toEqual({
      ok: true,
    });
    expect((await postJson(server, `${API}/tokens/revoke`, { before: Date.now() - 60_000 })).json).toEqual({
      ok: true,
    });
    expect((await postJson(server, `${API}/tokens/revoke`, { before: 'now' })).json.error).toBe('bad_request');
    const big = await call(server, { path: `${API}/tokens/revoke`, body: Buffer.alloc(2 * 1_048_576 + 1, 0x20) });
    expect([big.status, big.json.error]).toEqual([413, 'too_large']);

    const key: [string, string][] = [['Idempotency-Key', 'openapi-1']];
    const event = JSON.stringify({ rooms: ['lobby'], event: 'once', history: { lobby: [5, 1] } });
    const first = await call(server, { path: `${API}/emit`, body: event, headers: key });
    expect((await call(server, { path: `${API}/emit`, body: event, headers: key })).json).toEqual(first.json);
    const other = await call(server, {
      path: `${API}/emit`,
      body: JSON.stringify({ users: ['a'], event: 'x' }),
      headers: key,
    });
    expect([other.status, other.json.error]).toEqual([409, 'idempotency_conflict']);
    const batch = JSON.stringify({ events: [{ users: ['a'], event: 'x' }] });
    expect((await call(server, { path: `${API}/emit/batch`, body: batch, headers: key })).json.error).toBe(
      'idempotency_conflict',
    );
    const badKey: [string, string][] = [['Idempotency-Key', 'x'.repeat(201)]];
    expect((await call(server, { path: `${API}/emit`, body: event, headers: badKey })).json.error).toBe('bad_request');
  });

  it('403 not_included for each feature of the plan', async () => {
    const bareServer = as(bare);
    const cases: [string, string, unknown][] = [
      ['POST', `${API}/emit`, { rooms: ['a'], event: 'e', history: { a: [1, 1] } }],
      ['POST', `${API}/emit/batch`, { events: [{ rooms: ['a'], event: 'e', history: { a: [1, 1] } }] }],
      ['POST', `${API}/users/alice/ask`, { event: 'q' }],
      ['GET', `${API}/online?ids=alice`, undefined],
      ['POST', `${API}/webhooks/test`, undefined],
      ['GET', `${API}/webhooks`, undefined],
      ['POST', `${API}/webhooks/b_x/resend`, undefined],
    ];
    for (const [method, path, body] of cases) {
      const answer = await call(bareServer, {
        method,
        path,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect([answer.status, answer.json.error], path).toEqual([403, 'not_included']);
    }
    // Without history the plan allows emit.
    expect((await postJson(bareServer, `${API}/emit`, { rooms: ['a'], event: 'e', history: {} })).status).toBe(200);
  });

  it('401 for each signature problem, on every signed operation', async () => {
    const signed = operations().filter((o) => o.op.security === undefined);
    const problems: [Partial<RawRequest>, string][] = [
      [{ unsigned: true }, 'missing_signature'],
      [{ timestamp: '1700000000' }, 'stale_signature'],
      [{ site: 'no-such-app' }, 'unknown_site'],
      [{ secret: 'not-the-secret' }, 'bad_signature'],
    ];
    for (const { method, template } of signed) {
      for (const [change, code] of problems) {
        const answer = await call(server, { method, path: sample(template), ...change });
        expect([answer.status, answer.json.error], `${method} ${template}`).toEqual([401, code]);
      }
    }
  });

  it('405 with Allow for a method a path does not take, and 404 for an unknown path', async () => {
    const cases: [string, string, string][] = [
      ['GET', `${API}/emit`, 'POST'],
      ['PUT', `${API}/emit/batch`, 'POST'],
      ['GET', `${API}/users/alice/ask`, 'POST'],
      ['POST', `${API}/online`, 'GET'],
      ['GET', `${API}/webhooks/test`, 'POST'],
      ['POST', `${API}/webhooks`, 'GET'],
      ['DELETE', `${API}/webhooks/b_x/resend`, 'POST'],
      ['POST', HEALTH_PATH, 'GET, HEAD'],
      ['PUT', READY_PATH, 'GET, HEAD'],
      ['POST', METRICS_PATH, 'GET, HEAD'],
    ];
    for (const [method, path, allow] of cases) {
      const answer = await call(server, { method, path, unsigned: true });
      expect([answer.status, answer.json.error, answer.headers.allow], `${method} ${path}`).toEqual([
        405,
        'bad_method',
        allow,
      ]);
    }
    // Not an operation: checked against the shared error schema, as the document's description says.
    for (const path of [`${API}/nope`, `${API}/emit/`, '/']) {
      const answer = await send(server, { path, unsigned: true });
      expect([answer.status, answer.json.error], path).toEqual([404, 'not_found']);
      expectValid(obj(components.schemas, 'schemas').Error, answer.json, `GET ${path}`);
    }
  });

  it('429 rate_limited with Retry-After once the app is over its rate', async () => {
    const limited = as(tiny);
    expect((await postJson(limited, `${API}/emit`, { rooms: ['a'], event: 'e' })).status).toBe(200);
    for (const [method, path, body] of [
      ['POST', `${API}/emit`, { rooms: ['a'], event: 'e' }],
      ['POST', `${API}/emit/batch`, { events: [{ rooms: ['a'], event: 'e' }] }],
      ['POST', `${API}/users/alice/ask`, { event: 'q' }],
      ['GET', `${API}/online?ids=a`, undefined],
      ['POST', `${API}/webhooks/test`, undefined],
      ['GET', `${API}/webhooks`, undefined],
      ['POST', `${API}/webhooks/b_x/resend`, undefined],
    ] as const) {
      const answer = await call(limited, {
        method,
        path,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect([answer.status, answer.json.error], path).toEqual([429, 'rate_limited']);
      expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
  });

  it('health, ready and metrics: 200 for GET and HEAD, 401 without the metrics token', async () => {
    const unsigned = (method: string, path: string, headers: [string, string][] = []) =>
      call(server, { method, path, unsigned: true, headers });
    const bearer: [string, string][] = [['Authorization', `Bearer ${METRICS_TOKEN}`]];
    expect((await unsigned('GET', HEALTH_PATH)).json).toEqual({ ok: true });
    expect((await unsigned('HEAD', HEALTH_PATH)).status).toBe(200);
    expect((await unsigned('GET', `${READY_PATH}?probe=1`)).json).toEqual({ ok: true });
    expect((await unsigned('HEAD', READY_PATH)).status).toBe(200);
    const metrics = await unsigned('GET', METRICS_PATH, bearer);
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('realtime_api_requests_total');
    expect((await unsigned('HEAD', METRICS_PATH, bearer)).status).toBe(200);
    const refused = await unsigned('GET', METRICS_PATH);
    expect([refused.status, refused.json.error]).toEqual([401, 'unauthorized']);
    expect((await unsigned('GET', METRICS_PATH, [['Authorization', 'Bearer wrong']])).status).toBe(401);
    expect((await unsigned('HEAD', METRICS_PATH)).status).toBe(401);
  });

  it('ready: 503 unavailable once a stop began', async () => {
    const stopping = await startTestServer({ shutdownDelayMs: 1500 });
    const closed = stopping.close();
    try {
      const during = await call(stopping, { path: READY_PATH, unsigned: true });
      expect([during.status, during.json.error]).toEqual([503, 'unavailable']);
      expect((await call(stopping, { method: 'HEAD', path: READY_PATH, unsigned: true })).status).toBe(503);
      expect((await call(stopping, { path: HEALTH_PATH, unsigned: true })).status).toBe(200);
    } finally {
      await closed;
    }
  });

  it('webhook batches the receiver got validate against the documented webhook body', async () => {
    // The page of the ask test went online; closing it brings user.offline 200 ms later.
    await Promise.all(pages.splice(0).map((p) => p.close()));
    receiver.mode = 'ok';
    await receiver.waitFor(() => receiver.events('user.offline').length > 0, 'user.offline');
    const webhook = obj(obj(obj(doc.webhooks, 'webhooks').events, 'events').post, 'post');
    const schema = obj(obj(deref(webhook.requestBody, 'body').content, 'content')['application/json'], 'json').schema;
    expect(receiver.batches.length).toBeGreaterThan(0);
    for (const batch of receiver.batches) {
      expectValid(schema, { events: batch.events }, `webhook batch ${batch.id}`);
      expect(batch.id).toMatch(/^b_[0-9a-z]+$/);
    }
    const types = new Set(receiver.batches.flatMap((b) => b.events.map((e) => e.type)));
    expect(types).toContain('webhook.test');
    expect(types).toContain('user.offline');
  });

  it('room reads: 200 with pages in the rooms, and their 400, 403, 405 and 429 answers', async () => {
    const page = await helloPage(server.url, server.app.key, await sdk.identityToken('rhea', { info: { n: 1 } }));
    pages.push(page);
    page.send({ t: 'join', ref: 1, room: 'reads', token: await sdk.roomToken('reads', { presence: true }) });
    await page.next((f) => f.t === 'joined', 'joined reads');
    for (let i = 0; i < 3; i++) {
      await postJson(server, `${API}/emit`, { rooms: ['reads'], event: 'e', data: { i }, history: { reads: [10, 1] } });
    }
    const listed = await call(server, { path: `${API}/rooms?prefix=rea&limit=1` });
    expect(listed.json.rooms).toEqual([{ room: 'reads', pages: 1, users: 1 }]);
    await call(server, { path: `${API}/rooms?cursor=${listed.json.cursor ?? ''}` });
    const room = await call(server, { path: `${API}/rooms/reads` });
    expect(room.json).toMatchObject({ pages: 1, users: 1, kept: 3 });
    const members = await call(server, { path: `${API}/rooms/reads/members?limit=1` });
    expect(members.json.members).toEqual([{ user: 'rhea', info: { n: 1 } }]);
    const history = await call(server, { path: `${API}/rooms/reads/history?last=3&limit=2` });
    expect(history.json.cursor).toEqual(expect.any(String));
    await call(server, { path: `${API}/rooms/reads/history?cursor=${history.json.cursor}` });
    await call(server, { path: `${API}/rooms/reads/history?since=0-0&epoch=${room.json.epoch}` });

    for (const [target, code] of [
      [`${API}/rooms?limit=0`, 'bad_request'],
      [`${API}/rooms?cursor=%2A`, 'bad_request'],
      [`${API}/rooms/%24x`, 'bad_room'],
      [`${API}/rooms/a/members?cursor=x`, 'bad_request'],
      [`${API}/rooms/a/history?since=1-0&last=1`, 'bad_request'],
    ] as const) {
      expect((await call(server, { path: target })).json.error, target).toBe(code);
    }
    const withBody = await call(server, { method: 'GET', path: `${API}/rooms/a`, body: '{}' });
    expect(withBody.json.error).toBe('bad_request');
    for (const path of [`${API}/rooms/a/members`, `${API}/rooms/a/history`]) {
      expect((await call(as(bare), { path })).status, path).toBe(403);
    }
    for (const path of [`${API}/rooms`, `${API}/rooms/a`, `${API}/rooms/a/members`, `${API}/rooms/a/history`]) {
      const refused = await call(server, { method: 'POST', path, unsigned: true });
      expect([refused.status, refused.headers.allow], path).toEqual([405, 'GET']);
      expect((await call(as(tiny), { path })).status, path).toBe(429);
    }
  });

  it('saw a success answer of every operation and each error status the document lists', () => {
    for (const { method, template } of operations()) {
      expect(checked.has(`${method} ${template} 200`), `${method} ${template} 200`).toBe(true);
    }
    const statuses = new Set([...checked].map((k) => Number(k.split(' ')[2])));
    for (const status of [400, 401, 403, 404, 405, 409, 413, 429, 503]) {
      expect(statuses.has(status), String(status)).toBe(true);
    }
  });
});
