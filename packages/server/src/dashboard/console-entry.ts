/**
 * The live console's entries and filters (docs/dashboard.md, "Live console"). No imports: the
 * dashboard's page reads the same types.
 */

export type ConsoleKind =
  | 'emit'
  | 'send'
  | 'join'
  | 'leave'
  | 'presence'
  | 'ask'
  | 'reply'
  | 'webhook'
  | 'disconnect'
  | 'revoke';

/** One happening as a hot path hands it over: the tap stamps it and cuts its data. */
export interface Tapped {
  kind: ConsoleKind;
  room?: string;
  user?: string;
  event?: string;
  /** JSON text, as sent (sealed values stay sealed). */
  data?: string;
  status?: number;
  error?: string;
}

/** An entry as a console gets it; `dropped` says how many were not shown (a console or a node fell behind). */
export interface ConsoleEntry extends Omit<Tapped, 'kind'> {
  at: number;
  kind: ConsoleKind | 'dropped';
  count?: number;
}

/** A console's filters: each one set must match exactly (an entry without that field does not). */
export interface ConsoleFilter {
  room?: string;
  user?: string;
  event?: string;
}
