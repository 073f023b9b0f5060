/**
 * A raw page in one room that comes back on its own when the service closes it (as the SDK does):
 * it waits the close's reconnect hint (capped), opens again, and joins with `since` = the last id it
 * got and the epoch it knew, so the events it missed are replayed. It records every event it got,
 * over all its sockets, and every `joined` answer and close.
 */
import type { Realtime } from '@realtime/node';
import { helloPage, type RawPage } from '../pages.js';
import { until } from './cluster.js';

const HINT_CAP_MS = 2000;

export interface ResumingPage {
  room: string;
  /** Every room event got, in arrival order, over every socket. */
  events: Record<string, unknown>[];
  /** Every `joined` answer, the first included. */
  joins: Record<string, unknown>[];
  /** Every close the service made: code, reason, and the last id got before it. */
  closes: Array<{ code: number; reason: string; after: string | undefined }>;
  /** `sent` answers of page sends (ref -> event id), over every socket. */
  sent: Map<number, string>;
  /** Sends one event to the room if the page is open and joined now; answers its ref, or undefined. */
  send(event: string, data: unknown): number | undefined;
  /** True while joined on an open socket. */
  ready(): boolean;
  close(): Promise<void>;
}

let refs = 0;

export async function openResumingPage(options: {
  url: () => string;
  site: string;
  sdk: Realtime;
  room: string;
  rules?: Parameters<Realtime['roomToken']>[1];
}): Promise<ResumingPage> {
  const { room } = options;
  let page: RawPage | undefined;
  let joined = false;
  let closing = false;
  let epoch: unknown;
  const events: Record<string, unknown>[] = [];
  const joins: Record<string, unknown>[] = [];
  const closes: ResumingPage['closes'] = [];
  const sent = new Map<number, string>();

  const lastId = () => events.at(-1)?.id as string | undefined;

  const connect = async (): Promise<void> => {
    const current = await helloPage(options.url(), options.site);
    page = current;
    const ref = ++refs;
    const since = lastId();
    current.ws.on('message', (raw) => {
      const frame = JSON.parse(raw.toString()) as Record<string, unknown>;
      if (frame.t === 'event' && frame.room === room) events.push(frame);
      else if (frame.t === 'sent' && typeof frame.ref === 'number') sent.set(frame.ref, frame.id as string);
      else if (frame.t === 'joined' && frame.ref === ref) {
        joins.push(frame);
        epoch = frame.epoch;
        joined = true;
      }
    });
    void current.closed.then(async (close) => {
      joined = false;
      if (closing) return;
      closes.push({ ...close, after: lastId() });
      const hint = /reconnect in (\d+) ms$/.exec(close.reason)?.[1];
      await new Promise((resolve) => setTimeout(resolve, Math.min(Number(hint ?? 0), HINT_CAP_MS)));
      await comeBack();
    });
    const token = await options.sdk.roomToken(room, options.rules ?? {});
    current.send({
      t: 'join',
      ref,
      room,
      token,
      ...(since === undefined ? {} : { since }),
      ...(epoch === undefined ? {} : { epoch }),
    });
    await current.next((f) => f.ref === ref && (f.t === 'joined' || f.t === 'error'), `joined ${room}`);
    if (!joined) throw new Error(`join ${room} answered ${JSON.stringify(current.frames.at(-1))}`);
  };

  /** Tries again until it is back (a shard may still be failing over), bounded. */
  const comeBack = async (): Promise<void> => {
    const deadline = Date.now() + 20_000;
    while (!closing && Date.now() < deadline) {
      try {
        await connect();
        return;
      } catch {
        await page?.close().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  };

  await connect();
  return {
    room,
    events,
    joins,
    closes,
    sent,
    send(event, data) {
      if (!joined || !page) return undefined;
      const ref = ++refs;
      page.send({ t: 'send', ref, room, event, data });
      return ref;
    },
    ready: () => joined,
    async close() {
      closing = true;
      await page?.close();
    },
  };
}

/** Waits until every page is joined (after a resume). */
export function allReady(pages: ResumingPage[], ms = 20_000): Promise<void> {
  return until(() => pages.every((p) => p.ready()), 'every page joined again', ms);
}

/** Waits until the page got every one of `ids`; fails naming how many it missed and how it resumed. */
export async function untilGotAll(page: ResumingPage, ids: string[], what: string, ms = 15_000): Promise<void> {
  const missing = () => {
    const got = new Set(page.events.map((f) => f.id));
    return ids.filter((id) => !got.has(id));
  };
  await until(() => missing().length === 0, what, ms).catch((error: Error) => {
    const lost = missing();
    throw new Error(
      `${error.message}: missing ${lost.length} of ${ids.length} (first ${lost[0]}, last ${lost.at(-1)}; got up to ${page.events.at(-1)?.id}); closes ${JSON.stringify(page.closes)}; joins ${JSON.stringify(page.joins.map((j) => ({ truncated: j.truncated, replay: j.replay, epoch: j.epoch })))}`,
    );
  });
}
