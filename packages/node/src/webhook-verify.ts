import {
  checkWebhookSignature,
  deriveKey,
  fromUtf8,
  HEADERS,
  isRecord,
  type SignatureProblem,
  type WebhookEvent,
} from '@realtime/protocol';

// The event types are the protocol package's (one definition for the service and this SDK).
export {
  type CallEndedWebhookEvent,
  type CallEndReason,
  type EmitWebhookEvent,
  type GroupJoinedWebhookEvent,
  type GroupLeftWebhookEvent,
  type MemberWebhookEvent,
  type RoomWebhookEvent,
  type StreamEndedWebhookEvent,
  type StreamJoinedWebhookEvent,
  type StreamLeftWebhookEvent,
  type StreamLiveWebhookEvent,
  type StreamRole,
  type TestWebhookEvent,
  type UserWebhookEvent,
  WEBHOOK_EVENT_TYPES,
  type WebhookEvent,
  type WebhookEventBase,
  type WebhookEventOf,
  type WebhookEventType,
  type WebhookMedia,
} from '@realtime/protocol';

// ---------------------------------------------------------------------------------------------
// Verifying
// ---------------------------------------------------------------------------------------------

/**
 * Headers with a `get` method, such as the Fetch API's `Headers` (case-insensitive). A case-sensitive
 * `get` (a `Map`) is asked for the name as written and in lowercase.
 */
export interface HeadersLike {
  get(name: string): unknown;
}

/**
 * Request headers: Node's `req.headers`, any plain object (names in any case), or a `Headers`-like
 * object. A header given as an array (sent more than once) counts as missing.
 */
export type WebhookHeaders = HeadersLike | { readonly [name: string]: unknown };

/**
 * Why a webhook was refused:
 * - `missing_signature`, `stale_signature`, `bad_signature`: the checks of section 5.5, in that order
 *   (answer 401);
 * - `bad_body`: the signature is genuine but the body is not a JSON object whose `events` is an array of
 *   objects with a string `id`, a number `at` and a string `type` (answer 400; the service does not send
 *   such bodies, so this points at a proxy or a parser that changed the body).
 */
export type WebhookVerifyError = SignatureProblem | 'bad_body';

/** Outcome of {@link verifyWebhook}: never thrown, always returned. */
export type WebhookVerifyResult =
  | {
      ok: true;
      /** `X-Service-Batch`: the id of the batch (for `realtime.webhooks.resend`). Not covered by the signature. */
      batch: string | undefined;
      /** The events of the batch, in the order the service gave them. */
      events: WebhookEvent[];
    }
  | { ok: false; error: WebhookVerifyError };

/** What one webhook request brought. */
export interface WebhookRequestInput {
  /**
   * The body exactly as received, before any parsing. Prefer the bytes (`Buffer`/`Uint8Array`): a
   * string is hashed as its UTF-8 encoding, which matches only if it was decoded from valid UTF-8.
   */
  rawBody: string | Uint8Array;
  /** The request headers. */
  headers: WebhookHeaders;
  /**
   * The path of the webhook address with its query, exactly as in the request line (`req.url` in
   * node:http, `req.originalUrl` in Express), e.g. `/hooks/realtime?x=1`.
   */
  path: string;
}

/** Input of {@link verifyWebhook}. */
export interface VerifyWebhookOptions extends WebhookRequestInput {
  /** The app key, expected in `X-Service-Site`. */
  key: string;
  /**
   * The app secret; only the webhook key derived from it is used. During a rotation either secret
   * works: the request is taken when `X-Service-Signature` or `X-Service-Signature-Other` matches.
   */
  secret: string;
  /** The local clock in milliseconds since the epoch; default `Date.now()`. */
  now?: number | undefined;
}

/**
 * Checks one webhook request (section 5.5) and reads its batch. Never throws on bad input: every
 * problem of the request is returned as `{ ok: false, error }`. Throws a TypeError only when `key` or
 * `secret` is not a non-empty string (a setup mistake, not a request problem).
 *
 * @example
 * const result = verifyWebhook({ rawBody, headers: req.headers, path: req.url ?? '/', key: 'app1', secret });
 * if (!result.ok) return answer(401, { ok: false, error: result.error });
 * for (const event of result.events) console.log(event.type, event.id);
 */
export function verifyWebhook(options: VerifyWebhookOptions): WebhookVerifyResult {
  checkCredentials(options?.key, options?.secret, 'verifyWebhook');
  const nowMs = options.now ?? Date.now();
  return verifyWithKey(options.key, cachedWebhookKey(options.secret), options, nowMs);
}

/** Options of {@link createWebhookVerifier}. */
export interface WebhookVerifierOptions {
  /** The app key, expected in `X-Service-Site`. */
  key: string;
  /** The app secret; the webhook key is derived from it once, here. */
  secret: string;
  /** Clock in milliseconds since the epoch, for tests; default `Date.now`. */
  now?: (() => number) | undefined;
}

/** A verifier bound to one app: see {@link createWebhookVerifier}. */
export interface WebhookVerifier {
  /** Checks one request like {@link verifyWebhook}; never throws. */
  verify(input: WebhookRequestInput): WebhookVerifyResult;
}

