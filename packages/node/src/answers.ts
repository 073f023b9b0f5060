import { isRecord } from '@realtime/protocol';
import { RealtimeError } from './errors.js';
import type { ApiAnswer } from './request.js';

// Checks of success answers: a field of the wrong shape is reported as `bad_answer` at the call,
// rather than surfacing later as a TypeError deep inside the customer's code.

/** The field `name` of an answer, when `check` accepts it; else a `bad_answer` RealtimeError. */
export function field<T>(answer: ApiAnswer, name: string, check: (value: unknown) => value is T, what: string): T {
  const value = answer[name];
  if (!check(value)) {
    throw new RealtimeError('bad_answer', 200, `the answer's \`${name}\` is not ${what}`);
  }
  return value;
}

export { isRecord };

export function isRecordArray(value: unknown): value is Record<string, unknown>[] {
  return Array.isArray(value) && value.every(isRecord);
}

export function isBoolean(value: unknown): value is boolean {
  return typeof value === 'boolean';
}

export function isNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

export function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

export function isStringRecord(value: unknown): value is Record<string, string> {
  return isRecord(value) && Object.values(value).every((item) => typeof item === 'string');
}

export function isStringRecordArray(value: unknown): value is Record<string, string>[] {
  return Array.isArray(value) && value.every(isStringRecord);
}
