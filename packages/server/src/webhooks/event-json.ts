import { randomBytes } from 'node:crypto';
import type { SendEvent } from '../core/events.js';
import type { Report } from '../engines/types.js';

/** A webhook event or batch id: the prefix, the time in base 36, then 16 random hex digits. */
export function newId(prefix: 'ev_' | 'b_', now: number): string {
  return `${prefix}${now.toString(36)}${randomBytes(8).toString('hex')}`;
}

/** An event's stored text: its id and time first, then its fields. Every try sends exactly this. */
export function eventJson(event: { type: string }, now: number): string {
  return JSON.stringify({ id: newId('ev_', now), at: now, ...event });
}

/**
 * A page send's `emit` event before the send has its id: its text cut where `event_id`'s value
 * goes, for the broker to join around the id (`before + id + after`) in the step that issues it.
 * Ids (`<ms>-<seq>`) need no escaping in JSON.
 */
export function reportText(event: SendEvent, now: number): Report {
  const json = eventJson(event, now);
  return { before: `${json.slice(0, -1)},"event_id":"`, after: '"}' };
}
