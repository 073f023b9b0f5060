/**
 * Secret rotation with an overlap (docs/operations.md, "Rotating a secret"): for a while an app
 * holds two secrets, the API and the token checks take either, and webhooks carry a signature under
 * each. The window ends by the clock (every node compares `retiresAt` with its own), or earlier
 * when the operator retires the old secret.
 */
import type { App, AppStore, SecretRotation, WebhookSigner } from '../engines/types.js';
import { newSecret } from './generate.js';

/** The longest overlap an operator may set: an old secret should not outlive a planned deploy by much. */
export const MAX_OVERLAP_MS = 30 * 24 * 3600_000;

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3600_000, d: 24 * 3600_000 };

/**
 * An overlap as written on the command line: `0` (none: the old secret stops at once), or a whole
 * number with a unit, `90s`, `30m`, `24h`, `7d`; at most 30 days. Undefined when it is not one.
 */
export function parseOverlap(text: string): number | undefined {
  if (text === '0') return 0;
  const match = /^([1-9][0-9]{0,6})([smhd])$/.exec(text);
  if (!match) return undefined;
  const ms = Number(match[1]) * (UNIT_MS[match[2] as string] as number);
  return ms <= MAX_OVERLAP_MS ? ms : undefined;
}

/** The rotation under way at `nowMs`: undefined when there is none, or its old secret retired by the clock. */
export function activeRotation(app: App, nowMs: number): SecretRotation | undefined {
  const rotation = app.rotation;
  return rotation !== undefined && nowMs < rotation.retiresAt ? rotation : undefined;
}

/**
 * The secrets the app accepts at `nowMs`, the current one first: one outside a rotation (the
 * common case costs no array), two during one.
 */
export function acceptedSecrets(app: App, nowMs: number): string | readonly [string, string] {
  const rotation = activeRotation(app, nowMs);
  return rotation === undefined ? app.secret : [app.secret, rotation.oldSecret];
}

/** The secret that signs a webhook (`X-Service-Signature`), and during a rotation the other one (the second header). */
export function webhookSecrets(app: App, nowMs: number): { signing: string; other: string | undefined } {
  const rotation = activeRotation(app, nowMs);
  if (rotation === undefined) return { signing: app.secret, other: undefined };
  return rotation.signer === 'old'
    ? { signing: rotation.oldSecret, other: app.secret }
    : { signing: app.secret, other: rotation.oldSecret };
}

/** A rotation as the CLI and the dashboard show it: never a secret. */
export interface RotationView {
  /** When the old secret stops being accepted (milliseconds since the epoch). */
  retiresAt: number;
  /** Which secret signs webhooks: `new` or `old`. */
  signer: WebhookSigner;
}

export function rotationView(app: App, nowMs: number): RotationView | undefined {
  const rotation = activeRotation(app, nowMs);
  return rotation && { retiresAt: rotation.retiresAt, signer: rotation.signer };
}

/**
 * Each change below reads the app, then writes only if its secret is still the one read
 * (`ifSecret`); a write that another overtook (two operators at once) reads again and decides
 * again. Three rounds: a fourth overtaking in a row is not an operator's pace.
 */
const ROUNDS = 3;

/** Runs `round` until it is not overtaken (undefined), at most ROUNDS times; then answers `changed`. */
async function untilNotOvertaken<T>(round: () => Promise<T | undefined>): Promise<T | { ok: false; error: 'changed' }> {
  for (let i = 0; i < ROUNDS; i++) {
    const outcome = await round();
    if (outcome !== undefined) return outcome;
  }
  return { ok: false, error: 'changed' };
}

export type RotateOutcome =
  | { ok: true; secret: string; rotation: RotationView | undefined }
  | { ok: false; error: 'no_app' | 'rotating' | 'changed'; retiresAt?: number };

/**
 * Gives the app a new secret. `overlapMs` 0: the old one stops at once (a leaked secret), and any
 * rotation under way ends too. Otherwise the old one stays accepted for `overlapMs`; refused
 * (`rotating`) while an earlier rotation's old secret is still accepted, since a third secret would
 * cut off whoever still uses the oldest: retire it first, or rotate with no overlap.
 */
export async function rotateSecret(
  apps: AppStore,
  key: string,
  options: { overlapMs: number; signer: WebhookSigner; nowMs: number },
): Promise<RotateOutcome> {
  const secret = newSecret();
  if (options.overlapMs === 0) {
    return (await apps.setSecret(key, secret))
      ? { ok: true, secret, rotation: undefined }
      : { ok: false, error: 'no_app' };
  }
  return untilNotOvertaken<RotateOutcome>(async () => {
    const app = await apps.get(key);
    if (!app) return { ok: false, error: 'no_app' };
    const under = activeRotation(app, options.nowMs);
    if (under) return { ok: false, error: 'rotating', retiresAt: under.retiresAt };
    const rotation: SecretRotation = {
      oldSecret: app.secret,
      retiresAt: options.nowMs + options.overlapMs,
      signer: options.signer,
    };
    if (!(await apps.setSecret(key, secret, rotation, app.secret))) return undefined;
    return { ok: true, secret, rotation: { retiresAt: rotation.retiresAt, signer: rotation.signer } };
  });
}

/**
 * Retires the old secret now: only the current one is accepted from here (on other nodes within
 * their app cache's second). `retired` false when no rotation was under way (nothing to do, and
 * a lapsed rotation's record is cleared all the same).
 */
export async function retireSecret(
  apps: AppStore,
  key: string,
  nowMs: number,
): Promise<{ ok: true; retired: boolean } | { ok: false; error: 'no_app' | 'changed' }> {
  return untilNotOvertaken<{ ok: true; retired: boolean } | { ok: false; error: 'no_app' }>(async () => {
    const app = await apps.get(key);
    if (!app) return { ok: false, error: 'no_app' };
    const retired = activeRotation(app, nowMs) !== undefined;
    // Written only over the secret read: a rotation made meanwhile is not undone.
    if (app.rotation !== undefined && !(await apps.setSecret(key, app.secret, undefined, app.secret))) return undefined;
    return { ok: true, retired };
  });
}

/** Chooses which secret signs webhooks for the rest of a rotation; `not_rotating` outside one. */
export async function setWebhookSigner(
  apps: AppStore,
  key: string,
  signer: WebhookSigner,
  nowMs: number,
): Promise<{ ok: true; rotation: RotationView } | { ok: false; error: 'no_app' | 'not_rotating' | 'changed' }> {
  type Outcome = { ok: true; rotation: RotationView } | { ok: false; error: 'no_app' | 'not_rotating' };
  return untilNotOvertaken<Outcome>(async () => {
    const app = await apps.get(key);
    if (!app) return { ok: false, error: 'no_app' };
    const under = activeRotation(app, nowMs);
    if (!under) return { ok: false, error: 'not_rotating' };
    if (!(await apps.setSecret(key, app.secret, { ...under, signer }, app.secret))) return undefined;
    return { ok: true, rotation: { retiresAt: under.retiresAt, signer } };
  });
}
