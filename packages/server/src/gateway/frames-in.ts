import {
  type ClientFrame,
  CURSOR_MAX_LENGTH,
  EPOCH_MAX_LENGTH,
  EVENT_ID_PATTERN,
  LIMITS,
  type SocketErrorCode,
} from '@realtime/protocol';

/** A frame the page got wrong: the error frame to answer, with the frame's ref when it had one. */
export class FrameError extends Error {
  readonly code: SocketErrorCode;
  readonly ref: number | undefined;
  readonly room: string | undefined;
  constructor(code: SocketErrorCode, message: string, ref?: number, room?: string) {
    super(message);
    this.code = code;
    this.ref = ref;
    this.room = room;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const FIELDS: Record<ClientFrame['t'], { required: string[]; optional: string[] }> = {
  hello: { required: ['v'], optional: ['identity'] },
  join: { required: ['ref', 'room', 'token'], optional: ['since', 'epoch', 'last'] },
  leave: { required: ['ref', 'room'], optional: [] },
  send: { required: ['ref', 'room', 'event'], optional: ['data'] },
  reply: { required: ['ask'], optional: ['data'] },
  decline: { required: ['ask'], optional: [] },
  list: { required: ['ref', 'room'], optional: ['cursor'] },
  ping: { required: [], optional: [] },
  pong: { required: [], optional: [] },
};

/** Parses one text message into a client frame, checking each field's type; throws FrameError. */
export function parseFrame(text: string): ClientFrame {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new FrameError('bad_frame', 'the frame is not JSON');
  }
  if (!isObject(value)) throw new FrameError('bad_frame', 'a frame must be a JSON object');
  // Whatever is wrong with the frame, its error frame carries its ref and room when it had them, so
  // the page can tell which of its frames was refused.
  const ref = Number.isSafeInteger(value.ref) ? (value.ref as number) : undefined;
  const room = typeof value.room === 'string' ? value.room : undefined;
  const type = value.t;
  if (typeof type !== 'string' || !Object.hasOwn(FIELDS, type)) {
    throw new FrameError('bad_frame', `unknown frame type ${JSON.stringify(type)?.slice(0, 40) ?? ''}`, ref, room);
  }
  const fail = (message: string): never => {
    throw new FrameError('bad_frame', `${type}: ${message}`, ref, room);
  };
  const fields = FIELDS[type as ClientFrame['t']];
  for (const name of fields.required) {
    if (value[name] === undefined) fail(`${name} is missing`);
  }
  for (const name of Object.keys(value)) {
    if (name !== 't' && !fields.required.includes(name) && !fields.optional.includes(name)) {
      fail(`unknown field ${JSON.stringify(name).slice(0, 40)}`);
    }
  }
  if ('ref' in value && ref === undefined) fail('ref must be a whole number');
  for (const name of ['room', 'token', 'event', 'ask', 'identity']) {
    if (value[name] !== undefined && typeof value[name] !== 'string') fail(`${name} must be a string`);
  }
  if (type === 'hello' && typeof value.v !== 'number') fail('v must be a number');
  if (value.since !== undefined && (typeof value.since !== 'string' || !EVENT_ID_PATTERN.test(value.since))) {
    fail('since must be an event id <ms>-<seq>');
  }
  if (value.last !== undefined) {
    const last = value.last;
    if (typeof last !== 'number' || !Number.isInteger(last) || last < 1 || last > LIMITS.historyMaxEvents) {
      fail(`last must be a whole number from 1 to ${LIMITS.historyMaxEvents}`);
    }
  }
  if (value.since !== undefined && value.last !== undefined) fail('give since or last, not both');
  if (value.cursor !== undefined && (typeof value.cursor !== 'string' || value.cursor.length > CURSOR_MAX_LENGTH)) {
    fail(`cursor must be a string of at most ${CURSOR_MAX_LENGTH} characters`);
  }
  if (value.epoch !== undefined) {
    if (typeof value.epoch !== 'string' || value.epoch.length > EPOCH_MAX_LENGTH) {
      fail(`epoch must be a string of at most ${EPOCH_MAX_LENGTH} characters`);
    }
    if (value.since === undefined) fail('epoch goes with since');
  }
  return value as unknown as ClientFrame;
}
