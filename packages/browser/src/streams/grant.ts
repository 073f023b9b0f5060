import { fromBase64Url, fromUtf8 } from '@realtime/protocol';
import type { TokenSource } from '../room.js';
import { StreamError } from './errors.js';
import type { StreamRole } from './types.js';

/**
 * The `role` claim of a stream grant, read without checking the signature (the page has no key;
 * the service checks it). Undefined when the grant is not a JWT with a role.
 */
export function grantRole(grant: string): StreamRole | undefined {
  const payload = grant.split('.')[1];
  const bytes = payload === undefined ? null : fromBase64Url(payload);
  const text = bytes === null ? null : fromUtf8(bytes);
  if (text === null) return undefined;
  try {
    const role = (JSON.parse(text) as { role?: unknown }).role;
    return role === 'presenter' || role === 'viewer' ? role : undefined;
  } catch {
    return undefined;
  }
}

/** The grant's text, from the string or the page's function. */
export async function grantText(grant: TokenSource, stream: string): Promise<string> {
  try {
    const text = typeof grant === 'function' ? await grant() : grant;
    if (typeof text !== 'string' || text === '') throw new TypeError('the stream grant function gave no grant');
    return text;
  } catch (cause) {
    throw new StreamError('token_failed', 'the stream grant function failed', { stream, cause });
  }
}
