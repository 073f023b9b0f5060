/**
 * A part of the running server that is started and stopped: a store, a service, a timer, the HTTP
 * listener. `stop` undoes what `start` did; a part with nothing to undo (or nothing to start) says so
 * with an empty function.
 */
export interface Component {
  /** What it is, for the log and for errors: `engine`, `node lease`, `http listen`. */
  readonly name: string;
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
}

/** Components that all started: `stop` stops them in reverse order, once however often it is called. */
export interface Started {
  stop(): Promise<void>;
}

/** A stop that failed: which component, and its error. */
export type StopFailed = (component: string, error: unknown) => void;

/**
 * Starts the components in order. When one fails to start, those already started are stopped in
 * reverse order and the start's own error is rethrown: a stop that fails then is only reported
 * (`stopFailed`), never hides why the start failed. Stopping goes on past a stop that fails, and
 * rejects with the first failure once every component had its turn.
 */
export async function startAll(components: readonly Component[], stopFailed: StopFailed = () => {}): Promise<Started> {
  const started: Component[] = [];
  try {
    for (const component of components) {
      await component.start();
      started.push(component);
    }
  } catch (error) {
    await stopInReverse(started, stopFailed);
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    stop: () => {
      stopping ??= stopInReverse(started, stopFailed).then((failures) => {
        if (failures.length > 0) throw failures[0];
      });
      return stopping;
    },
  };
}

/** Stops each component, last started first; returns the errors of those that failed to stop. */
async function stopInReverse(started: readonly Component[], stopFailed: StopFailed): Promise<unknown[]> {
  const failures: unknown[] = [];
  for (const component of [...started].reverse()) {
    try {
      await component.stop();
    } catch (error) {
      failures.push(error);
      stopFailed(component.name, error);
    }
  }
  return failures;
}
