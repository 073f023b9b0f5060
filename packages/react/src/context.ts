import type { RealtimeClient } from '@realtime/browser';
import { createContext, createElement, type ReactElement, type ReactNode, useContext } from 'react';

const RealtimeContext = createContext<RealtimeClient | null>(null);
RealtimeContext.displayName = 'Realtime';

/** Props of {@link RealtimeProvider}. */
export interface RealtimeProviderProps {
  /** The client from `connect` of `@realtime/browser`; the app owns it (the provider never closes it). */
  client: RealtimeClient;
  children?: ReactNode;
}

/**
 * Gives the components under it the client, for {@link useRealtime} and the other hooks. Make the
 * client once, outside the component tree (or in a module), so a re-render never opens a new socket.
 *
 * @example
 * const client = connect({ url: 'https://rt.example.com', site: 'app1', identity: () => fetchIdentity() });
 * createRoot(el).render(<RealtimeProvider client={client}><App /></RealtimeProvider>);
 */
export function RealtimeProvider({ client, children }: RealtimeProviderProps): ReactElement {
  return createElement(RealtimeContext.Provider, { value: client }, children);
}

/**
 * The client of the nearest {@link RealtimeProvider}. Throws when there is none: a hook of this
 * package outside a provider is a mistake in the tree, better told at once than as a page that
 * never connects.
 *
 * @example
 * const client = useRealtime();
 * client.on('notice', (data) => toast(data));
 */
export function useRealtime(): RealtimeClient {
  const client = useContext(RealtimeContext);
  if (!client)
    throw new Error('useRealtime and the @realtime/react hooks need a <RealtimeProvider client={...}> above');
  return client;
}
