/**
 * The dashboard's API as the page calls it (docs/dashboard.md): JSON in and out, the session's CSRF
 * token on every change, refusals thrown as ApiFailure with the service's code and message.
 */

/** A refusal of the service, or a request that never got an answer (`code` "network"). */
export class ApiFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    /** Seconds to wait before trying again, when the service said (`Retry-After`). */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

type Body = Record<string, unknown>;

let csrf = '';
let onSignedOut: () => void = () => {};

/** The token of the session the page holds; set after signing in or on load. */
export function setCsrf(token: string): void {
  csrf = token;
}

/** Called when any request finds the session gone, so the page shows sign-in again. */
export function whenSignedOut(listener: () => void): void {
  onSignedOut = listener;
}

async function call<T>(method: string, path: string, body?: Body): Promise<T> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') headers['X-CSRF-Token'] = csrf;
  let res: Response;
  try {
    res = await fetch(`/dashboard/api${path}`, {
      method,
      headers,
      credentials: 'same-origin',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiFailure('network', 'The service did not answer: check that it is running.', 0);
  }
  let answer: { ok?: boolean; error?: string; message?: string } & Body;
  try {
    answer = (await res.json()) as typeof answer;
  } catch {
    throw new ApiFailure('bad_answer', `The service answered ${res.status} without JSON.`, res.status);
  }
  if (!res.ok || answer.ok !== true) {
    const code = answer.error ?? 'failed';
    if (code === 'signed_out' && path !== '/session') onSignedOut();
    const retry = Number(res.headers.get('Retry-After') ?? Number.NaN);
    const message = answer.message ?? `The request failed (${res.status}).`;
    throw new ApiFailure(code, message, res.status, Number.isFinite(retry) ? retry : undefined);
  }
  return answer as T;
}

export const api = {
  get: <T>(path: string) => call<T>('GET', path),
  post: <T>(path: string, body?: Body) => call<T>('POST', path, body ?? {}),
  patch: <T>(path: string, body: Body) => call<T>('PATCH', path, body),
  put: <T>(path: string, body: Body) => call<T>('PUT', path, body),
  delete: <T>(path: string) => call<T>('DELETE', path),
};

/** A path segment with anything escaped (app keys and batch ids are plain, but never trusted). */
export const seg = (value: string) => encodeURIComponent(value);
