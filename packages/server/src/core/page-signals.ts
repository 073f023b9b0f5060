import type { Logger } from 'pino';
import { nodeOfPage } from '../engines/node-id.js';
import { type Broker, topicOf, type Unsubscribe } from '../engines/types.js';
import type { Page } from './hub.js';
import { frameString } from './ws-frame.js';

/** The event name of a page frame in a publication: `data` is the whole frame, handed on as is. */
export const PAGE_FRAME = '$frame';

/** The event name prefix of a message for a node's feature service (see `toNode`). */
const NODE_MESSAGE = '$node.';

export type NodeMessageHandler = (app: string, data: string) => void;

export interface PageSignalsDeps {
  node: string;
  broker: Broker;
  log: Logger;
  now: () => number;
  /** The open page of this id on this node. */
  page: (id: string) => Page | undefined;
}

/**
 * Frames of the page protocol for pages wherever they are: to one page (on this node at once, else
 * through its node's topic) or to every open page of a user (through the user's topic, which the
 * hub fans out). Calls, groups and streams signal through here; what they send is theirs.
 */
export class PageSignals {
  readonly #deps: PageSignalsDeps;
  readonly #nodeHandlers = new Map<string, NodeMessageHandler>();
  #unsubscribe: Unsubscribe | undefined;

  constructor(deps: PageSignalsDeps) {
    this.#deps = deps;
  }

  /** Listens for page frames sent to this node's pages; resolves once the subscription is in effect. */
  async start(): Promise<void> {
    this.#unsubscribe = await this.#deps.broker.subscribe(topicOf('', { node: this.#deps.node }), (publication) => {
      if (publication.event !== PAGE_FRAME) {
        this.#nodeMessage(publication.event, publication.app, publication.data);
        return;
      }
      if (publication.page === undefined) return;
      this.#deps.page(publication.page)?.deliver(frameString(publication.data));
    });
  }

  /** A frame for one page; a page that is gone by then misses it. Rejects with a StoreError when it could not be sent. */
  async toPage(app: string, page: string, frame: object): Promise<void> {
    const text = JSON.stringify(frame);
    const node = nodeOfPage(page);
    if (node === this.#deps.node) {
      this.#deps.page(page)?.deliver(frameString(text));
      return;
    }
    await this.#deps.broker.publish([{ app, node, page, event: PAGE_FRAME, data: text }], this.#deps.now());
  }

  /** A frame for every open page of a user, on every node, but `except`. Rejects with a StoreError when it could not be sent. */
  async toUser(app: string, user: string, frame: object, except?: string): Promise<void> {
    const outgoing = { app, user, event: PAGE_FRAME, data: JSON.stringify(frame) };
    await this.#deps.broker.publish(
      [except === undefined ? outgoing : { ...outgoing, origin: except }],
      this.#deps.now(),
    );
  }

  /**
   * Handles messages of one kind sent to this node with `toNode` (a stream's viewer signals go to
   * the node that runs its forwarding unit). The handler gets the message's JSON text.
   */
  onNodeMessage(kind: string, handler: NodeMessageHandler): void {
    this.#nodeHandlers.set(NODE_MESSAGE + kind, handler);
  }

  /** A message for a feature's service on one node. Rejects with a StoreError when it could not be sent. */
  async toNode(app: string, node: string, kind: string, message: object): Promise<void> {
    const data = JSON.stringify(message);
    if (node === this.#deps.node) {
      this.#nodeMessage(NODE_MESSAGE + kind, app, data);
      return;
    }
    await this.#deps.broker.publish([{ app, node, event: NODE_MESSAGE + kind, data }], this.#deps.now());
  }

  #nodeMessage(event: string, app: string, data: string): void {
    const handler = this.#nodeHandlers.get(event);
    if (!handler) return;
    try {
      handler(app, data);
    } catch (error) {
      this.#deps.log.error({ err: error, event }, 'a node message handler failed');
    }
  }

  async close(): Promise<void> {
    const stop = this.#unsubscribe;
    this.#unsubscribe = undefined;
    if (stop) await stop();
  }
}