/**
 * A verifier for one app, deriving its webhook key once. Throws a TypeError when `key` or `secret` is
 * not a non-empty string.
 *
 * @example
 * const verifier = createWebhookVerifier({ key: 'app1', secret: process.env.RT_SECRET ?? '' });
 * const result = verifier.verify({ rawBody, headers: req.headers, path: req.url ?? '/' });
 */
export function createWebhookVerifier(options: WebhookVerifierOptions): WebhookVerifier {
  checkCredentials(options?.key, options?.secret, 'createWebhookVerifier');
  const { key } = options;
  const webhookKey = deriveKey(options.secret, 'webhook');
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') throw new TypeError('`now` must be a function returning milliseconds');
  return {
    verify: (input) => verifyWithKey(key, webhookKey, input ?? {}, now()),
  };
}

/**
 * The checks with an already derived webhook key. Not exported from the package: it accepts any
 * secret's key, including the empty secret of the protocol vectors, which the public entry points refuse.
 */
export function verifyWithKey(
  key: string,
  webhookKey: Uint8Array,
  input: Partial<WebhookRequestInput>,
  nowMs: number,
): WebhookVerifyResult {
  const { rawBody, headers, path } = input;
  const body = typeof rawBody === 'string' || rawBody instanceof Uint8Array ? rawBody : undefined;
  const check = (signature: string | undefined) =>
    checkWebhookSignature({
      site: key,
      webhookKey,
      headers: { site: header(headers, HEADERS.site), timestamp: header(headers, HEADERS.timestamp), signature },
      path: typeof path === 'string' ? path : '',
      body: body ?? '',
      nowMs,
    });
  let problem = check(header(headers, HEADERS.signature));
  // While the app holds two secrets the service signs under both (docs/webhooks.md, "Secret
  // rotation"): a receiver with either one, before or after its deploy, takes the batch.
  const other = header(headers, HEADERS.otherSignature);
  if (problem === 'bad_signature' && other !== undefined) problem = check(other);
  if (problem !== null) return { ok: false, error: problem };
  // A body or path of the wrong type cannot be the one that was signed.
  if (body === undefined || typeof path !== 'string') return { ok: false, error: 'bad_signature' };
  const events = parseBatch(body);
  if (events === null) return { ok: false, error: 'bad_body' };
  return { ok: true, batch: header(headers, HEADERS.batch), events };
}

/** The events of a batch body, or null when it is not `{ "events": [ { id, at, type, ... }, ... ] }`. */
function parseBatch(body: string | Uint8Array): WebhookEvent[] | null {
  const text = typeof body === 'string' ? body : fromUtf8(body);
  if (text === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isRecord(parsed)) return null;
  const events = parsed.events;
  if (!Array.isArray(events) || !events.every(isEventShape)) return null;
  return events as WebhookEvent[];
}

function isEventShape(value: unknown): boolean {
  return (
    isRecord(value) &&
    typeof value.id === 'string' &&
    typeof value.at === 'number' &&
    Number.isFinite(value.at) &&
    typeof value.type === 'string'
  );
}

/**
 * One header, case-insensitively; undefined when missing, not a string (an array: sent more than
 * once), or given under two spellings of its name in a plain object.
 */
function header(headers: unknown, name: string): string | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined;
  const getter = (headers as { get?: unknown }).get;
  if (typeof getter === 'function') {
    try {
      let value: unknown = getter.call(headers, name);
      // A Map-like `get` is case-sensitive: try the lowercase name Node uses too.
      if (value === null || value === undefined) value = getter.call(headers, name.toLowerCase());
      return typeof value === 'string' ? value : undefined;
    } catch {
      return undefined;
    }
  }
  const lower = name.toLowerCase();
  let found: unknown;
  let matches = 0;
  for (const candidate of Object.keys(headers)) {
    if (candidate.toLowerCase() !== lower) continue;
    matches++;
    found = (headers as Record<string, unknown>)[candidate];
  }
  return matches === 1 && typeof found === 'string' ? found : undefined;
}

function checkCredentials(key: unknown, secret: unknown, where: string): void {
  if (typeof key !== 'string' || key.length === 0) {
    throw new TypeError(`${where}: \`key\` (the app key) must be a non-empty string`);
  }
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new TypeError(`${where}: \`secret\` (the app secret) must be a non-empty string`);
  }
}

// verifyWebhook is a plain function, so it keeps the keys of the last few secrets it saw rather than
// deriving one per request.
const KEY_CACHE_SIZE = 8;
const keyCache = new Map<string, Uint8Array>();

function cachedWebhookKey(secret: string): Uint8Array {
  let webhookKey = keyCache.get(secret);
  if (webhookKey === undefined) {
    webhookKey = deriveKey(secret, 'webhook');
    if (keyCache.size >= KEY_CACHE_SIZE) {
      const oldest = keyCache.keys().next();
      if (!oldest.done) keyCache.delete(oldest.value);
    }
    keyCache.set(secret, webhookKey);
  }
  return webhookKey;
}
