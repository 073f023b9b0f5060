/** What React's useSyncExternalStore takes: a subscribe function and a snapshot that stays the same object until it changes. */
export interface ExternalStore<T> {
  subscribe(onChange: () => void): () => void;
  snapshot(): T;
}
