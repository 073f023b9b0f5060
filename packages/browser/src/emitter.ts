/** A listener of any arity; the typed `on` overloads of the client and the room give it its real shape. */
// biome-ignore lint/suspicious/noExplicitAny: listeners are stored untyped; the public overloads type them.
export type AnyListener = (...args: any[]) => unknown;

/**
 * A minimal synchronous event emitter. A listener that throws does not stop the others nor the SDK:
 * its error is re-thrown in a microtask, so it still reaches the page's error reporting.
 */
export class Emitter {
  readonly #listeners = new Map<string, Set<AnyListener>>();

  /** Adds a listener; returns a function that removes it. Adding the same function twice has no effect. */
  on(name: string, listener: AnyListener): () => void {
    if (typeof listener !== 'function') throw new TypeError('a listener must be a function');
    let set = this.#listeners.get(name);
    if (!set) {
      set = new Set();
      this.#listeners.set(name, set);
    }
    set.add(listener);
    return () => this.off(name, listener);
  }

  off(name: string, listener: AnyListener): void {
    const set = this.#listeners.get(name);
    if (!set) return;
    set.delete(listener);
    if (set.size === 0) this.#listeners.delete(name);
  }

  /** Calls the listeners of `name` in the order they were added; returns how many there were. */
  emit(name: string, ...args: unknown[]): number {
    const set = this.#listeners.get(name);
    if (!set) return 0;
    // A copy: listeners may add or remove listeners while they run.
    for (const listener of [...set]) {
      try {
        listener(...args);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    return set.size;
  }

  clear(): void {
    this.#listeners.clear();
  }
}
