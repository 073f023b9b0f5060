import type { Logger } from 'pino';
import {
  BROADCAST_TOPIC,
  type BroadcastMessage,
  type Broker,
  type NodeMessage,
  nodeTopic,
  type Publication,
  type Unsubscribe,
} from '../engines/types.js';

/** The message of one type. */
type NodeMessageOf<T extends NodeMessage['type']> = Extract<NodeMessage, { type: T }>;
type BroadcastMessageOf<T extends BroadcastMessage['type']> = Extract<BroadcastMessage, { type: T }>;

/** Takes a message sent to this node, with the app it is of. */
export type NodeMessageHandler<T extends NodeMessage['type'] = NodeMessage['type']> = (
  message: NodeMessageOf<T>,
  app: string,
) => void;
export type BroadcastHandler<T extends BroadcastMessage['type'] = BroadcastMessage['type']> = (
  message: BroadcastMessageOf<T>,
) => void;

type NodeHandlers = { [T in NodeMessage['type']]?: NodeMessageHandler<T> };
type BroadcastHandlers = { [T in BroadcastMessage['type']]?: BroadcastHandler<T> };

export interface NodeChannelDeps {
  node: string;
  broker: Broker;
  log: Logger;
}

/**
 * This node's messages from the other nodes (and from itself): it subscribes once to the node's
 * topic and once to the topic of every node, and hands each message to the one handler its feature
 * registered for its type (asks their answers, page signals their frames, the console its entries).
 * A message nobody registered for is dropped; a failing handler is logged and the others go on.
 */
export class NodeChannel {
  readonly #deps: NodeChannelDeps;
  readonly #nodeHandlers: NodeHandlers = {};
  readonly #broadcastHandlers: BroadcastHandlers = {};
  readonly #stops: Unsubscribe[] = [];

  constructor(deps: NodeChannelDeps) {
    this.#deps = deps;
  }

  get node(): string {
    return this.#deps.node;
  }

  /** Registers the handler of one type of node message; one per type. */
  on<T extends NodeMessage['type']>(type: T, handler: NodeMessageHandler<T>): void {
    if (this.#nodeHandlers[type] !== undefined) throw new Error(`node messages of type ${type} have a handler already`);
    (this.#nodeHandlers as Record<T, NodeMessageHandler<T>>)[type] = handler;
  }

  /** Registers the handler of one type of message to every node; one per type. */
  onBroadcast<T extends BroadcastMessage['type']>(type: T, handler: BroadcastHandler<T>): void {
    if (this.#broadcastHandlers[type] !== undefined)
      throw new Error(`broadcasts of type ${type} have a handler already`);
    (this.#broadcastHandlers as Record<T, BroadcastHandler<T>>)[type] = handler;
  }

  /** Subscribes; resolves once both subscriptions are in effect (a message sent after that arrives). */
  async start(): Promise<void> {
    const handler = (publication: Publication) => this.receive(publication);
    try {
      this.#stops.push(await this.#deps.broker.subscribe(nodeTopic(this.#deps.node), handler));
      this.#stops.push(await this.#deps.broker.subscribe(BROADCAST_TOPIC, handler));
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /**
   * Hands a publication to its handler: what the subscriptions receive, and what a feature sends to
   * its own node (which goes no further).
   */
  receive(publication: Publication): void {
    try {
      if (publication.kind === 'node') this.#node(publication.message, publication.app);
      else if (publication.kind === 'broadcast') this.#broadcast(publication.message);
    } catch (error) {
      this.#deps.log.error({ err: error, kind: publication.kind }, 'a node message handler failed');
    }
  }

  #node(message: NodeMessage, app: string): void {
    const handlers = this.#nodeHandlers;
    switch (message.type) {
      case 'page.frame':
        handlers['page.frame']?.(message, app);
        break;
      case 'service':
        handlers.service?.(message, app);
        break;
      case 'ask.reply':
        handlers['ask.reply']?.(message, app);
        break;
      case 'ask.decline':
        handlers['ask.decline']?.(message, app);
        break;
      case 'console.entry':
        handlers['console.entry']?.(message, app);
        break;
    }
  }

  #broadcast(message: BroadcastMessage): void {
    const handlers = this.#broadcastHandlers;
    switch (message.type) {
      case 'console.watch':
        handlers['console.watch']?.(message);
        break;
      case 'console.app_gone':
        handlers['console.app_gone']?.(message);
        break;
      case 'tokens.revoked':
        handlers['tokens.revoked']?.(message);
        break;
    }
  }

  /** Stops listening; handlers stay registered (a later start listens again). */
  async close(): Promise<void> {
    for (const stop of this.#stops.splice(0)) {
      try {
        await stop();
      } catch (error) {
        this.#deps.log.warn({ err: error }, 'ending a node channel subscription failed');
      }
    }
  }
}
