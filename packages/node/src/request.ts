import { deriveKey, ERRORS, HEADERS, isErrorCode, isRecord, sign } from '@realtime/protocol';
import { Pool } from 'undici';
import { RealtimeError } from './errors.js';

/** Methods the API uses. */
export type HttpMethod = 'GET' | 'POST';

/** A success answer of the API: a JSON object with `ok: true` and the fields of the endpoint. */
export type ApiAnswer = { ok: true } & Record<string, unknown>;

/** Default time for a whole request, from sending to the last byte of the answer. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** Options of {@link createTransport}. */
export interface TransportOptions {
  /** Base address of the service, e.g. `https://realtime.example.com`. A path prefix is kept and signed. */
  url: string;
  /** App key, sent as `X-Service-Site`. */
  key: string;
  /** App secret; only the publish key derived from it is kept. */
  secret: string;
  /** Time limit of one request in milliseconds; default 10,000. */
  timeoutMs?: number | undefined;
  /** Clock in milliseconds since the epoch (like `Date.now`); tests fix it to reproduce signatures. */
  now?: (() => number) | undefined;
}

/** Per-request options of {@link Transport.signedRequest}. */
export interface SignedRequestOptions {
  /** Time limit of this request in milliseconds, instead of the transport's. */
  timeoutMs?: number | undefined;
  /** Extra headers (an `Idempotency-Key`); they are sent, not signed. */
  headers?: Record<string, string> | undefined;
}

