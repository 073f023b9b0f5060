import { isUtf8 } from 'node:buffer';
import { type Feature, isRecord, LIMITS, userIdProblem } from '@realtime/protocol';
import { TooManyAsks } from '../asks/ask-service.js';
import { quote } from '../core/quote.js';
import { checkEventName, encodeData, unknownField, validateEvent } from '../core/validate.js';
import { ResendRefused } from '../webhooks/webhooks.js';
import { ApiError, accept, problemError } from './api-error.js';
import type { ApiRequest, Handler } from './context.js';
import { idempotent } from './idempotency.js';
import { batchDataBytes, dataBytes } from './json-span.js';
import { decodeComponent, parseQuery } from './query.js';

export function requireFeature(request: ApiRequest, feature: Feature, what: string): void {
  if (!request.app.features.includes(feature)) {
    throw new ApiError('not_included', `the app's plan does not include ${feature} (${what})`);
  }
}

function noQuery(request: ApiRequest): void {
  parseQuery(request.query, []);
}

/** Parses a JSON object body; names what is wrong. */
function jsonObject(body: Buffer, what: string): Record<string, unknown> {
  if (body.length === 0) throw new ApiError('bad_request', `the body must be a JSON object (${what})`);
  // Invalid UTF-8 would be read as U+FFFD: a name could then pass as other than what was sent.
  if (!isUtf8(body)) throw new ApiError('bad_request', 'the body is not valid UTF-8');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (error) {
    const reason = error instanceof SyntaxError ? error.message : 'unreadable';
    throw new ApiError('bad_request', `the body is not JSON: ${reason}`);
  }
  if (!isRecord(value)) throw new ApiError('bad_request', `the body must be a JSON object (${what})`);
  return value;
}

/** Refuses a body with a field not in the allowed set, naming the first. */
function onlyFields(body: Record<string, unknown>, allowed: Set<string>): void {
  const refusal = unknownField(body, allowed, '');
  if (refusal) throw problemError(refusal.problem);
}

/** Measures `data` as sent only when the body could hold more than the limit. */
function needsSpan(body: Buffer): boolean {
  return body.length > LIMITS.dataBytes;
}

export const emit: Handler = (request, deps) => {
  noQuery(request);
  const body = jsonObject(request.body, 'an event to send');
  const event = accept(validateEvent(body, '', needsSpan(request.body) ? dataBytes(request.body) : undefined));
  if (event.history.size > 0) requireFeature(request, 'history', 'history on emit');
  if (request.headers['idempotency-key'] !== undefined) {
    return idempotent(request, deps, 'emit', async () => ({ ids: await deps.emitter.emit(request.app.key, event) }));
  }
  const ids = deps.emitter.emit(request.app.key, event);
  return ids instanceof Promise ? ids.then((done) => ({ ids: done })) : { ids };
};

const BATCH_FIELDS = new Set(['events']);

export const emitBatch: Handler = async (request, deps) => {
  noQuery(request);
  const body = jsonObject(request.body, '{ events: [...] }');
  onlyFields(body, BATCH_FIELDS);
  const raw = body.events;
  if (!Array.isArray(raw)) throw new ApiError('bad_request', 'events must be an array of events to send');
  if (raw.length === 0) throw new ApiError('bad_request', 'events must hold at least one event');
  if (raw.length > LIMITS.eventsPerBatch) {
    throw new ApiError('too_many', `more than ${LIMITS.eventsPerBatch} events in one batch (${raw.length})`);
  }
  const sizes = needsSpan(request.body) ? batchDataBytes(request.body) : undefined;
  // The whole batch is checked before any event is sent: one bad event refuses the batch.
  const events = raw.map((item, i) => accept(validateEvent(item, `events[${i}]: `, sizes?.[i])));
  events.forEach((event, i) => {
    if (event.history.size > 0) requireFeature(request, 'history', `history on events[${i}]`);
  });
  // Stored all together before any is delivered: a failed batch delivered nothing, so a retry cannot duplicate.
  return idempotent(request, deps, 'emit_batch', async () => ({
    ids: await deps.emitter.emitAll(request.app.key, events),
  }));
};

