import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { MemoryDeduplicator, type WebhookDeduplicator } from './webhook-dedupe.js';
import {
  createWebhookVerifier,
  type WebhookEvent,
  type WebhookRequestInput,
  type WebhookVerifyError,
} from './webhook-verify.js';

/** Default largest webhook body read: 4 MiB. */
export const DEFAULT_WEBHOOK_BODY_LIMIT = 4 * 1024 * 1024;

/** What the handlers tell `onEvents` and `onError` about the request. */
export interface WebhookContext {
  /** `X-Service-Batch`: the batch id, as `realtime.webhooks.resend()` takes it. Not covered by the signature. */
  batch: string | undefined;
}

/**
 * Codes of the JSON error answers of the handlers:
 * - `missing_signature`, `stale_signature`, `bad_signature` (401): the checks of section 5.5;
 * - `bad_body` (400): genuine signature, but not a batch;
 * - `too_large` (413): body over `maxBodyBytes`;
 * - `bad_method` (405): not a POST (node:http and Express handlers);
 * - `no_raw_body` (500): the body was parsed by someone else before the handler could read its bytes;
 * - `handler_failed` (500): `onEvents`, or the de-duplicator, failed; the service will try again.
 */
export type WebhookAnswerError = WebhookVerifyError | 'too_large' | 'bad_method' | 'no_raw_body' | 'handler_failed';

/** An answer to give the service: 204 without a body, or an error status with `{ ok: false, error }`. */
export interface WebhookAnswer {
  status: 204 | 400 | 401 | 405 | 413 | 500;
  body?: { ok: false; error: WebhookAnswerError };
}

/** Options of {@link createWebhookReceiver}. */
export interface WebhookReceiverOptions {
  /** The app key, expected in `X-Service-Site`. */
  key: string;
  /** The app secret; the webhook key is derived from it once. */
  secret: string;
  /**
   * Takes the new events of a genuine batch, in the batch's order, with repeats already dropped. The
   * batch is answered 204 when it resolves and 500 when it throws or rejects: the service then sends
   * the batch again later and the events are delivered again. Answer within 10 seconds: queue slow
   * work rather than doing it here. Not called when every event of the batch was a repeat.
   */
  onEvents: (events: WebhookEvent[], context: WebhookContext) => unknown;
  /** Where event ids are remembered; default a new {@link MemoryDeduplicator} (4 days, this process only). */
  dedupe?: WebhookDeduplicator | undefined;
  /** Told of every failure answered 500; default `console.error`. */
  onError?: ((error: unknown, context: WebhookContext) => void) | undefined;
  /** Clock in milliseconds since the epoch, for tests; default `Date.now`. */
  now?: (() => number) | undefined;
}

/** Handles a request whose body was already read: see {@link createWebhookReceiver}. */
export interface WebhookReceiver {
  receive(input: WebhookRequestInput): Promise<WebhookAnswer>;
}

/**
 * The core of the handlers, for any framework: checks the request, drops repeated events, calls
 * `onEvents` and tells what to answer. Never rejects.
 *
 * @example
 * // A Fetch API route (Hono, Next.js, Bun, Deno...):
 * const receiver = createWebhookReceiver({ key, secret, onEvents: async (events) => { await queue.add(events); } });
 * export async function POST(request: Request) {
 *   const url = new URL(request.url);
 *   const answer = await receiver.receive({
 *     rawBody: new Uint8Array(await request.arrayBuffer()),
 *     headers: request.headers,
 *     path: url.pathname + url.search,
 *   });
 *   return answer.body ? Response.json(answer.body, { status: answer.status }) : new Response(null, { status: answer.status });
 * }
 */
