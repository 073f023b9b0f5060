import { CLOSE } from '@realtime/protocol';
import { describe, expect, it } from 'vitest';
import { ManualClock, once, stateOf, useFakeService } from '../../test/fake-service.js';
import type { StateChange } from '../index.js';

const { service, open } = useFakeService();

describe('closes the app server asks for', () => {
  it('4004 (disconnected): closed for good, the code seen by $state, no reconnect and no timer left', async () => {
    const clock = new ManualClock();
    const client = open({ identity: () => 'fresh', now: () => clock.now(), timers: clock });
    const page = await service().acceptWelcomed();
    await stateOf(client, 'connected');
    const change = once<StateChange>((resolve) => client.on('$state', resolve));
    page.close(CLOSE.disconnected, "disconnected by the app's server");
    expect(await change).toMatchObject({
      state: 'closed',
      previous: 'connected',
      code: 4004,
      reason: "disconnected by the app's server",
    });
    expect(clock.pendingTimers).toBe(0);
    clock.advance(120_000);
    expect(service().pages).toHaveLength(1);
  });

  it('4005 (tokens revoked) with an identity function: waits the hinted delay, then fetches a fresh identity', async () => {
    const clock = new ManualClock();
    const identities = ['old', 'new'];
    const client = open({ identity: () => identities.shift(), now: () => clock.now(), timers: clock });
    const first = await service().accept();
    expect((await first.welcome({ user: 'alice' })).identity).toBe('old');
    await stateOf(client, 'connected');
    const change = once<StateChange>((resolve) => client.on('$state', resolve));
    first.close(CLOSE.tokenRevoked, 'tokens revoked: fetch fresh ones; reconnect in 1234 ms');
    expect(await change).toMatchObject({ state: 'reconnecting', code: 4005, retryIn: 1234 });
    clock.advance(1234);
    const second = await service().accept();
    expect((await second.welcome({ user: 'alice' })).identity).toBe('new');
    await stateOf(client, 'connected');
  });

  it('4005 on an anonymous page reconnects (its room tokens are fetched again at the re-join)', async () => {
    const clock = new ManualClock();
    let fetched = 0;
    const client = open({ now: () => clock.now(), timers: clock });
    client.join('lobby', { token: () => `room-token-${++fetched}` });
    const first = await service().acceptWelcomed();
    expect((await first.next('join')).token).toBe('room-token-1');
    first.close(CLOSE.tokenRevoked, 'tokens revoked: fetch fresh ones; reconnect in 10 ms');
    await stateOf(client, 'reconnecting');
    clock.advance(10);
    const second = await service().acceptWelcomed();
    expect((await second.next('join')).token).toBe('room-token-2');
  });

  it('4005 with a fixed identity string: closed, as a fixed token would only be refused again', async () => {
    const client = open({ identity: 'fixed' });
    const page = await service().acceptWelcomed();
    await stateOf(client, 'connected');
    const change = once<StateChange>((resolve) => client.on('$state', resolve));
    page.close(CLOSE.tokenRevoked, 'tokens revoked: fetch fresh ones');
    expect(await change).toMatchObject({ state: 'closed', code: 4005 });
  });
});
