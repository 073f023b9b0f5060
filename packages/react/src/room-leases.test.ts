import type { RealtimeClient } from '@realtime/browser';
import { describe, expect, it } from 'vitest';
import { answerJoin, until, withFakeService } from '../test/fake-clients.js';
import { holdRoom, type RoomLease } from './room-leases.js';

const { service, open } = withFakeService();

const connected = (client: RealtimeClient) =>
  until(
    (onChange) => client.on('$state', onChange),
    () => client.state === 'connected',
    'connected',
  );
const statusOf = (lease: RoomLease, status: string) =>
  until(
    (onChange) => lease.subscribe(onChange),
    () => lease.state().status === status,
    `the room ${status}`,
  );
/** Lets a released lease's leave (a microtask away) happen. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('holdRoom', () => {
  it('shares one join between two holds and leaves once the last lets go', async () => {
    const client = open();
    const page = await service().acceptWelcomed();
    const first = holdRoom(client, 'lobby', { token: 't1' });
    const second = holdRoom(client, 'lobby', { token: 't2' });
    expect(second.room).toBe(first.room);
    // One join, with the newest holder's token (the token is read when the join is written).
    expect(await answerJoin(page)).toMatchObject({ room: 'lobby', token: 't2' });
    await statusOf(first, 'joined');

    first.release();
    first.release(); // twice is once
    await nextTurn();
    expect(first.room.status).toBe('joined');
    second.release();
    const leave = await page.next('leave');
    expect(leave.room).toBe('lobby');
    expect(client.room('lobby')).toBeUndefined();
    expect(page.received.filter((frame) => frame.t === 'join')).toHaveLength(1);
  });

  it('keeps the room joined when it is let go and held again within the turn (StrictMode, a remount)', async () => {
    const client = open();
    const page = await service().acceptWelcomed();
    const first = holdRoom(client, 'lobby', { token: 't' });
    await answerJoin(page);
    await statusOf(first, 'joined');
    first.release();
    const again = holdRoom(client, 'lobby', { token: 't' });
    expect(again.room).toBe(first.room);
    await nextTurn();
    // Frames go out in order: the next one is this join, so no leave (nor join of lobby) came before it.
    holdRoom(client, 'other', { token: 't' });
    expect(await page.next('join')).toMatchObject({ room: 'other' });
    expect(again.state().status).toBe('joined');
  });

  it('re-joins after a reconnect with the newest holder’s token, and tells each status on the way', async () => {
    const client = open();
    const page = await service().acceptWelcomed();
    let calls = 0;
    const first = holdRoom(client, 'lobby', { token: () => `old-${++calls}` });
    await answerJoin(page);
    await statusOf(first, 'joined');
    const joined = first.state();
    expect(joined).toEqual({ status: 'joined', error: undefined });
    const second = holdRoom(client, 'lobby', { token: async () => 'new' });
    expect(first.state()).toBe(joined); // the same object while nothing changed

    page.close(4100);
    await statusOf(first, 'joining');
    const next = await service().acceptWelcomed();
    expect(await answerJoin(next)).toMatchObject({ token: 'new' });
    await statusOf(second, 'joined');
    second.release();
    // The newest holder let go: the one still holding gives the token again.
    next.close(4100);
    const third = await service().acceptWelcomed();
    expect(await answerJoin(third)).toMatchObject({ token: 'old-2' });
    await statusOf(first, 'joined');
  });

  it('says failed with the service’s refusal, and clears it when the room joins again', async () => {
    const client = open();
    const page = await service().acceptWelcomed();
    const lease = holdRoom(client, 'vip', { token: 'bad' });
    const join = await page.next('join');
    page.send({ t: 'error', ref: join.ref, room: 'vip', code: 'not_allowed', message: 'no' });
    await statusOf(lease, 'failed');
    expect(lease.state().error?.code).toBe('not_allowed');
    page.close(4100);
    await answerJoin(await service().acceptWelcomed());
    await statusOf(lease, 'joined');
    expect(lease.state().error).toBeUndefined();
  });

  it('uses a room the app joined itself and never leaves it', async () => {
    const client = open();
    const page = await service().acceptWelcomed();
    const own = client.join('lobby', { token: 't' });
    await answerJoin(page);
    const lease = holdRoom(client, 'lobby', { token: 'other' });
    expect(lease.room).toBe(own);
    await statusOf(lease, 'joined');
    lease.release();
    await nextTurn();
    expect(own.status).toBe('joined');
    holdRoom(client, 'next', { token: 't' });
    expect(await page.next('join')).toMatchObject({ room: 'next' });
  });

  it('says left when the client closes, and a later hold joins anew', async () => {
    const client = open();
    const page = await service().acceptWelcomed();
    await connected(client);
    const lease = holdRoom(client, 'lobby', { token: 't' });
    await answerJoin(page);
    await statusOf(lease, 'joined');
    client.close();
    await statusOf(lease, 'left');
    const later = holdRoom(client, 'lobby', { token: 't' });
    expect(later.room).not.toBe(lease.room);
    expect(later.state().status).toBe('left');
    lease.release();
    later.release();
  });
});
