// Copied into the scratch project of test/packed-install.test.ts and type-checked there as a Node
// program's TypeScript would be (NodeNext, strict): every package's `exports` give it types. A
// package without types would make each import an error (implicit any) and the @ts-expect-error
// below unused, which fails too.
import { connect, type RealtimeClient } from '@realtime/browser';
import { type EventIds, Realtime } from '@realtime/node';
import { API_BASE, deriveKey, sign } from '@realtime/protocol';
import { type RunningServer, startServer } from '@realtime/server';

const realtime = new Realtime({ url: 'http://127.0.0.1:4000', key: 'shop', secret: 'a-secret-of-16-chars' });
export const ids: Promise<EventIds> = realtime.emit({ rooms: ['lobby'], event: 'chat', data: { text: 'hi' } });
export const client: RealtimeClient = connect({ url: 'http://127.0.0.1:4000', site: 'shop' });
export const signature: string = sign({
  key: deriveKey('a-secret-of-16-chars', 'publish'),
  timestamp: '1700000000',
  method: 'GET',
  path: `${API_BASE}/online?ids=ann`,
  body: '',
});
export const server: Promise<RunningServer> = startServer({ dataDir: './data', port: 0 });
// @ts-expect-error: url is a string
connect({ url: 4000, site: 'shop' });
