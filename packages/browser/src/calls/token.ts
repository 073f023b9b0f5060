import type { TokenSource } from '../room.js';
import { CallError } from './errors.js';

/** The call token's text: the string given, or what the function gives (`token_failed` when it fails or gives none). */
export async function tokenText(token: TokenSource): Promise<string> {
  try {
    const text = typeof token === 'function' ? await token() : token;
    if (typeof text !== 'string' || text === '') throw new TypeError('the call token function gave no token');
    return text;
  } catch (cause) {
    throw new CallError('token_failed', 'the call token function failed', { cause });
  }
}

/** Throws a TypeError for options without a usable `token`, or with a `media` that is neither a stream nor constraints. */
export function checkTokenAndMedia(options: unknown, what: string): void {
  if (typeof options !== 'object' || options === null) throw new TypeError(`${what} needs options with a \`token\``);
  const { token, media } = options as { token?: unknown; media?: unknown };
  if (!(typeof token === 'function' || (typeof token === 'string' && token !== ''))) {
    throw new TypeError('`token` must be a call token or a function giving one');
  }
  if (media !== undefined && (typeof media !== 'object' || media === null)) {
    throw new TypeError('`media` must be a MediaStream or MediaStreamConstraints');
  }
}
