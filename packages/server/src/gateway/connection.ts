import type { Socket } from 'node:net';
import type { Member } from '@realtime/protocol';
import type WebSocket from 'ws';
import type { AskTarget } from '../asks/ask-service.js';
import { type Frame, frameJson, frameString } from '../core/ws-frame.js';
import type { App } from '../engines/types.js';
import type { Membership, RoomPage } from '../rooms/room-page.js';
import { Outbox, type Traffic } from './outbox.js';

export type ConnectionState = 'greeting' | 'open' | 'closed';

/** Default stall time of a replay: a page that reads at all drains half its queue well within it. */
export const DEFAULT_STALL_MS = 10_000;
const lastAsk: { id: string; frame: Buffer } = { id: '', frame: Buffer.alloc(0) };

/** One page's WebSocket: its identity, rooms, pending asks, outgoing queue and frame budget. */
export class Connection implements RoomPage, AskTarget {
  readonly id: string;
  /** The page's app, refreshed from the store on joins and sends. */
  app: App;
  readonly ws: WebSocket;
  state: ConnectionState = 'greeting';
  /** A hello frame has come (it may still be being checked). */
  greeted = false;
  user: string | null = null;
  info: Member['info'];
  /** When the page's identity counts as issued (ms, users/token-revocations.ts); undefined without one. */
  issued: number | undefined;
  readonly rooms = new Map<string, Membership>();
  /** Asks sent to this page and not answered yet. */
  readonly asks = new Set<string>();
  lastSeen: number;
  readonly openedAt: number;
  /** Frames the page may still send now (token bucket, refilled by the gateway). */
  budget: number;
  budgetAt: number;
  readonly replayLimit: number;
  /** How long a replay waits for the page to read before closing it as a slow consumer. */
  readonly #stallMs: number;
  readonly #outbox: Outbox;
  #work: Promise<void> = Promise.resolve();

  constructor(
    ws: WebSocket,
    socket: Socket,
    app: App,
    options: { id: string; outboxBytes: number; budget: number; now: number; traffic: Traffic; stallMs?: number },
  ) {
    this.id = options.id;
    this.ws = ws;
    this.app = app;
    this.lastSeen = options.now;
    this.openedAt = options.now;
    this.budget = options.budget;
    this.budgetAt = options.now;
    this.replayLimit = options.outboxBytes;
    this.#stallMs = options.stallMs ?? DEFAULT_STALL_MS;
    this.#outbox = new Outbox(socket, options.outboxBytes, () => this.onSlow(), options.traffic);
  }

  /** Set by the gateway: what to do when the page cannot keep up. */
  onSlow: () => void = () => {};

  deliver(frame: Frame): void {
    this.#outbox.write(frame);
  }

  /**
   * Waits while the page has more than half its queue waiting (a replay paces itself this way). A page
   * that does not read it down below that mark within the stall time is closed as a slow consumer
   * (4200), like one whose queue overflows: a page that never reads holds no replay open.
   */
  async paced(): Promise<void> {
    if (!this.#outbox.full) return;
    const deadline = Date.now() + this.#stallMs;
    while (this.#outbox.full && this.state !== 'closed') {
      const left = deadline - Date.now();
      if (left <= 0) {
        this.slow();
        return;
      }
      await this.#outbox.drained(left);
    }
  }

  send(value: object): void {
    this.#outbox.write(frameJson(value));
  }

  ask(askId: string, event: string, data: string): void {
    this.asks.add(askId);
    // Every page of the user gets the same frame: encoded once per ask, not once per page.
    if (lastAsk.id !== askId) {
      lastAsk.id = askId;
      lastAsk.frame = frameString(`{"t":"ask","ask":"${askId}","event":${JSON.stringify(event)},"data":${data}}`);
    }
    this.#outbox.write(lastAsk.frame);
  }

  /** Runs frame handlers one after another, so an async join finishes before the next frame is handled. */
  queue(work: () => Promise<void> | void): void {
    this.#work = this.#work.then(work);
  }

  /** The hub found the page's held-back frames (during a replay) over its bound. */
  slow(): void {
    this.onSlow();
  }

  close(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.#outbox.close();
    try {
      this.ws.close(code, closeReason(reason));
    } catch {
      // Never leave a page open because its close could not be sent.
      this.ws.terminate();
    }
  }
}

/** A close reason fits in 123 bytes of UTF-8 (RFC 6455 section 5.5); longer ones are cut. */
export function closeReason(reason: string): string {
  const bytes = Buffer.from(reason);
  if (bytes.length <= 123) return reason;
  // Cutting may split a character: the decoder's replacement mark is 3 bytes, so leave room for it.
  return bytes
    .subarray(0, 120)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}