export function createWebhookReceiver(options: WebhookReceiverOptions): WebhookReceiver {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('the webhook handler needs an options object');
  }
  const verifier = createWebhookVerifier({ key: options.key, secret: options.secret, now: options.now });
  const { onEvents } = options;
  if (typeof onEvents !== 'function') throw new TypeError('`onEvents` must be a function');
  const dedupe = options.dedupe ?? new MemoryDeduplicator();
  if (typeof dedupe.seen !== 'function' || typeof dedupe.forget !== 'function') {
    throw new TypeError('`dedupe` must have `seen(id)` and `forget(id)` methods');
  }
  const onError = options.onError ?? defaultOnError;
  const report = (error: unknown, context: WebhookContext): void => {
    try {
      onError(error, context);
    } catch {
      // A failing logger must not change the answer.
    }
  };

  /**
   * Events this receiver is handing to `onEvents` now, by id, with a promise of the outcome. A copy of
   * the same batch that arrives meanwhile (a resend, or a retry after a slow answer) finds its events
   * recorded as seen; it waits for the outcome here and answers like the first copy, so that a
   * failure is not hidden by a 204 to the copy.
   */
  const inFlight = new Map<string, Promise<boolean>>();

  async function receive(input: WebhookRequestInput): Promise<WebhookAnswer> {
    const result = verifier.verify(input);
    if (!result.ok) return errorAnswer(result.error === 'bad_body' ? 400 : 401, result.error);
    const context: WebhookContext = { batch: result.batch };

    let settle: (delivered: boolean) => void = () => {};
    const outcome = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    const fresh: WebhookEvent[] = [];
    const waits: Promise<boolean>[] = [];
    let dedupeError: { error: unknown } | undefined;
    await Promise.all(
      result.events.map(async (event) => {
        let repeat: boolean;
        try {
          // Only `true` drops an event: an unclear answer delivers it (a repeat is better than a loss).
          repeat = (await dedupe.seen(event.id)) === true;
        } catch (error) {
          dedupeError ??= { error };
          return;
        }
        if (!repeat) {
          inFlight.set(event.id, outcome);
          fresh.push(event);
          return;
        }
        const pending = inFlight.get(event.id);
        if (pending !== undefined && pending !== outcome) waits.push(pending);
      }),
    );
    // Claims may settle in any order: hand the events on in the order of the batch.
    fresh.sort((a, b) => result.events.indexOf(a) - result.events.indexOf(b));

    let failure: { error: unknown } | undefined = dedupeError;
    if (failure === undefined && fresh.length > 0) {
      try {
        await onEvents(fresh, context);
      } catch (error) {
        failure = { error };
      }
    }
    if (failure !== undefined) {
      report(failure.error, context);
      // Forgotten, so that the service's next try delivers these events rather than dropping them.
      const forgets = await Promise.allSettled(fresh.map(async (event) => dedupe.forget(event.id)));
      for (const forget of forgets) if (forget.status === 'rejected') report(forget.reason, context);
    }
    for (const event of fresh) if (inFlight.get(event.id) === outcome) inFlight.delete(event.id);
    settle(failure === undefined);
    if (failure !== undefined) return errorAnswer(500, 'handler_failed');

    const others = await Promise.all(waits);
    return others.every(Boolean) ? { status: 204 } : errorAnswer(500, 'handler_failed');
  }

  return {
    receive: async (input) => {
      try {
        return await receive(input);
      } catch (error) {
        report(error, { batch: undefined });
        return errorAnswer(500, 'handler_failed');
      }
    },
  };
}

/** Options of the node:http, Express and Fastify handlers. */
export interface WebhookHandlerOptions extends WebhookReceiverOptions {
  /** Largest body read, in bytes; a larger one is answered 413. Default 4 MiB. */
  maxBodyBytes?: number | undefined;
  /**
   * The path and query that the service signs: those of the webhook address set on the app's page,
   * e.g. `/hooks/realtime?x=1`. Default: taken from the request (`req.url`, Express `req.originalUrl`).
   * Set it when a proxy in front of your server changes the path.
   */
  signedPath?: string | undefined;
}

/**
 * A node:http request listener that receives webhooks: reads the body (at most `maxBodyBytes`),
 * checks it, drops repeated events, calls `onEvents` and answers 204, or 401 `{ ok: false, error }`
 * on a failed check, or 500 when `onEvents` throws (the service tries again). Answers 405 to anything
 * but POST. It does not look at the path: route to it yourself, or give it a server of its own.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { webhookHandler } from '@realtime/node';
 *
 * const onWebhook = webhookHandler({
 *   key: 'app1',
 *   secret: process.env.RT_SECRET ?? '',
 *   onEvents: async (events) => { for (const event of events) console.log(event.type, event.id); },
 * });
 * createServer((req, res) => {
 *   if (req.url?.startsWith('/hooks/realtime')) return onWebhook(req, res);
 *   res.writeHead(404).end();
 * }).listen(3000);
 */
export function webhookHandler(options: WebhookHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const receiver = createWebhookReceiver(options);
  const settings = handlerSettings(options);
  return (req, res) => {
    void serveNode(receiver, settings, req, res, undefined);
  };
}

/** The parts of an Express request the middleware reads (an Express `Request` is one). */
export interface ExpressLikeRequest extends IncomingMessage {
  /** Set by a body parser: a Buffer from `express.raw()`, a string from `express.text()`. */
  body?: unknown;
  /** The path and query as in the request line, kept by Express when routers strip their mount path. */
  originalUrl?: string;
}

/** An Express middleware, typed without depending on Express. */
export type ExpressLikeMiddleware = (
  req: ExpressLikeRequest,
  res: ServerResponse,
  next: (error?: unknown) => void,
) => void;

