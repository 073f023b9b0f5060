/**
 * A store could not keep what it was given. Engines throw this (wrapping their own errors) so the
 * API and the gateway answer one way for every engine: `full` when the store is out of space,
 * `unavailable` for any other store failure. The message is one line a client may see; the
 * engine's own error is the cause, for the log.
 */
export type StoreErrorKind = 'full' | 'unavailable';

const MESSAGES: Record<StoreErrorKind, string> = {
  full: "the service's storage is full: nothing was stored or delivered",
  unavailable: 'the service could not store this: nothing was stored or delivered',
};

export class StoreError extends Error {
  readonly kind: StoreErrorKind;

  constructor(kind: StoreErrorKind, options?: { cause?: unknown; message?: string }) {
    super(options?.message ?? MESSAGES[kind], options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StoreError';
    this.kind = kind;
  }

  /** The error code clients get (the API's catalogue and the page protocol's). */
  get code(): 'storage_full' | 'unavailable' {
    return this.kind === 'full' ? 'storage_full' : 'unavailable';
  }
}
