/**
 * The error catalogue: every code the API answers, with its HTTP status and a default message.
 * Section 7 of the API document plus decisions.md. docs/errors.md is checked against this table.
 */
export const ERRORS = {
  bad_request: { status: 400, message: 'The request is not one the API takes.' },
  bad_room: { status: 400, message: 'A room name is not accepted.' },
  reserved: { status: 400, message: 'The event name is kept for the room itself.' },
  bad_event: { status: 400, message: 'The event name is kept for rooms.' },
  missing_signature: { status: 401, message: 'A signature header is missing or malformed.' },
  stale_signature: { status: 401, message: 'The timestamp is more than 5 minutes from the server clock.' },
  unknown_site: { status: 401, message: 'No app has that key.' },
  unauthorized: { status: 401, message: 'GET /metrics needs Authorization: Bearer <the configured token>.' },
  bad_signature: { status: 401, message: 'The signature does not match the request.' },
  not_included: { status: 403, message: "The app's plan does not include this operation." },
  not_found: { status: 404, message: 'Nothing is found at this address.' },
  bad_method: { status: 405, message: 'This address does not take that method.' },
  request_timeout: { status: 408, message: 'The request did not arrive in time.' },
  no_webhook: { status: 409, message: 'The app has no webhook address.' },
  not_resendable: { status: 409, message: 'The batch was taken or is out of its resend window.' },
  idempotency_conflict: {
    status: 409,
    message: 'The Idempotency-Key was used with another body, or its first request is still in flight.',
  },
  too_large: { status: 413, message: 'The body or its data is too large.' },
  too_many: { status: 413, message: 'Too many rooms, users, ids or events.' },
  rate_limited: { status: 429, message: 'The app is over its rate limit; retry after the time given.' },
  internal: { status: 500, message: 'The service failed; the request may be retried.' },
  storage_full: { status: 503, message: "The service's storage is full: nothing was stored or delivered." },
  unavailable: { status: 503, message: 'The service could not take the request now: nothing was stored or delivered.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERRORS, code);
}

/** Values of `error` in a webhook delivery record when nothing answered. */
export const DELIVERY_ERRORS = ['timeout', 'unreachable', 'not_public'] as const;
export type DeliveryError = (typeof DELIVERY_ERRORS)[number];

/** Plan features of decisions.md. */
export const FEATURES = ['history', 'ask', 'presence', 'webhooks', 'calls', 'groups', 'streams'] as const;
export type Feature = (typeof FEATURES)[number];

export function isFeature(value: unknown): value is Feature {
  return typeof value === 'string' && (FEATURES as readonly string[]).includes(value);
}
