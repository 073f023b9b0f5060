import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { DeliveryError } from '@realtime/protocol';
import { Agent, buildConnector } from 'undici';
import { addressProblem, hostProblem } from './address.js';

/** How one try went: the HTTP status, or 0 with the reason nothing usable came back (spec 2.5). */
export interface DeliveryResult {
  status: number;
  /** `timeout`, `unreachable` or `not_public`. */
  error?: DeliveryError;
}

/**
 * Resolves a host name to all its addresses, in the shape of `dns.lookup` with `all: true` (the
 * deliverer always asks for all). Injected in tests; the default is `node:dns` `lookup`.
 */
export type Lookup = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

export interface DelivererOptions {
  /** The development switch: allows `http://` and addresses in private networks, loopback included. */
  allowPrivate: boolean;
  /** Time for a whole try: connecting, and the answer's headers and body. Default 10 s (spec 8). */
  timeoutMs?: number;
  /** DNS used at connect time; default `node:dns` `lookup`. */
  lookup?: Lookup;
}

export interface Deliverer {
  /**
   * POSTs `body` to `url` once with `headers` and `Content-Type: application/json`. Never throws and
   * never follows a redirect (a 3xx is a status like any other).
   */
  deliver(url: string, body: string, headers: Record<string, string>): Promise<DeliveryResult>;
  /** Ends the connections; tries under way finish first (each bounded by the time limit). */
  close(): Promise<void>;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
/** How much of an answer's body is read (and thrown away) before the connection is dropped. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** A connection refused because the address is not public; recognised by class or by `code`. */
export class NotPublicError extends Error {
  readonly code = 'ERR_WEBHOOK_NOT_PUBLIC';
}

/**
 * The request target sent for a webhook address: its path with its query, as WHATWG URL parsing
 * leaves them. The signature covers exactly this string (spec 5.5), so the signer should use it too.
 */
export function requestPath(url: URL): string {
  return url.pathname + url.search;
}

/**
 * Makes the outgoing half of webhook delivery: one POST per call, SSRF-safe.
 *
 * Every try opens its own connection (`reset`, no keep-alive), and the address check sits in that
 * connection's DNS lookup: every address the name resolves to must be public, else the connection
 * fails before it starts. Since the check judges the very answer the socket then connects to, and
 * runs again on every try, a name that resolves public once and private later (DNS rebinding) is
 * refused on the later try. A host written as an IP address skips DNS, so it is checked before the
 * request and again in the connector.
 *
 * @example
 * const deliverer = createDeliverer({ allowPrivate: false });
 * const result = await deliverer.deliver('https://hooks.example.com/in', body, signedHeaders);
 * // { status: 204 } when taken; { status: 0, error: 'not_public' } for https://10.0.0.1/
 */
export function createDeliverer(options: DelivererOptions): Deliverer {
  const { allowPrivate } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new TypeError('timeoutMs must be a positive integer');
  const resolve: Lookup =
    options.lookup ??
    ((hostname, lookupOptions, callback) => {
      dnsLookup(hostname, lookupOptions, callback);
    });

  const connect = buildConnector({ lookup: checkedLookup(resolve, allowPrivate), timeout: timeoutMs });
  const agent = new Agent({
    connect: (connectOptions, callback) => {
      // IP hosts never reach the lookup (node:net connects to them directly); undici passes IPv6
      // hosts without brackets.
      const problem =
        allowPrivate || isIP(connectOptions.hostname) === 0 ? undefined : addressProblem(connectOptions.hostname);
      if (problem !== undefined) {
        callback(new NotPublicError(`${connectOptions.hostname} is not public: ${problem}`), null);
        return;
      }
      connect(connectOptions, callback);
    },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });

  async function deliver(url: string, body: string, headers: Record<string, string>): Promise<DeliveryResult> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return { status: 0, error: 'not_public' };
    }
    if (hostProblem(target, allowPrivate) !== undefined) return { status: 0, error: 'not_public' };

    const sent: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (name.toLowerCase() !== 'content-type') sent[name] = value;
    }
    sent['content-type'] = 'application/json';

    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    try {
      const answer = await agent.request({
        origin: target.origin,
        path: requestPath(target),
        method: 'POST',
        headers: sent,
        body,
        reset: true,
        signal: controller.signal,
      });
      try {
        await drain(answer.body);
      } catch {
        // The status line came; a body cut short by the peer does not undo it. Out of time does.
      }
      return timedOut ? { status: 0, error: 'timeout' } : { status: answer.statusCode };
    } catch (error) {
      return { status: 0, error: classify(error, timedOut) };
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    deliver,
    async close() {
      try {
        await agent.close();
      } catch {
        // Already closed: nothing left to end.
      }
    },
  };
}

/**
 * A `net.connect` lookup that resolves every address of the name and fails the connection with
 * {@link NotPublicError} when any of them is not public (unless `allowPrivate`). It answers in the
 * shape node:net asked for: all addresses, or the first one.
 */
function checkedLookup(resolve: Lookup, allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    const fail = (error: NodeJS.ErrnoException) => {
      if (options.all) callback(error, []);
      else callback(error, '', 0);
    };
    const resolveOptions: LookupAllOptions = { all: true };
    if (options.family !== undefined) resolveOptions.family = options.family;
    if (options.hints !== undefined) resolveOptions.hints = options.hints;
    try {
      resolve(hostname, resolveOptions, (error, addresses) => {
        if (error) return fail(error);
        const first = addresses[0];
        if (first === undefined) {
          return fail(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
        }
        if (!allowPrivate) {
          for (const { address } of addresses) {
            const problem = addressProblem(address);
            if (problem !== undefined) {
              return fail(new NotPublicError(`${hostname} resolves to ${address}, which is not public: ${problem}`));
            }
          }
        }
        if (options.all) callback(null, addresses);
        else callback(null, first.address, first.family);
      });
    } catch (error) {
      fail(error instanceof Error ? error : new Error(String(error)));
    }
  };
}

/** Reads and throws away an answer's body, up to {@link MAX_ANSWER_BYTES}; then drops the rest. */
async function drain(body: AsyncIterable<Uint8Array>): Promise<void> {
  let read = 0;
  for await (const chunk of body) {
    read += chunk.byteLength;
    // Leaving the loop destroys the stream, and with it the connection.
    if (read >= MAX_ANSWER_BYTES) return;
  }
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** Names why a try got no answer: the address check, the clock, or anything else on the way. */
function classify(error: unknown, timedOut: boolean): DeliveryError {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 8; cause = cause.cause, depth += 1) {
    if (cause instanceof NotPublicError) return 'not_public';
  }
  if (timedOut) return 'timeout';
  const code = error instanceof Error && 'code' in error ? error.code : undefined;
  return typeof code === 'string' && TIMEOUT_CODES.has(code) ? 'timeout' : 'unreachable';
}
