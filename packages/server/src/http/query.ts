import { quote } from '../core/quote.js';
import { ApiError } from './api-error.js';

/** Percent-decodes one component; bad encoding is the client's mistake. */
export function decodeComponent(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new ApiError('bad_request', `${what} has bad percent-encoding: ${quote(text)}`);
  }
}

/**
 * Parses a query string strictly: only the allowed names, each at most once, percent-decoded.
 * '+' stays '+': clients percent-encode (encodeURIComponent), they do not form-encode.
 */
export function parseQuery(query: string, allowed: readonly string[]): Map<string, string> {
  const params = new Map<string, string>();
  if (query === '') return params;
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = decodeComponent(eq < 0 ? part : part.slice(0, eq), 'a query parameter name');
    if (!allowed.includes(name)) {
      throw new ApiError(
        'bad_request',
        allowed.length === 0
          ? `this endpoint takes no query parameters (got ${quote(name)})`
          : `unknown query parameter ${quote(name)}`,
      );
    }
    if (params.has(name)) throw new ApiError('bad_request', `query parameter ${quote(name)} is given twice`);
    params.set(name, eq < 0 ? '' : part.slice(eq + 1));
  }
  return params;
}