/** A signed HTTP connection to one service address; owns a keep-alive connection pool. */
export interface Transport {
  /**
   * Sends one signed request and returns the parsed success answer.
   * `path` is the API path with its query, already percent-encoded: it is sent and signed exactly as given.
   * `body` is the serialized JSON body, sent and hashed byte for byte; omit it (or pass `''`) for no body.
   * Throws {@link RealtimeError}: the answer's code on `ok: false`, `bad_answer` on an answer that is
   * not the API's JSON, `network` when nothing answered in time.
   *
   * @example
   * const answer = await transport.signedRequest('POST', '/service/realtime/emit', JSON.stringify(event));
   */
  signedRequest(method: HttpMethod, path: string, body?: string, options?: SignedRequestOptions): Promise<ApiAnswer>;
  /** Releases the connections; requests made afterwards fail with `network`. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Makes the low-level signed transport the {@link Realtime} client uses. The publish key is derived
 * here once, so the secret is not kept and no request pays for the derivation.
 *
 * @example
 * const transport = createTransport({ url: 'http://127.0.0.1:8080', key: 'app1', secret: 's3cret' });
 * const { online } = await transport.signedRequest('GET', '/service/realtime/online?ids=alice');
 * await transport.close();
 */
export function createTransport(options: TransportOptions): Transport {
  const base = parseBaseUrl(options.url);
  if (typeof options.key !== 'string' || options.key.length === 0) {
    throw new TypeError('`key` (the app key) must be a non-empty string');
  }
  if (typeof options.secret !== 'string') throw new TypeError('`secret` (the app secret) must be a string');
  const site = options.key;
  const publishKey = deriveKey(options.secret, 'publish');
  const defaultTimeoutMs = checkTimeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const now = options.now ?? Date.now;
  // One pool per client: connections are kept alive between calls, and close() frees them all.
  const pool = new Pool(base.origin);
  let closing: Promise<void> | undefined;

  async function signedRequest(
    method: HttpMethod,
    path: string,
    body = '',
    requestOptions: SignedRequestOptions = {},
  ): Promise<ApiAnswer> {
    if (!path.startsWith('/')) throw new TypeError(`a request path starts with '/', got ${JSON.stringify(path)}`);
    const sentPath = base.prefix + path;
    const nowMs = now();
    const timestamp = String(Math.floor(nowMs / 1000));
    const headers: Record<string, string> = {
      [HEADERS.site]: site,
      [HEADERS.timestamp]: timestamp,
      // The very string that is sent is the one hashed: serialize once, never re-encode.
      [HEADERS.signature]: sign({ key: publishKey, timestamp, method, path: sentPath, body }),
    };
    if (body.length > 0) headers['content-type'] = 'application/json';
    for (const [name, value] of Object.entries(requestOptions.headers ?? {})) headers[name.toLowerCase()] = value;
    const timeoutMs = checkTimeout(requestOptions.timeoutMs ?? defaultTimeoutMs);
    const signal = AbortSignal.timeout(timeoutMs);

    let status: number;
    let retryAfterHeader: string | string[] | undefined;
    let text: string;
    try {
      // pool.request() rather than undici's top-level request(url): the top-level one re-parses the URL
      // with WHATWG rules (`'` in a query becomes `%27`, `..` segments vanish), so the path on the wire
      // could differ from the signed one. The pool sends `path` byte for byte.
      const answer = await pool.request({
        method,
        path: sentPath,
        headers,
        body: body.length > 0 ? body : null,
        signal,
      });
      status = answer.statusCode;
      retryAfterHeader = answer.headers['retry-after'];
      // Always read the body, even of failures, so the connection goes back to the pool.
      text = await answer.body.text();
    } catch (cause) {
      const why = signal.aborted
        ? `no answer within ${timeoutMs} ms`
        : cause instanceof Error
          ? cause.message
          : String(cause);
      throw new RealtimeError('network', 0, `${method} ${sentPath} to ${base.origin} failed: ${why}`, { cause });
    }
    return readAnswer(status, text, parseRetryAfter(retryAfterHeader, now()));
  }

  return {
    signedRequest,
    close() {
      closing ??= pool.close();
      return closing;
    },
  };
}

/** Turns the raw answer into a success answer or a thrown {@link RealtimeError}. */
function readAnswer(status: number, text: string, retryAfter: number | undefined): ApiAnswer {
  const fail = (code: string, message: string) => new RealtimeError(code, status, message, { retryAfter });
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    // A proxy or load balancer page, typically: say what came so it can be recognised.
    throw fail('bad_answer', `the service answered ${status} with a body that is not JSON`);
  }
  if (!isRecord(answer) || typeof answer.ok !== 'boolean') {
    throw fail('bad_answer', `the service answered ${status} with JSON that is not an API answer`);
  }
  if (!answer.ok) {
    const code = typeof answer.error === 'string' && answer.error.length > 0 ? answer.error : 'bad_answer';
    // The answer's own message names the field or index at fault; the catalogue's is the fallback.
    const message =
      typeof answer.message === 'string' && answer.message.length > 0
        ? answer.message
        : isErrorCode(code)
          ? ERRORS[code].message
          : `the service answered ${status} ${code}`;
    throw fail(code, message);
  }
  if (status < 200 || status > 299) throw fail('bad_answer', `the service answered ok with HTTP status ${status}`);
  return answer as ApiAnswer;
}

/** Retry-After is either delay-seconds or an HTTP date (RFC 9110 section 10.2.3); both become seconds. */
function parseRetryAfter(header: string | string[] | undefined, nowMs: number): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  if (/^[0-9]+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

function parseBaseUrl(url: string): { origin: string; prefix: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`\`url\` is not a valid address: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`\`url\` must start with http:// or https://, got ${JSON.stringify(url)}`);
  }
  if (parsed.search || parsed.hash || parsed.username || parsed.password) {
    throw new TypeError('`url` must not hold credentials, a query or a fragment');
  }
  // A path prefix (a service mounted under /realtime, say) is part of the path sent, so it is signed too.
  return { origin: parsed.origin, prefix: parsed.pathname.replace(/\/+$/, '') };
}

function checkTimeout(ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) throw new TypeError(`a timeout is a positive number of milliseconds, got ${ms}`);
  return ms;
}
