import { createSocket, type Socket } from 'node:dgram';
import { describe, expect, it } from 'vitest';
import { heldNow, openedSince } from './proc-sockets.js';

const bound = async (): Promise<Socket> => {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return socket;
};
const closed = (socket: Socket) => new Promise<void>((resolve) => socket.close(resolve));

describe('what the process opened since a snapshot', () => {
  it('names a socket left open even when another one closed meanwhile (the counts are equal)', async () => {
    const earlier = await bound();
    const start = heldNow();
    const leaked = await bound();
    await closed(earlier);
    try {
      const now = heldNow();
      expect(now.sockets.size).toBe(start.sockets.size);
      expect(now.udpPorts).toHaveLength(start.udpPorts.length);
      const opened = openedSince(start);
      expect(opened.udpPorts).toStrictEqual([leaked.address().port]);
      expect(opened.sockets).toHaveLength(1);
    } finally {
      await closed(leaked);
    }
    expect(openedSince(start)).toStrictEqual({ sockets: [], udpPorts: [] });
  });
});
