import type { IncomingMessage, ServerResponse } from 'node:http';
import { quote } from '../core/quote.js';
import { StoreError } from '../engines/store-error.js';
import { sendError, sendJson } from './answer.js';
import { ApiError } from './api-error.js';
import { readBody } from './body.js';
import type { ApiDeps } from './context.js';
import { decodeComponent } from './query.js';
import { matchRoute } from './routes.js';
import { verifyRequest } from './verify.js';

/** Headers a client may send once only: a repeated one is ambiguous, so it is refused. */
const SINGLE_HEADERS = new Set([
  'x-service-site',
  'x-service-timestamp',
  'x-service-signature',
  'content-type',
  'idempotency-key',
]);

function repeatedHeader(req: IncomingMessage): string | undefined {
  const seen = new Set<string>();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (!SINGLE_HEADERS.has(name)) continue;
    if (seen.has(name)) return raw[i];
    seen.add(name);
  }
  return undefined;
}

function checkContentType(req: IncomingMessage, body: Buffer): void {
  if (body.length === 0) return;
  const type = req.headers['content-type'];
  if (type === undefined || !/^application\/json\s*(;|$)/i.test(type)) {
    throw new ApiError('bad_request', 'a body must be sent with Content-Type: application/json');
  }
}

/**
 * One API request, top to bottom: route -> headers -> body (size) -> signature -> rate limit ->
 * parameters -> handler. Each stage refuses with its own code; nothing a client sends answers 500.
 * The rate limit is counted over every node (the engine's limit store).
 */
export async function handleApiRequest(req: IncomingMessage, res: ServerResponse, deps: ApiDeps): Promise<void> {
  const started = performance.now();
  let route = 'none';
  let overAppRate = false;
  try {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? '' : url.slice(q + 1);

    const match = matchRoute(req.method ?? '', path);
    if (!match) throw new ApiError('not_found', `no endpoint at ${quote(path)}`);
    if ('allowed' in match) {
      throw new ApiError('bad_method', `${quote(path)} takes ${match.allowed.join(', ')}, not ${req.method}`, {
        Allow: match.allowed.join(', '),
      });
    }
    route = match.route.name;

    const repeated = repeatedHeader(req);
    if (repeated) throw new ApiError('bad_request', `the ${repeated} header is sent more than once`);

    const body = await readBody(req);
    const verified = verifyRequest(req, url, body, deps.apps, deps.now());

    const app = verified instanceof Promise ? await verified : verified;
    const taken = deps.limiter.take(app.key, app.rateLimit, deps.now());
    // A limit store that fails (Redis) throws a StoreError: 503 below, never a request let through.
    const wait = typeof taken === 'number' ? taken : await taken;
    if (wait > 0) {
      overAppRate = true;
      throw new ApiError('rate_limited', `the app is over ${app.rateLimit.perSecond} requests per second`, {
        'Retry-After': String(wait),
      });
    }

    checkContentType(req, body);
    const params = match.params.map((raw) => decodeComponent(raw, 'the path'));
    const handled = match.route.handler({ app, params, query, body, headers: req.headers }, deps);
    const answer = handled instanceof Promise ? await handled : handled;
    sendJson(res, 200, JSON.stringify({ ok: true, ...answer }));
  } catch (error) {
    if (error instanceof ApiError) {
      sendError(res, error);
      if (error.headers?.Connection === 'close') req.resume();
      return;
    }
    if (error instanceof StoreError) {
      // Nothing of the request was delivered: 503, so the client may retry (a full disk is no 500).
      deps.log.error({ err: error.cause ?? error, method: req.method, url: req.url }, 'storing failed');
      sendError(res, new ApiError(error.code, error.message));
      return;
    }
    deps.log.error({ err: error, method: req.method, url: req.url }, 'request failed');
    sendError(res, new ApiError('internal'));
  } finally {
    deps.answered(route, res.statusCode, started, overAppRate);
  }
}