const ASK_FIELDS = new Set(['event', 'data', 'timeout', 'all']);

export const ask: Handler = async (request, deps) => {
  noQuery(request);
  const user = request.params[0] ?? '';
  const userProblem = userIdProblem(user);
  if (userProblem) throw new ApiError('bad_request', `${userProblem}: ${quote(user)}`);
  const body = jsonObject(request.body, '{ event, data, timeout, all }');
  onlyFields(body, ASK_FIELDS);
  const event = accept(checkEventName(body.event, '', 'bad_event'));
  const data = accept(encodeData(body.data, '', needsSpan(request.body) ? dataBytes(request.body) : undefined));
  const timeout = body.timeout === undefined ? LIMITS.askTimeoutDefaultMs : body.timeout;
  if (
    typeof timeout !== 'number' ||
    !Number.isInteger(timeout) ||
    timeout < LIMITS.askTimeoutMinMs ||
    timeout > LIMITS.askTimeoutMaxMs
  ) {
    throw new ApiError(
      'bad_request',
      `timeout must be a whole number of milliseconds from ${LIMITS.askTimeoutMinMs} to ${LIMITS.askTimeoutMaxMs}`,
    );
  }
  const all = body.all === undefined ? false : body.all;
  if (typeof all !== 'boolean') throw new ApiError('bad_request', 'all must be a boolean');
  requireFeature(request, 'ask', 'ask');
  try {
    return { replies: await deps.ask.ask(request.app.key, user, { event, data, timeout, all }) };
  } catch (error) {
    // Refused where it starts, at once: a burst of asks never reaches (and never floods) the user's pages.
    if (error instanceof TooManyAsks) throw new ApiError('rate_limited', error.message, { 'Retry-After': '1' });
    throw error;
  }
};

export const online: Handler = async (request, deps) => {
  const query = parseQuery(request.query, ['ids']);
  const raw = query.get('ids');
  if (raw === undefined || raw === '') throw new ApiError('bad_request', 'ids must list 1 to 1,000 user ids');
  const parts = raw.split(',');
  if (parts.length > LIMITS.onlineIdsPerRequest) {
    throw new ApiError('too_many', `more than ${LIMITS.onlineIdsPerRequest} ids (${parts.length})`);
  }
  const ids: string[] = [];
  const seen = new Set<string>();
  for (const part of parts) {
    const id = decodeComponent(part, 'ids');
    const problem = userIdProblem(id);
    if (problem) throw new ApiError('bad_request', `ids: ${problem}: ${quote(id)}`);
    if (!seen.has(id)) {
      seen.add(id);
      ids.push(id);
    }
  }
  if (request.body.length > 0) throw new ApiError('bad_request', 'GET takes no body');
  requireFeature(request, 'presence', 'online');
  const flags = await deps.presence.online(request.app.key, ids, deps.now());
  return { online: ids.filter((_, i) => flags[i]) };
};

/** The webhook endpoints take no body; an empty JSON object is tolerated. */
function noBody(request: ApiRequest): void {
  if (request.body.length === 0) return;
  const body = jsonObject(request.body, 'no body');
  onlyFields(body, new Set());
}

function webhookPreconditions(request: ApiRequest): void {
  noQuery(request);
  noBody(request);
  requireFeature(request, 'webhooks', 'webhooks');
}

export const webhookTest: Handler = async (request, deps) => {
  webhookPreconditions(request);
  if (request.app.webhook === '') throw new ApiError('no_webhook', 'the app has no webhook address set');
  return await deps.webhooks.test(request.app.key);
};

export const webhookList: Handler = async (request, deps) => {
  webhookPreconditions(request);
  if (request.app.webhook === '') throw new ApiError('no_webhook', 'the app has no webhook address set');
  return { deliveries: await deps.webhooks.list(request.app.key) };
};

export const webhookResend: Handler = async (request, deps) => {
  webhookPreconditions(request);
  if (request.app.webhook === '') throw new ApiError('no_webhook', 'the app has no webhook address set');
  try {
    return await deps.webhooks.resend(request.app.key, request.params[0] ?? '');
  } catch (error) {
    if (error instanceof ResendRefused) throw new ApiError(error.code, error.message);
    throw error;
  }
};