/**
 * Express middleware that receives webhooks, answering like {@link webhookHandler}.
 *
 * It needs the body's bytes: mount it with `express.raw({ type: 'application/json', limit: '4mb' })`
 * before it, or with no body parser at all on its route (it then reads the request itself). A body
 * parser that already turned the body into an object (`express.json()` mounted for the whole app)
 * leaves nothing to check: every webhook is then answered 500 `no_raw_body` and `onError` is told why.
 * The middleware always answers; it never calls `next`.
 *
 * @example
 * app.post('/hooks/realtime', express.raw({ type: 'application/json', limit: '4mb' }), expressWebhook({ key, secret, onEvents }));
 */
export function expressWebhook(options: WebhookHandlerOptions): ExpressLikeMiddleware {
  const receiver = createWebhookReceiver(options);
  const settings = handlerSettings(options);
  return (req, res, _next) => {
    const { body } = req;
    const given = typeof body === 'string' || body instanceof Uint8Array ? body : undefined;
    void serveNode(receiver, settings, req, res, given);
  };
}

/** The parts of a Fastify request the handler reads (a `FastifyRequest` is one). */
export interface FastifyLikeRequest {
  /** A Buffer when the plugin's content type parser ran; a parsed object when Fastify's JSON parser did. */
  body?: unknown;
  /** Set by plugins such as `fastify-raw-body`; used first when it is a string or a Buffer. */
  rawBody?: unknown;
  headers: IncomingHttpHeaders;
  url: string;
  originalUrl?: string;
  raw: { url?: string | undefined };
}

/** The parts of a Fastify reply the handler uses (a `FastifyReply` is one). */
export interface FastifyLikeReply {
  code(statusCode: number): FastifyLikeReply;
  header(name: string, value: string): FastifyLikeReply;
  send(payload?: string): unknown;
}

/** The parts of a Fastify instance the plugin uses (a `FastifyInstance` is one). */
export interface FastifyLikeInstance {
  addContentTypeParser(
    contentType: string,
    options: { parseAs: 'buffer'; bodyLimit: number },
    parser: (request: unknown, body: Buffer, done: (error: Error | null, body?: unknown) => void) => void,
  ): unknown;
  removeContentTypeParser?(contentType: string): unknown;
  post(path: string, handler: (request: FastifyLikeRequest, reply: FastifyLikeReply) => Promise<unknown>): unknown;
}

/** Options of {@link fastifyWebhook}. */
export interface FastifyWebhookOptions extends WebhookHandlerOptions {
  /** The route the plugin adds, under the prefix it is registered with; default `/`. */
  path?: string | undefined;
}

/** A Fastify route handler that receives webhooks. */
export type FastifyWebhookHandler = (request: FastifyLikeRequest, reply: FastifyLikeReply) => Promise<unknown>;

/** A Fastify plugin adding the webhook route, with its route handler as `.handler`. */
export type FastifyWebhookPlugin = ((instance: FastifyLikeInstance, options?: unknown) => Promise<void>) & {
  handler: FastifyWebhookHandler;
};

/**
 * Receives webhooks in Fastify, answering like {@link webhookHandler}. Register the plugin: it adds a
 * POST route at `path` and, inside its own encapsulated context only, a parser that keeps
 * `application/json` bodies as Buffers (the rest of your app keeps Fastify's JSON parser).
 *
 * Or use `.handler` on a route of your own; the route must then leave the raw body to the handler:
 * a Buffer or string in `request.body` (a content type parser with `parseAs: 'buffer'`) or in
 * `request.rawBody` (e.g. the `fastify-raw-body` plugin). A body Fastify already parsed into an object
 * is answered 500 `no_raw_body`.
 *
 * @example
 * await app.register(fastifyWebhook({ path: '/hooks/realtime', key, secret, onEvents }));
 */
export function fastifyWebhook(options: FastifyWebhookOptions): FastifyWebhookPlugin {
  const receiver = createWebhookReceiver(options);
  const settings = handlerSettings(options);
  const path = options.path ?? '/';
  if (typeof path !== 'string') throw new TypeError('`path` must be a string');

  const handler: FastifyWebhookHandler = async (request, reply) => {
    const { rawBody, body } = request;
    let bytes: string | Uint8Array | undefined;
    if (typeof rawBody === 'string' || rawBody instanceof Uint8Array) bytes = rawBody;
    else if (typeof body === 'string' || body instanceof Uint8Array) bytes = body;
    else if (body === undefined || body === null) bytes = ''; // Fastify parses no body when none was sent.
    let answer: WebhookAnswer;
    if (bytes === undefined) {
      reportSafely(settings.onError, new Error(NO_RAW_BODY_FASTIFY));
      answer = errorAnswer(500, 'no_raw_body');
    } else {
      const requestPath = settings.signedPath ?? request.originalUrl ?? request.raw.url ?? request.url;
      answer = await receiver.receive({ rawBody: bytes, headers: request.headers, path: requestPath });
    }
    reply.code(answer.status);
    if (answer.body === undefined) return reply.send();
    return reply.header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(answer.body));
  };

  const plugin = async (instance: FastifyLikeInstance): Promise<void> => {
    // The plugin is encapsulated (no fastify-plugin wrapper), so this parser holds for its route only.
    instance.removeContentTypeParser?.('application/json');
    instance.addContentTypeParser(
      'application/json',
      { parseAs: 'buffer', bodyLimit: settings.maxBodyBytes },
      (_request, buffer, done) => done(null, buffer),
    );
    instance.post(path, handler);
  };
  return Object.assign(plugin, { handler });
}

