import { describe, expect, it } from 'vitest';
import type { Connection } from '../gateway/connection.js';
import { FrameError } from '../gateway/frame-registry.js';
import { askModule } from './ask-module.js';
import type { AskService } from './ask-service.js';

function scene() {
  const answers: string[] = [];
  const asks = {
    reply: (askId: string, data: unknown) => answers.push(`reply ${askId} ${JSON.stringify(data)}`),
    decline: (askId: string) => answers.push(`decline ${askId}`),
  };
  const module = askModule(asks as unknown as AskService);
  const conn = { asks: new Set<string>() } as unknown as Connection;
  let reads = 0;
  const atOnce = (frame: unknown) =>
    module.atOnce?.(conn, () => {
      reads++;
      return JSON.stringify(frame);
    });
  return { module, conn, answers, atOnce, reads: () => reads };
}

describe('askModule: answers taken at once', () => {
  it('reads no frame while no ask waits on the page', () => {
    const { atOnce, reads } = scene();
    expect(atOnce({ t: 'reply', ask: 'n.1', data: 1 })).toBeUndefined();
    expect(reads()).toBe(0);
  });

  it('takes a reply or decline to an ask waiting on the page, and nothing else', () => {
    const { atOnce, conn } = scene();
    conn.asks.add('n.1');
    expect(atOnce({ t: 'reply', ask: 'n.1', data: { a: 1 } })?.frame).toEqual({
      t: 'reply',
      ask: 'n.1',
      data: { a: 1 },
    });
    expect(atOnce({ t: 'decline', ask: 'n.1' })?.frame).toEqual({ t: 'decline', ask: 'n.1' });
    // Another ask, another frame type, or a frame its spec refuses go the usual way (charged, queued).
    expect(atOnce({ t: 'reply', ask: 'n.2' })).toBeUndefined();
    expect(atOnce({ t: 'send', ref: 1, room: 'r', event: 'ask', data: { ask: 'n.1' } })).toBeUndefined();
    expect(atOnce({ t: 'reply', ask: 'n.1', extra: 1 })).toBeUndefined();
  });

  it('answers each ask once: the handler takes it off the page', async () => {
    const { atOnce, conn, answers } = scene();
    conn.asks.add('n.1');
    const taken = atOnce({ t: 'reply', ask: 'n.1', data: 2 });
    await taken?.handler.handle(conn, taken.frame);
    expect(answers).toEqual(['reply n.1 2']);
    expect(atOnce({ t: 'reply', ask: 'n.1', data: 3 })).toBeUndefined();
  });

  it('counts a reply nested too deep as a decline, and refuses the frame', () => {
    const { module, conn, answers } = scene();
    conn.asks.add('n.1');
    let data: unknown = 1;
    for (let i = 0; i < 1_000_000; i++) data = [data];
    const reply = module.frames.reply;
    expect(() => reply?.handle(conn, { t: 'reply', ask: 'n.1', data } as never)).toThrow(FrameError);
    expect(answers).toEqual(['decline n.1']);
  });

  it('declines every ask still waiting when the page closes', async () => {
    const { module, conn, answers } = scene();
    conn.asks.add('n.1');
    conn.asks.add('n.2');
    await module.closed?.(conn);
    expect(answers).toEqual(['decline n.1', 'decline n.2']);
    expect(conn.asks.size).toBe(0);
  });
});
