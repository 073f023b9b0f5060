import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '@realtime/node';
import { helloPage } from './pages.js';

export type ReceiverMode = 'ok' | 'fail' | 'hang' | 'drop';

export interface ReceivedBatch {
  id: string | undefined;
  events: Record<string, unknown>[];
  at: number;
}

/** A customer's webhook endpoint on 127.0.0.1: verifies with @realtime/node and records what came. */
export interface Receiver {
  url: string;
  mode: ReceiverMode;
  batches: ReceivedBatch[];
  /** Requests refused for a bad signature. */
  refused: number;
  /** Every request, taken or not. */
  requests: number;
  events(type?: string): Record<string, unknown>[];
  waitFor(test: () => boolean, what: string, ms?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(
  app: { key: string; secret: string },
  path = '/hooks/realtime?x=1',
): Promise<Receiver> {
  const hung: ServerResponse[] = [];
  const receiver: Receiver = {
    url: '',
    mode: 'ok',
    batches: [],
    refused: 0,
    requests: 0,
    events: (type) => receiver.batches.flatMap((b) => b.events).filter((e) => type === undefined || e.type === type),
    async waitFor(test, what, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (!test()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: async () => {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      receiver.requests++;
      if (receiver.mode === 'drop') {
        req.socket.destroy();
        return;
      }
      if (receiver.mode === 'hang') {
        hung.push(res);
        return;
      }
      const result = verifyWebhook({
        rawBody: Buffer.concat(chunks),
        headers: req.headers,
        path: req.url ?? '',
        key: app.key,
        secret: app.secret,
      });
      if (!result.ok) {
        receiver.refused++;
        res.writeHead(401).end();
        return;
      }
      if (receiver.mode === 'fail') {
        res.writeHead(500).end();
        return;
      }
      receiver.batches.push({
        id: result.batch,
        events: result.events as unknown as Record<string, unknown>[],
        at: Date.now(),
      });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return receiver;
}

let markers = 0;

/**
 * A barrier for "nothing more is reported": a new user's page comes and goes now, and once its
 * user.online reached the receiver, every event the service recorded before it has come too (its
 * batches go out in the order recorded). `identity` mints an identity token for a user of the app.
 */
export async function laterEventReported(
  receiver: Receiver,
  service: { url: string; key: string; identity: (user: string) => Promise<string> },
): Promise<void> {
  const user = `marker-${process.pid}-${++markers}`;
  const page = await helloPage(service.url, service.key, await service.identity(user));
  await page.close();
  await receiver.waitFor(
    () => receiver.events('user.online').some((e) => e.user === user),
    `the marker ${user} reported online`,
  );
}
