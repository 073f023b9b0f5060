import type { ConnectionState, RealtimeClient } from '@realtime/browser';
import type { ExternalStore } from './external-store.js';

/** The client's connection state as a store: `client.state`, told by each `$state` change. */
export function connectionStore(client: RealtimeClient): ExternalStore<ConnectionState> {
  return {
    subscribe: (onChange) => client.on('$state', () => onChange()),
    snapshot: () => client.state,
  };
}
