import type { Logger } from 'pino';
import { nodeOfPage } from '../engines/node-id.js';
import type { Broker } from '../engines/types.js';
import type { Page } from './hub.js';
import type { NodeChannel } from './node-channel.js';
import { frameString } from './ws-frame.js';

/** Takes a feature's message to this node: the app and the message's JSON text. */
export type ServiceMessageHandler = (app: string, data: string) => void;

export interface PageSignalsDeps {
  node: string;
  broker: Broker;
  /** Where page frames and services' messages for this node arrive. */
  channel: NodeChannel;
  log: Logger;
  now: () => number;
  /** The open page of this id on this node. */
  page: (id: string) => Page | undefined;
}

/**
 * Frames of the page protocol for pages wherever they are: to one page (on this node at once, else
 * through its node's channel) or to every open page of a user (through the user's topic, which the
 * hub fans out). Calls, groups and streams signal through here; what they send is theirs.
 */
export class PageSignals {
  readonly #deps: PageSignalsDeps;
  readonly #services = new Map<string, ServiceMessageHandler>();

  constructor(deps: PageSignalsDeps) {
    this.#deps = deps;
    deps.channel.on('page.frame', (message) => this.#deps.page(message.page)?.deliver(frameString(message.frame)));
    deps.channel.on('service', (message, app) => this.#serviceMessage(message.service, app, message.data));
  }

  /** A frame for one page; a page that is gone by then misses it. Rejects with a StoreError when it could not be sent. */
  async toPage(app: string, page: string, frame: object): Promise<void> {
    const text = JSON.stringify(frame);
    const node = nodeOfPage(page);
    if (node === this.#deps.node) {
      this.#deps.page(page)?.deliver(frameString(text));
      return;
    }
    const message = { type: 'page.frame', page, frame: text } as const;
    await this.#deps.broker.publish([{ kind: 'node', node, app, message }], this.#deps.now());
  }

  /** A frame for every open page of a user, on every node, but `except`. Rejects with a StoreError when it could not be sent. */
  async toUser(app: string, user: string, frame: object, except?: string): Promise<void> {
    const outgoing = { kind: 'user.frame', app, user, frame: JSON.stringify(frame) } as const;
    await this.#deps.broker.publish([except === undefined ? outgoing : { ...outgoing, except }], this.#deps.now());
  }

  /**
   * Handles messages of one service sent to this node with `toNode` (a stream's viewer signals go to
   * the node that runs its forwarding unit). The handler gets the message's JSON text.
   */
  onNodeMessage(service: string, handler: ServiceMessageHandler): void {
    this.#services.set(service, handler);
  }

  /** A message for a feature's service on one node. Rejects with a StoreError when it could not be sent. */
  async toNode(app: string, node: string, service: string, message: object): Promise<void> {
    const data = JSON.stringify(message);
    if (node === this.#deps.node) {
      this.#serviceMessage(service, app, data);
      return;
    }
    await this.#deps.broker.publish(
      [{ kind: 'node', node, app, message: { type: 'service', service, data } }],
      this.#deps.now(),
    );
  }

  #serviceMessage(service: string, app: string, data: string): void {
    const handler = this.#services.get(service);
    if (!handler) return;
    try {
      handler(app, data);
    } catch (error) {
      this.#deps.log.error({ err: error, service }, 'a node message handler failed');
    }
  }
}
