import type { DeclineFrame, ReplyFrame } from '@realtime/protocol';
import type { Connection } from '../gateway/connection.js';
import { FrameError, FrameRegistry, frame, type PageModule, type Parsed } from '../gateway/frame-registry.js';
import type { AskService } from './ask-service.js';

/** A reply that cannot be written back as JSON (nested too deep) counts as a decline, not a failed ask. */
function reply(asks: AskService, askId: string, data: unknown): void {
  try {
    JSON.stringify(data);
  } catch {
    asks.decline(askId);
    throw new FrameError('bad_frame', 'reply: data is nested too deeply');
  }
  asks.reply(askId, data);
}

/**
 * Asks: a page's replies and declines to the service's asks. An answer to an ask waiting on the page
 * is taken at once (not behind a join's replay) and uncharged: asks are bounded where they start, per
 * user, so their answers are not the page's flood. Each ask is answered once, so a repeat is an
 * unknown ask and goes the usual way (charged, in the queue). A page that closes declines its asks.
 */
export function askModule(asks: AskService): PageModule {
  const frames = {
    reply: frame<ReplyFrame>({ required: { ask: 'string' }, optional: { data: 'json' } }, (conn, f) => {
      if (conn.asks.delete(f.ask)) reply(asks, f.ask, f.data ?? null);
    }),
    decline: frame<DeclineFrame>({ required: { ask: 'string' } }, (conn, f) => {
      if (conn.asks.delete(f.ask)) asks.decline(f.ask);
    }),
  };
  // The answers alone, read with the same specs as the page's other frames.
  const answers = new FrameRegistry();
  answers.add(frames);
  return {
    frames,
    atOnce: (conn: Connection, text: () => string): Parsed | undefined => {
      // Frames are read before the charge only while asks wait on the page.
      if (conn.asks.size === 0) return undefined;
      const read = text();
      if (!read.includes('"ask"')) return undefined;
      let parsed: Parsed;
      try {
        parsed = answers.parse(read);
      } catch {
        return undefined;
      }
      const { ask } = parsed.frame;
      return typeof ask === 'string' && conn.asks.has(ask) ? parsed : undefined;
    },
    closed: (conn: Connection) => {
      for (const askId of conn.asks) asks.decline(askId);
      conn.asks.clear();
    },
  };
}
