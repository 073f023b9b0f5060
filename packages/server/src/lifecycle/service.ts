import type { Component } from './component.js';

/** What has a `start` and a `close` of its own: the services, the lease, the console tap. */
export interface Service {
  start(): void | Promise<void>;
  close(): void | Promise<void>;
}

/** A service as a component: started by its `start`, stopped by its `close`. */
export function serviceComponent(name: string, service: Service): Component {
  return { name, start: () => service.start(), stop: () => service.close() };
}