// ---------------------------------------------------------------------------------------------
// node:http plumbing (used by the node:http and Express handlers)
// ---------------------------------------------------------------------------------------------

interface HandlerSettings {
  maxBodyBytes: number;
  signedPath: string | undefined;
  onError: (error: unknown, context: WebhookContext) => void;
}

function handlerSettings(options: WebhookHandlerOptions): HandlerSettings {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_WEBHOOK_BODY_LIMIT;
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1) {
    throw new TypeError('`maxBodyBytes` must be a whole number of bytes, at least 1');
  }
  if (
    options.signedPath !== undefined &&
    (typeof options.signedPath !== 'string' || !options.signedPath.startsWith('/'))
  ) {
    throw new TypeError('`signedPath` must be a path starting with `/`, with its query if the address has one');
  }
  return { maxBodyBytes, signedPath: options.signedPath, onError: options.onError ?? defaultOnError };
}

const NO_RAW_BODY_NODE =
  'realtime webhook: the request body was already read by something else (a body parser?), so its signature ' +
  "cannot be checked. In Express, mount express.raw({ type: 'application/json', limit: '4mb' }) on the webhook " +
  'route, before any express.json() of the app.';
const NO_RAW_BODY_FASTIFY =
  "realtime webhook: request.body is not the raw body. Register the plugin (it sets a 'buffer' parser for its " +
  'route), or give the route a parseAs: buffer content type parser, or set request.rawBody.';

async function serveNode(
  receiver: WebhookReceiver,
  settings: HandlerSettings,
  req: ExpressLikeRequest,
  res: ServerResponse,
  given: string | Uint8Array | undefined,
): Promise<void> {
  try {
    if (req.method !== 'POST') {
      send(res, errorAnswer(405, 'bad_method'), { allow: 'POST' });
      return;
    }
    let rawBody = given;
    if (rawBody === undefined) {
      if (req.readableEnded) {
        reportSafely(settings.onError, new Error(NO_RAW_BODY_NODE));
        send(res, errorAnswer(500, 'no_raw_body'));
        return;
      }
      const read = await readBody(req, settings.maxBodyBytes);
      if (read === 'aborted') return;
      if (read === 'too_large') {
        // The rest of the body is not read: the connection is closed after the answer.
        send(res, errorAnswer(413, 'too_large'), { connection: 'close' });
        return;
      }
      rawBody = read;
    }
    const path = settings.signedPath ?? req.originalUrl ?? req.url ?? '/';
    send(res, await receiver.receive({ rawBody, headers: req.headers, path }));
  } catch (error) {
    reportSafely(settings.onError, error);
    send(res, errorAnswer(500, 'handler_failed'));
  }
}

/** Reads the request body, stopping once it is over `limit` bytes. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large' | 'aborted'> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve('too_large');
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (outcome: Buffer | 'too_large' | 'aborted'): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAborted);
      req.off('close', onAborted);
      resolve(outcome);
    };
    const onData = (chunk: Buffer | string): void => {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += bytes.length;
      if (size > limit) {
        req.pause();
        finish('too_large');
        return;
      }
      chunks.push(bytes);
    };
    const onEnd = (): void => finish(Buffer.concat(chunks, size));
    const onAborted = (): void => finish('aborted');
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAborted);
    req.on('close', onAborted);
  });
}

function send(res: ServerResponse, answer: WebhookAnswer, extraHeaders: Record<string, string> = {}): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  if (answer.body === undefined) {
    res.writeHead(answer.status, extraHeaders);
    res.end();
    return;
  }
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    ...extraHeaders,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function errorAnswer(status: WebhookAnswer['status'], error: WebhookAnswerError): WebhookAnswer {
  return { status, body: { ok: false, error } };
}

function reportSafely(onError: HandlerSettings['onError'], error: unknown): void {
  try {
    onError(error, { batch: undefined });
  } catch {
    // A failing logger must not change the answer.
  }
}

function defaultOnError(error: unknown): void {
  console.error('@realtime/node webhook:', error);
}
