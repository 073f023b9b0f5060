/**
 * The connection state machine, as a table: for each state, the inputs it accepts and the state
 * each leads to. An input a state does not list is ignored, so a late `welcome` after `close()`
 * (or a second `lost`) cannot resurrect a connection.
 *
 * - `connecting`: the first attempt, from `connect()` to the first `welcome`;
 * - `connected`: welcomed; rooms are joined and frames flow;
 * - `reconnecting`: the socket was lost; waiting out the backoff delay or opening a new socket;
 * - `closed`: final, after `close()` or a close code that says stop.
 *
 * @example
 * if (client.state === 'closed') showReloadButton();
 */
export type ConnectionState = 'connecting' | 'connected' | 'reconnecting' | 'closed';

/** What happens to a connection: the service welcomed it, its socket was lost, or it must stop. */
export type ConnectionInput = 'welcome' | 'lost' | 'stop';

export const TRANSITIONS: Readonly<
  Record<ConnectionState, Readonly<Partial<Record<ConnectionInput, ConnectionState>>>>
> = {
  connecting: { welcome: 'connected', lost: 'reconnecting', stop: 'closed' },
  connected: { lost: 'reconnecting', stop: 'closed' },
  reconnecting: { welcome: 'connected', lost: 'reconnecting', stop: 'closed' },
  closed: {},
};

/** The state after `input`, or undefined when the state does not take that input. */
export function transition(state: ConnectionState, input: ConnectionInput): ConnectionState | undefined {
  return TRANSITIONS[state][input];
}
