// Copied into the scratch project of test/packed-install.test.ts and type-checked there as a page's
// TypeScript would be (a bundler's resolution, the DOM and no Node types, the packages' own
// declarations checked too): the browser SDK's types need nothing of Node.
import { connect, type Room } from '@realtime/browser';

const client = connect({ url: 'http://127.0.0.1:4000', site: 'shop', identity: async () => 'token' });
export const room: Room = client.join('lobby', { token: async () => 'token' });
room.on('chat', (data: unknown, { from }) => console.log(from, data));
// @ts-expect-error: send takes the event's name first
void room.send();
