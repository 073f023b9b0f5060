import type { SocketErrorCode } from '@realtime/protocol';
import { isRecord } from '@realtime/protocol';
import { encodeData } from '../core/validate.js';
import { StoreError } from '../engines/store-error.js';
import type { Connection } from './connection.js';

/** A frame the page got wrong: the error frame to answer, with the frame's ref (and room or call) when it had them. */
/** What a refused frame was about: its error frame names it. */
export interface FrameAbout {
  room?: string | undefined;
  call?: string | undefined;
  stream?: string | undefined;
  group?: string | undefined;
}

export class FrameError extends Error {
  readonly code: SocketErrorCode;
  readonly ref: number | undefined;
  readonly room: string | undefined;
  readonly call: string | undefined;
  readonly stream: string | undefined;
  readonly group: string | undefined;
  /** `about` names what the refused frame named (its room, call, stream or group), for the page to match. */
  constructor(code: SocketErrorCode, message: string, ref?: number, about: FrameAbout = {}) {
    super(message);
    this.code = code;
    this.ref = ref;
    this.room = about.room;
    this.call = about.call;
    this.stream = about.stream;
    this.group = about.group;
  }
}

/**
 * Runs a frame's step on the store: a StoreError becomes an `unavailable` error frame naming the
 * frame's ref and subject (so the page may try again); any other error passes through unchanged.
 */
export async function stored<T>(step: () => Promise<T>, ref: number | undefined, about: FrameAbout): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof StoreError) {
      throw new FrameError('unavailable', 'the service could not reach its storage; try again', ref, about);
    }
    throw error;
  }
}

/**
 * The ref of a frame and what it was about, read from whatever fields it has (a ref that is a whole
 * number, names that are strings): any error frame answering it carries them, so the page can tell
 * which of its frames was refused.
 */
export function frameSubject(value: Readonly<Record<string, unknown>>): { ref: number | undefined; about: FrameAbout } {
  const text = (name: string): string | undefined => {
    const field = value[name];
    return typeof field === 'string' ? field : undefined;
  };
  return {
    ref: Number.isSafeInteger(value.ref) ? (value.ref as number) : undefined,
    about: { room: text('room'), call: text('call'), stream: text('stream'), group: text('group') },
  };
}

/** The JSON type a field must have. `ref` is a whole number naming a request. */
export type FieldType = 'string' | 'number' | 'boolean' | 'object' | 'ref' | 'json';

/** The fields of one frame type: the generic checks done before its handler runs. */
export interface FrameSpec {
  required: Readonly<Record<string, FieldType>>;
  optional?: Readonly<Record<string, FieldType>>;
  /** Checks beyond the fields' types; answers a problem (a fragment of a sentence) or undefined. */
  check?(frame: Record<string, unknown>): string | undefined;
}

/** One frame type of the page protocol: its fields and what the service does with it. */
export interface FrameHandler<F extends { t: string } = { t: string }> {
  spec: FrameSpec;
  /** Runs in the page's queue, after the frames before it; a FrameError becomes an error frame. */
  handle(conn: Connection, frame: F): Promise<void> | void;
}

/**
 * What a feature adds to the page protocol (rooms, asks, calls, groups, streams): its frame types,
 * and what it does when a page opens (after the welcome) and closes. Each feature lives in its own
 * folder and adds its module to the gateway; none touches another's.
 */
export interface PageModule {
  /** Frame handlers by frame type (`t`). Handlers are typed by `frame<F>()`. */
  frames: Readonly<Record<string, FrameHandler>>;
  /** The page was welcomed (as its user, when it has one). Failures are logged, the page stays. */
  opened?(conn: Connection): Promise<void>;
  /** The page closed; runs before any module's `released`. Failures are logged. */
  closed?(conn: Connection): Promise<void> | void;
  /**
   * After every module's `closed`: the page lets go of what the store holds for it (room seats,
   * presence). A failure is not lost: the departures close what is left once the store answers.
   */
  released?(conn: Connection): Promise<void>;
  /**
   * Frames taken at once, ahead of the page's queue and free of its frame budget (answers to the
   * service's own asks, which must not wait behind a join's replay). Sees each text frame first
   * (`text` reads it only when called), and answers the parsed frame when it is one such frame;
   * the gateway then runs its handler at once. Must be cheap for every other frame.
   */
  atOnce?(conn: Connection, text: () => string): Parsed | undefined;
}

/** Types a frame handler by its frame; the registry calls it with frames that passed the spec. */
export function frame<F extends { t: string }>(
  spec: FrameSpec,
  handle: (conn: Connection, frame: F) => Promise<void> | void,
): FrameHandler {
  return { spec, handle: handle as FrameHandler['handle'] };
}

