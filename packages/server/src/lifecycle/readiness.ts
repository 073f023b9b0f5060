import type { Component } from './component.js';

/**
 * Whether the server is draining, as /ready tells a load balancer. Started last and so stopped
 * first: /ready answers 503 for `shutdownDelayMs`, and the balancer stops sending new pages here
 * before they are closed.
 */
export class Readiness implements Component {
  readonly name = 'readiness';
  readonly #shutdownDelayMs: number | undefined;
  #draining = false;

  constructor(shutdownDelayMs: number | undefined) {
    this.#shutdownDelayMs = shutdownDelayMs;
  }

  get draining(): boolean {
    return this.#draining;
  }

  start(): void {}

  async stop(): Promise<void> {
    this.#draining = true;
    if (this.#shutdownDelayMs) await new Promise((resolve) => setTimeout(resolve, this.#shutdownDelayMs));
  }
}
