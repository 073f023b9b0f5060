/** Ports for tests that give the service a media port range (`--media-ports`). */
import { createSocket } from 'node:dgram';

/** Whether a UDP port on 127.0.0.1 can be bound now. */
function free(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = createSocket('udp4');
    socket.once('error', () => resolve(false));
    socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
  });
}

/** `count` neighbouring UDP ports on 127.0.0.1 that are free now (another process may take one later). */
export async function freeRange(count: number): Promise<[number, number]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = 42_000 + Math.floor(Math.random() * 8000);
    let all = true;
    for (let port = first; port < first + count && all; port++) all = await free(port);
    if (all) return [first, first + count - 1];
  }
  throw new Error(`no ${count} free neighbouring UDP ports found`);
}
