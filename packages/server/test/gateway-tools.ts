import { deriveKey } from '@realtime/protocol';
import { SignJWT } from 'jose';
import type { RawPage } from './pages.js';

export type Frame = Record<string, unknown>;

/** Answers the service's `ping` frames with `pong` while `on` is true (a live page does). */
export function answerPings(page: RawPage): { on: boolean } {
  const state = { on: true };
  page.ws.on('message', (data) => {
    if (!state.on) return;
    if (data.toString() === '{"t":"ping"}') page.send({ t: 'pong' });
  });
  return state;
}

/** Polls a condition until it holds; fails with `what` after the deadline. Not a sleep: it ends as soon as it holds. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A clock the test moves by hand. */
export function manualClock(start = Date.now()): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

/**
 * Real time plus jumps the test makes: a server given it sees time pass (a cache, a window, a whole
 * second of a call) without the test sleeping, while its own timers still run.
 */
export function skewedClock(): { now: () => number; advance: (ms: number) => void } {
  let skew = 0;
  return {
    now: () => Date.now() + skew,
    advance: (ms) => {
      skew += ms;
    },
  };
}

/** Room events (with an id) a page got in one room, in arrival order. */
export function roomEvents(page: RawPage, room: string): Frame[] {
  return page.frames.filter((f) => f.t === 'event' && f.room === room && typeof f.id === 'string');
}

/** Compares two event ids `<ms>-<seq>`. */
export function compareIds(a: string, b: string): number {
  const [ams = 0, aseq = 0] = a.split('-').map(Number);
  const [bms = 0, bseq = 0] = b.split('-').map(Number);
  return ams - bms || aseq - bseq;
}

/** Signs claims as the customer's server would, under an app secret's channels key (or any key given). */
export function signToken(
  claims: Record<string, unknown>,
  options: { secret?: string; key?: Uint8Array; alg?: string } = {},
): Promise<string> {
  const key = options.key ?? deriveKey(options.secret ?? '', 'channels');
  return new SignJWT(claims).setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT' }).sign(key);
}

/** An unsigned token (`alg: none`) with the given claims. */
export function unsignedToken(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}

/** The same token with its payload replaced (signature kept): a tampered token. */
export function tamperedToken(token: string, change: (claims: Record<string, unknown>) => void): string {
  const [header, payload, signature] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()) as Record<string, unknown>;
  change(claims);
  return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
}

export const nowSeconds = (nowMs = Date.now()) => Math.floor(nowMs / 1000);
