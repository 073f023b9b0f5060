import { API_BASE } from '@realtime/protocol';

/**
 * Percent-encodes one path segment (a user id, a batch id) for the request line.
 * The encoded text is also what gets signed (section 5.2), so it must never be re-encoded later.
 *
 * @example
 * encodeSegment('a b/c?é') // 'a%20b%2Fc%3F%C3%A9'
 */
export function encodeSegment(value: string): string {
  const encoded = encodeText(value, 'a path segment');
  // `.` and `..` pass encodeURIComponent untouched, but URL resolvers and proxies collapse them
  // (`/users/../ask`), which would send the request somewhere other than what was signed.
  if (encoded === '.' || encoded === '..') return encoded.replaceAll('.', '%2E');
  return encoded;
}

/**
 * Builds an API path from segments, each percent-encoded.
 *
 * @example
 * apiPath('users', 'alice', 'ask') // '/service/realtime/users/alice/ask'
 */
export function apiPath(...segments: string[]): string {
  return `${API_BASE}/${segments.map(encodeSegment).join('/')}`;
}

/**
 * The query of the online endpoint: each id percent-encoded (so a `,` inside an id becomes `%2C`),
 * joined by literal commas.
 *
 * @example
 * onlineQuery(['a', 'b,c']) // 'ids=a,b%2Cc'
 */
export function onlineQuery(ids: readonly string[]): string {
  return `ids=${ids.map((id) => encodeText(id, 'a user id')).join(',')}`;
}

/**
 * A query string of named values, each percent-encoded; values left `undefined` are left out.
 * Answers '' when none is given, else the string with its leading `?`.
 *
 * @example
 * encodeQuery({ prefix: 'game:', cursor: undefined, limit: 10 }) // '?prefix=game%3A&limit=10'
 */
export function encodeQuery(params: Record<string, string | number | undefined>): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined) continue;
    if (typeof value === 'number') parts.push(`${name}=${String(value)}`);
    else parts.push(`${name}=${encodeText(value, name)}`);
  }
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

function encodeText(value: string, what: string): string {
  if (typeof value !== 'string') throw new TypeError(`${what} must be a string, got ${typeof value}`);
  try {
    return encodeURIComponent(value);
  } catch {
    // Only lone surrogates make encodeURIComponent throw; they have no UTF-8 form to send.
    throw new TypeError(`${what} holds a lone surrogate and cannot be sent: ${JSON.stringify(value)}`);
  }
}
