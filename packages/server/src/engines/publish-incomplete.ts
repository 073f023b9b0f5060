import { StoreError, type StoreErrorKind } from './store-error.js';

/**
 * Broker.publish on a sharded store (Redis Cluster: one step per room) when some steps failed: the
 * events of the rooms (and users) that took it were stored and published, with their ids, and
 * nothing of the others was. The caller may publish `failed` again: they were not delivered.
 */
export class PublishIncomplete extends StoreError {
  /** Each event's id, in the order given; undefined for an event not published (or without id). */
  readonly ids: readonly (string | undefined)[];
  /** Indexes of the events not published, in the order given. */
  readonly failed: readonly number[];

  constructor(
    kind: StoreErrorKind,
    ids: readonly (string | undefined)[],
    failed: readonly number[],
    options?: { cause?: unknown },
  ) {
    super(kind, {
      ...options,
      message: `the service could not store part of this: ${failed.length} of ${ids.length} not delivered`,
    });
    this.name = 'PublishIncomplete';
    this.ids = ids;
    this.failed = failed;
  }
}
