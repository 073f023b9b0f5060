import { isUtf8 } from 'node:buffer';
import { isRecord, LIMITS, userIdProblem } from '@realtime/protocol';
import { quote } from '../core/quote.js';
import { revocationEnd } from '../users/token-revocations.js';
import { ApiError } from './api-error.js';
import type { ApiRequest, Handler } from './context.js';
import { parseQuery } from './query.js';

/**
 * The routes that act on users: disconnect a user's pages, revoke tokens. Each is checked whole
 * (path, query, body) before it acts. Neither is a plan feature: every app may end its own users'
 * sessions (docs/api.md).
 */

function pathUser(request: ApiRequest): string {
  const user = request.params[0] ?? '';
  const problem = userIdProblem(user);
  if (problem) throw new ApiError('bad_request', `${problem}: ${quote(user)}`);
  return user;
}

/** A body that must be absent or an empty JSON object. */
function emptyBody(request: ApiRequest): void {
  if (request.body.length === 0) return;
  const body = jsonBody(request);
  const first = Object.keys(body)[0];
  if (first !== undefined) throw new ApiError('bad_request', `unknown field ${quote(first)}: this route takes no body`);
}

function jsonBody(request: ApiRequest): Record<string, unknown> {
  if (!isUtf8(request.body)) throw new ApiError('bad_request', 'the body is not valid UTF-8');
  let value: unknown;
  try {
    value = JSON.parse(request.body.toString('utf8'));
  } catch (error) {
    const reason = error instanceof SyntaxError ? error.message : 'unreadable';
    throw new ApiError('bad_request', `the body is not JSON: ${reason}`);
  }
  if (!isRecord(value)) throw new ApiError('bad_request', 'the body must be a JSON object');
  return value;
}

/** POST /users/{id}/disconnect: closes every page of the user on every node (4004). */
export const disconnectUser: Handler = async (request, deps) => {
  parseQuery(request.query, []);
  const user = pathUser(request);
  emptyBody(request);
  await deps.users.disconnect(request.app.key, user);
  return {};
};

const REVOKE_FIELDS = new Set(['user', 'before']);
/** The furthest ahead of the service's clock `before` may be: the clock difference signatures allow. */
const BEFORE_AHEAD_MS = LIMITS.clockSkewSeconds * 1000;

/** POST /tokens/revoke: identity and room tokens issued before `before`, of one user or the whole app. */
export const revokeTokens: Handler = async (request, deps) => {
  parseQuery(request.query, []);
  if (request.body.length === 0) throw new ApiError('bad_request', 'the body must be a JSON object { user?, before }');
  const body = jsonBody(request);
  for (const field of Object.keys(body)) {
    if (!REVOKE_FIELDS.has(field)) throw new ApiError('bad_request', `unknown field ${quote(field)}`);
  }
  const { user, before } = body;
  if (user !== undefined) {
    if (typeof user !== 'string') throw new ApiError('bad_request', 'user must be a user id (a string)');
    const problem = userIdProblem(user);
    if (problem) throw new ApiError('bad_request', `user: ${problem}: ${quote(user)}`);
  }
  if (typeof before !== 'number' || !Number.isSafeInteger(before) || before < 0) {
    throw new ApiError('bad_request', 'before must be a whole number of milliseconds since the epoch');
  }
  // A time ahead would refuse the fresh tokens pages fetch once closed: only the clock difference is allowed.
  if (before > deps.now() + BEFORE_AHEAD_MS) {
    throw new ApiError('bad_request', 'before is more than 5 minutes ahead of the service clock');
  }
  // No token issued that long ago is still valid: most likely seconds where milliseconds are meant.
  if (revocationEnd(before) <= deps.now()) {
    throw new ApiError(
      'bad_request',
      'before is older than any token still valid (a day and 10 minutes): it counts milliseconds since the epoch',
    );
  }
  const outcome = await deps.users.revoke(request.app.key, user, before);
  if (outcome === 'full') {
    throw new ApiError(
      'too_many',
      `the app has ${LIMITS.revokedUsersPerApp} user revocations in force (each lasts a day): revoke the whole app's tokens instead`,
    );
  }
  return {};
};