/**
 * Levels of nesting a frame's data must leave free: services put it in frames of their own and
 * encode it again, deeper in the stack, where data that only just passed would overflow.
 */
const DATA_DEPTH_MARGIN = 64;

/**
 * A frame's `data` as JSON text, with the emit's check: data nested deeper than JSON can be written
 * (JSON.parse takes 5,000 levels, JSON.stringify overflows the stack) is the page's mistake, refused
 * `bad_frame` naming the frame's ref and what it was about, not a failure logged with a stack.
 */
export function frameData(type: string, data: unknown, ref: number | undefined, about: FrameAbout): string {
  let wrapped: unknown = data;
  for (let i = 0; i < DATA_DEPTH_MARGIN; i++) wrapped = [wrapped];
  // Encoded once, inside the margin: `[[...data...]]`, then the brackets cut off.
  const encoded = encodeData(wrapped, `${type}: `);
  if (!encoded.ok) throw new FrameError('bad_frame', encoded.problem.message, ref, about);
  return encoded.value.slice(DATA_DEPTH_MARGIN, -DATA_DEPTH_MARGIN);
}

function typeProblem(value: unknown, type: FieldType): string | undefined {
  switch (type) {
    case 'string':
      return typeof value === 'string' ? undefined : 'must be a string';
    case 'number':
      return typeof value === 'number' ? undefined : 'must be a number';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be a boolean';
    case 'object':
      return isRecord(value) ? undefined : 'must be a JSON object';
    case 'ref':
      return Number.isSafeInteger(value) ? undefined : 'must be a whole number';
    case 'json':
      return undefined;
  }
}

/** A parsed frame and the handler it goes to. */
export interface Parsed {
  frame: { t: string } & Record<string, unknown>;
  handler: FrameHandler;
}

/** A frame type's handler, with its spec's required fields listed once (not per frame). */
interface Registered {
  handler: FrameHandler;
  required: readonly (readonly [string, FieldType])[];
}

const NO_FIELDS: Readonly<Record<string, FieldType>> = {};

/** A refused frame: its error frame carries the frame's ref and what it was about. */
function refusal(value: Readonly<Record<string, unknown>>, message: string): FrameError {
  const { ref, about } = frameSubject(value);
  return new FrameError('bad_frame', message, ref, about);
}

/** Every frame type a page may send, by `t`: parses a text frame and finds its handler. */
export class FrameRegistry {
  readonly #handlers = new Map<string, Registered>();

  /** Adds frame types; a type added twice is a programming error. */
  add(frames: Readonly<Record<string, FrameHandler>>): void {
    for (const [type, handler] of Object.entries(frames)) {
      if (this.#handlers.has(type)) throw new Error(`the frame type ${type} is handled twice`);
      this.#handlers.set(type, { handler, required: Object.entries(handler.spec.required) });
    }
  }

  /** Parses one text message, checking each field's type against the frame's spec; throws FrameError. */
  parse(text: string): Parsed {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new FrameError('bad_frame', 'the frame is not JSON');
    }
    if (!isRecord(value)) throw new FrameError('bad_frame', 'a frame must be a JSON object');
    // Whatever is wrong with the frame, its error frame carries its ref and what it was about.
    const type = value.t;
    const registered = typeof type === 'string' ? this.#handlers.get(type) : undefined;
    if (registered === undefined) {
      throw refusal(value, `unknown frame type ${JSON.stringify(type)?.slice(0, 40) ?? ''}`);
    }
    const { handler } = registered;
    const { required, optional = NO_FIELDS } = handler.spec;
    for (const [name, fieldType] of registered.required) {
      if (value[name] === undefined) throw refusal(value, `${type}: ${name} is missing`);
      const problem = typeProblem(value[name], fieldType);
      if (problem) throw refusal(value, `${type}: ${name} ${problem}`);
    }
    for (const name of Object.keys(value)) {
      if (name === 't' || Object.hasOwn(required, name)) continue;
      const fieldType = Object.hasOwn(optional, name) ? optional[name] : undefined;
      if (fieldType === undefined) throw refusal(value, `${type}: unknown field ${JSON.stringify(name).slice(0, 40)}`);
      const problem = typeProblem(value[name], fieldType);
      if (problem) throw refusal(value, `${type}: ${name} ${problem}`);
    }
    const problem = handler.spec.check?.(value);
    if (problem) throw refusal(value, `${type}: ${problem}`);
    return { frame: value as Parsed['frame'], handler };
  }
}
