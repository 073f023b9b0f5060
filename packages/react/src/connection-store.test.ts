import type { ConnectionState } from '@realtime/browser';
import { describe, expect, it } from 'vitest';
import { withFakeService } from '../test/fake-clients.js';
import { connectionStore } from './connection-store.js';

const { service, open } = withFakeService();

describe('connectionStore', () => {
  it('tells each state change and reads the client’s state', async () => {
    const client = open();
    const store = connectionStore(client);
    const seen: ConnectionState[] = [store.snapshot()];
    const off = store.subscribe(() => seen.push(store.snapshot()));
    const page = await service().acceptWelcomed();
    const waitFor = (state: ConnectionState) =>
      new Promise<void>((resolve) => {
        const stop = client.on('$state', (change) => {
          if (change.state !== state) return;
          stop();
          resolve();
        });
      });
    await waitFor('connected');
    page.close(4100);
    await service().acceptWelcomed();
    await waitFor('connected');
    off();
    client.close();
    expect(seen).toEqual(['connecting', 'connected', 'reconnecting', 'connected']);
    expect(store.snapshot()).toBe('closed');
  });
});
