import { createElement as h } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { withFakeService } from '../test/fake-clients.js';
import { RealtimeProvider, useConnectionState, useMembers, useRealtime, useRoom } from './index.js';

const { open } = withFakeService();

function Lobby({ name }: { name: string | null }) {
  const { room, status } = useRoom(name, { token: 't' });
  const members = useMembers(room);
  return h('p', null, `${useConnectionState()} ${status} ${room === undefined} ${members.length}`);
}

/** The first render, as on a server: the hooks answer without joining (effects do not run there). */
describe('the hooks rendered without a browser', () => {
  it('answer the client’s state, a room still joining (idle without a name) and no members', () => {
    const client = open();
    const html = renderToString(h(RealtimeProvider, { client }, h(Lobby, { name: 'lobby' }), h(Lobby, { name: null })));
    expect(html).toBe('<p>connecting joining true 0</p><p>connecting idle true 0</p>');
    expect(client.room('lobby')).toBeUndefined();
  });

  it('throw without a provider, naming it', () => {
    const Bare = () => h('p', null, String(useRealtime().state));
    expect(() => renderToString(h(Bare))).toThrow(/RealtimeProvider/);
  });
});
