import { describe, expect, it } from 'vitest';
import { stateOf, useFakeService } from '../test/fake-service.js';

const { service, open } = useFakeService();

async function connected(setup: (client: ReturnType<typeof open>) => void = () => {}) {
  const client = open({ identity: 'alice-identity' });
  setup(client);
  const page = await service().acceptWelcomed({ user: 'alice' });
  await stateOf(client, 'connected');
  return { client, page };
}

describe('asks', () => {
  it("replies with the handler's value", async () => {
    const { page } = await connected((client) =>
      client.answer('sum', (data) => (data as number[]).reduce((a, b) => a + b)),
    );
    page.send({ t: 'ask', ask: 'a1', event: 'sum', data: [1, 2, 3] });
    expect(await page.next('reply')).toEqual({ t: 'reply', ask: 'a1', data: 6 });
  });

  it('replies with what an async handler resolves to, and passes the ask id and event', async () => {
    const metas: unknown[] = [];
    const { page } = await connected((client) =>
      client.answer<{ q: string }>('confirm', async (data, meta) => {
        metas.push(meta);
        await Promise.resolve();
        return { ok: data.q === 'delete?' };
      }),
    );
    page.send({ t: 'ask', ask: 'a2', event: 'confirm', data: { q: 'delete?' } });
    expect(await page.next('reply')).toEqual({ t: 'reply', ask: 'a2', data: { ok: true } });
    expect(metas).toEqual([{ ask: 'a2', event: 'confirm' }]);
  });

  it('replies without data when the handler returns nothing', async () => {
    const { page } = await connected((client) => client.answer('ack', () => undefined));
    page.send({ t: 'ask', ask: 'a3', event: 'ack', data: null });
    expect(await page.next('reply')).toEqual({ t: 'reply', ask: 'a3' });
  });

  it('declines at once an ask for an event without a handler', async () => {
    const { page } = await connected((client) => client.answer('other', () => 1));
    page.send({ t: 'ask', ask: 'a4', event: 'unknown', data: 1 });
    expect(await page.next('decline')).toEqual({ t: 'decline', ask: 'a4' });
  });

  it('declines when the handler throws, rejects, or returns what has no JSON form', async () => {
    const { page } = await connected((client) => {
      client.answer('throws', () => {
        throw new Error('no');
      });
      client.answer('rejects', async () => Promise.reject(new Error('no')));
      client.answer('bigint', () => 1n);
    });
    page.send({ t: 'ask', ask: 'b1', event: 'throws', data: 1 });
    page.send({ t: 'ask', ask: 'b2', event: 'rejects', data: 1 });
    page.send({ t: 'ask', ask: 'b3', event: 'bigint', data: 1 });
    const answers = [await page.next('decline'), await page.next('decline'), await page.next('decline')];
    expect(answers.map((frame) => frame.ask).sort()).toEqual(['b1', 'b2', 'b3']);
  });

  it('one handler per event: a new one replaces the old; removing it makes asks decline', async () => {
    let remove = () => {};
    const { page } = await connected((client) => {
      client.answer('v', () => 'old');
      remove = client.answer('v', () => 'new');
    });
    page.send({ t: 'ask', ask: 'c1', event: 'v', data: null });
    expect(await page.next('reply')).toMatchObject({ ask: 'c1', data: 'new' });
    remove();
    page.send({ t: 'ask', ask: 'c2', event: 'v', data: null });
    expect(await page.next('decline')).toEqual({ t: 'decline', ask: 'c2' });
  });

  it('drops the answer of an ask whose socket was lost before the handler finished', async () => {
    let finish: (value: string) => void = () => {};
    let started: () => void = () => {};
    const handlerStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    const { client, page } = await connected((c) =>
      c.answer('slow', () => {
        started();
        return new Promise<string>((resolve) => {
          finish = resolve;
        });
      }),
    );
    page.send({ t: 'ask', ask: 'd1', event: 'slow', data: null });
    await handlerStarted;
    page.close(4100);
    const next = await service().acceptWelcomed({ user: 'alice' });
    await stateOf(client, 'connected');
    finish('late');
    // The new socket gets nothing for the old ask: the next frame it sees is the pong below.
    next.send({ t: 'ping' });
    await next.next('pong');
    expect(next.received.map((frame) => frame.t)).toEqual(['hello', 'pong']);
    expect(page.received.map((frame) => frame.t)).toEqual(['hello']);
  });
});
