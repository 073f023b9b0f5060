import { type ErrorFrame, roomNameProblem, type StreamClientFrame, type StreamServerFrame } from '@realtime/protocol';
import { webRtcHere } from '../calls/media.js';
import type { RtcOptions } from '../calls/types.js';
import type { RealtimeSocketError } from '../errors.js';
import type { StreamLink, StreamParty } from './link.js';
import { LiveStream } from './live-stream.js';
import type { StreamOptions } from './types.js';

/** How many ended refs are remembered, to drop late refusals of them. */
const DONE_KEPT = 100;
/**
 * Stream frames count refs down from here: room requests count up from 1 and call frames down from
 * -1, so the three never meet (a ref is any safe integer).
 */
const FIRST_REF = -(2 ** 40);

/** What the streams module needs from the client. */
export interface StreamsHost {
  readonly ready: boolean;
  readonly session: number;
  send(frame: StreamClientFrame): boolean;
}

/** A handler for each stream frame the service sends. */
export type StreamFrameHandlers = {
  [T in StreamServerFrame['t']]: (frame: Extract<StreamServerFrame, { t: T }>) => void;
};

/**
 * The client's live streams: opens them, routes the service's stream frames to them (answers by
 * `ref`, the rest by stream name), and tells them of welcomes, lost sockets and the page going away.
 */
export class Streams {
  readonly #host: StreamsHost;
  readonly #link: StreamLink;
  readonly #routes = new Map<number, StreamParty>();
  readonly #byName = new Map<string, { party: StreamParty; stream?: LiveStream }>();
  /** Refs of frames of streams that ended here: a late refusal of one is dropped, not `$error`. */
  readonly #done = new Set<number>();
  #waiters: { resolve(): void; reject(error: RealtimeSocketError): void }[] = [];
  #nextRef = FIRST_REF;
  #closed: RealtimeSocketError | undefined;
  readonly #pageHide = (): void => this.leave();

  constructor(host: StreamsHost, rtc: RtcOptions | undefined) {
    this.#host = host;
    this.#link = {
      // Checked by the calls module, which shares them.
      rtc: { ...rtc },
      get ready() {
        return host.ready;
      },
      get session() {
        return host.session;
      },
      whenReady: () => this.#whenReady(),
      send: (frame) => host.send(frame),
      nextRef: () => this.#nextRef--,
      claim: (ref, party) => {
        this.#routes.set(ref, party);
      },
      release: (ref, party) => {
        if (this.#routes.get(ref) !== party) return;
        this.#routes.delete(ref);
        this.#done.add(ref);
        if (this.#done.size > DONE_KEPT) this.#done.delete(this.#done.values().next().value as number);
      },
      live: (name, party, on) => {
        if (on) this.#byName.set(name, { party });
        else if (this.#byName.get(name)?.party === party) this.#byName.delete(name);
      },
    };
    // The service hears a closing page leave, rather than a socket that dropped.
    globalThis.addEventListener?.('pagehide', this.#pageHide);
  }

  /** The page's stream of that name if it is on it (or joining), else a new one. */
  open(name: string, options: StreamOptions): LiveStream {
    const problem = typeof name === 'string' ? roomNameProblem(name) : 'a stream name is a string';
    if (problem) throw new TypeError(problem.replace('room name', 'stream name'));
    checkOptions(options);
    const current = this.#byName.get(name)?.stream;
    if (current && current.state !== 'left') return current;
    if (!webRtcHere())
      throw new TypeError('live streams need WebRTC (RTCPeerConnection and MediaStream), not found here');
    const stream = new LiveStream(name, options, this.#link);
    const entry = this.#byName.get(name);
    if (entry) entry.stream = stream;
    return stream;
  }

  frameHandlers(): StreamFrameHandlers {
    const byRef = (ref: unknown) => (typeof ref === 'number' ? this.#routes.get(ref) : undefined);
    const byName = (name: unknown) => (typeof name === 'string' ? this.#byName.get(name)?.party : undefined);
    return {
      'stream.presenting': (frame) => byRef(frame.ref)?.entered(frame),
      'stream.watching': (frame) => byRef(frame.ref)?.entered(frame),
      'stream.left': (frame) => byRef(frame.ref)?.leftAnswer(),
      'stream.live': (frame) => byName(frame.stream)?.live(frame),
      'stream.ended': (frame) => byName(frame.stream)?.ended(),
      'stream.signal': (frame) => {
        if (typeof frame.data === 'object' && frame.data !== null) byName(frame.stream)?.signal(frame.data);
      },
    };
  }

  /** Takes an error frame that refused one of the streams' frames (by its ref, else the stream it names). */
  ownsError(frame: ErrorFrame, error: RealtimeSocketError): boolean {
    const ref = typeof frame.ref === 'number' ? frame.ref : undefined;
    const name = (frame as { stream?: unknown }).stream;
    const party =
      (ref === undefined ? undefined : this.#routes.get(ref)) ??
      (typeof name === 'string' ? this.#byName.get(name)?.party : undefined);
    if (party) {
      party.refused(error);
      return true;
    }
    return ref !== undefined && this.#done.has(ref);
  }

  welcome(): void {
    for (const waiter of this.#waiters.splice(0)) waiter.resolve();
    for (const { party } of [...this.#byName.values()]) party.welcome();
  }

  lost(error: RealtimeSocketError, final: boolean): void {
    if (final) {
      this.#closed = error;
      for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
      globalThis.removeEventListener?.('pagehide', this.#pageHide);
    }
    for (const { party } of [...this.#byName.values()]) party.lost(error, final);
  }

  /** Leaves every stream (a presenter's leaving ends its live run). */
  leave(): void {
    for (const { party } of [...this.#byName.values()]) party.leave();
  }

  #whenReady(): Promise<void> {
    if (this.#host.ready) return Promise.resolve();
    if (this.#closed) return Promise.reject(this.#closed);
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }
}

function checkOptions(options: StreamOptions): void {
  if (typeof options !== 'object' || options === null) throw new TypeError('stream needs options with a `grant`');
  const { grant, role, media } = options;
  if (!(typeof grant === 'function' || (typeof grant === 'string' && grant !== ''))) {
    throw new TypeError('`grant` must be a stream grant or a function giving one');
  }
  if (role !== undefined && role !== 'presenter' && role !== 'viewer') {
    throw new TypeError("`role` must be 'presenter' or 'viewer'");
  }
  if (media !== undefined && (typeof media !== 'object' || media === null)) {
    throw new TypeError('`media` must be a MediaStream or MediaStreamConstraints');
  }
}
