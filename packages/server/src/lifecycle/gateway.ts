import type { Broker } from '../engines/types.js';
import type { Gateway } from '../gateway/gateway.js';
import type { Logger } from '../log.js';
import type { Component } from './component.js';

/**
 * The page gateway, made when it starts (its sweeps and heartbeats run from then) and stopped by
 * closing every page with 4100, told to reconnect (to another node, or to this one once it is back).
 */
export class GatewayComponent implements Component {
  readonly name = 'gateway';
  readonly #make: () => Gateway;
  #gateway: Gateway | undefined;

  constructor(make: () => Gateway) {
    this.#make = make;
  }

  /** The gateway once started; kept after it stopped (it has no pages then). */
  get current(): Gateway | undefined {
    return this.#gateway;
  }

  start(): void {
    this.#gateway = this.#make();
  }

  async stop(): Promise<void> {
    await this.#gateway?.close();
  }
}

/**
 * Publications lost while the subscriber connection was down: pages resume from history (or learn
 * of the gap from `truncated`) by reconnecting.
 */
export function gapListener(
  broker: Broker,
  log: Logger,
  reconnect: { all(): void; topics(topics: readonly string[]): number },
): Component {
  let stopGapListener: (() => void) | undefined;
  return {
    name: 'gap listener',
    start: () => {
      stopGapListener = broker.onGap?.((topics) => {
        if (topics === undefined) {
          log.warn('publications may have been missed while the broker was disconnected: pages reconnect to resume');
          reconnect.all();
          return;
        }
        // One shard: only its rooms' and users' pages resume. A node's own channel (asks' answers,
        // page signals) is not history: what it missed is told by the asks' and calls' own timeouts.
        const pages = reconnect.topics(topics);
        log.warn({ topics: topics.length, pages }, 'a Redis shard dropped: the pages of its rooms and users resume');
      });
    },
    stop: () => stopGapListener?.(),
  };
}
