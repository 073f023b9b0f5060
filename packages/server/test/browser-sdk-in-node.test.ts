/**
 * The browser SDK as a Node program gets it (the package's `node` export, packages/browser/node.js,
 * over the built dist): `connect` needs no `WebSocket` option, on a Node without a global WebSocket
 * it takes the ws package's. Joins a room and receives an emit from the real service.
 */
import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The file Node resolves for `import '@realtime/browser'` (exports: node), not the tests' source alias.
import * as sdkInNode from '../../browser/node.js';
import { startTestServer, type TestServer } from './helpers.js';

type Sdk = typeof import('@realtime/browser');
const { connect } = sdkInNode as unknown as Sdk;

describe('the browser SDK in Node, with no WebSocket given', () => {
  let server: TestServer;
  let sdk: Realtime;
  beforeAll(async () => {
    server = await startTestServer();
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });
  afterAll(async () => {
    await sdk.close();
    await server.close();
  });

  it('connects, joins and receives an emit (ws standing in for the WebSocket Node lacks)', async () => {
    const nodeHasWebSocket = typeof (globalThis as { WebSocket?: unknown }).WebSocket === 'function';
    // Node 20 has none: this run shows the fallback (on Node 22 and later, Node's own is used).
    if (process.versions.node.startsWith('20.')) expect(nodeHasWebSocket).toBe(false);
    const client = connect({ url: server.url, site: server.app.key, identity: await sdk.identityToken('ann') });
    try {
      const room = client.join('lobby', { token: () => sdk.roomToken('lobby') });
      await room.joined;
      const got = new Promise<unknown>((resolve) => room.on('hello', (data) => resolve(data)));
      await sdk.emit({ rooms: ['lobby'], event: 'hello', data: { text: 'hi' } });
      expect(await got).toEqual({ text: 'hi' });
    } finally {
      client.close();
    }
  });
});
