import type { ConnectionState } from '@realtime/browser';
import { useMemo, useSyncExternalStore } from 'react';
import { connectionStore } from './connection-store.js';
import { useRealtime } from './context.js';

/**
 * The client's connection state (`connecting`, `connected`, `reconnecting`, `closed`), rendering
 * again on each change.
 *
 * @example
 * function Badge() {
 *   const state = useConnectionState();
 *   return state === 'connected' ? null : <p role="status">{state}…</p>;
 * }
 */
export function useConnectionState(): ConnectionState {
  const client = useRealtime();
  const store = useMemo(() => connectionStore(client), [client]);
  return useSyncExternalStore(store.subscribe, store.snapshot, store.snapshot);
}
