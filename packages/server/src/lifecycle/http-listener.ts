import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Component } from './component.js';

/**
 * The HTTP server's port, as three components, for its start and its stop fall at different places:
 * `listen` opens the port last of all, once everything a request or page needs runs; on stop,
 * `close` stops taking connections once the pages and the node lease are gone, and `drain` waits
 * for the requests in flight after the asks they may wait on were answered, then cuts what is left.
 */
export class HttpListener {
  readonly #server: Server;
  #address: AddressInfo | undefined;
  #drained: Promise<void> = Promise.resolve();

  /** Opens the port; stopped by `close` (the port stays open until the pages are gone). */
  readonly listen: Component;
  /** Stops taking connections and closes the idle ones. */
  readonly close: Component;
  /** Waits (up to `drainMs`) for the requests in flight, then closes every connection left. */
  readonly drain: Component;

  constructor(server: Server, at: { host: string; port: number; drainMs: number }) {
    this.#server = server;
    this.listen = { name: 'http listen', start: () => this.#listen(at.host, at.port), stop: () => {} };
    this.close = { name: 'http close', start: () => {}, stop: () => this.#close() };
    this.drain = { name: 'http drain', start: () => {}, stop: () => this.#drain(at.drainMs) };
  }

  /** Where it listens; only once `listen` started. */
  get address(): AddressInfo {
    if (this.#address === undefined) throw new Error('the server does not listen yet');
    return this.#address;
  }

  async #listen(host: string, port: number): Promise<void> {
    const server = this.#server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.#address = server.address() as AddressInfo;
  }

  #close(): void {
    // A server that never listened answers at once (with an error that says so): nothing to wait for.
    this.#drained = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeIdleConnections();
  }

  async #drain(drainMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.#drained, new Promise((resolve) => (timer = setTimeout(resolve, drainMs)))]);
    clearTimeout(timer);
    this.#server.closeAllConnections();
  }
}
