import type { App, Engine } from '../engines/types.js';
import type { Logger } from '../log.js';
import type { Component } from './component.js';

/** The engine, opened before the server is wired: closed last of all. */
export function engineComponent(engine: Engine): Component {
  return { name: 'engine', start: () => {}, stop: () => engine.close() };
}

/** The configured apps, stored before anything serves (a store that refuses them fails the start). */
export function configuredApps(engine: Engine, apps: readonly App[]): Component {
  return {
    name: 'configured apps',
    start: async () => {
      for (const app of apps) await engine.apps.upsert(app);
    },
    stop: () => {},
  };
}

/** A Redis that lost its data gets the configured apps back before it serves again. */
export function dataLossRepair(engine: Engine, apps: readonly App[], log: Logger): Component {
  let stopRepair: (() => void) | undefined;
  return {
    name: 'data-loss repair',
    start: () => {
      stopRepair = engine.onDataLost?.(async () => {
        for (const app of apps) await engine.apps.upsert(app);
        log.warn('the storage lost its data: the configured apps were stored again');
      });
    },
    stop: () => stopRepair?.(),
  };
}
