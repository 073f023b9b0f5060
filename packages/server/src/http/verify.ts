import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { EMPTY_BODY_SHA256, LIMITS, signingMessage, TIMESTAMP_PATTERN } from '@realtime/protocol';
import { derivedKey } from '../apps/derived-keys.js';
import { activeRotation } from '../apps/secret-rotation.js';
import type { App, AppStore } from '../engines/types.js';
import { ApiError } from './api-error.js';

/**
 * Signature checks of section 5.2 with node:crypto (the protocol package's pure-JS HMAC is for
 * browsers; here it would be the slowest step). The protocol test vectors check both agree.
 */

/** Publish key of a secret, derived once per secret. */
export function publishKeyOf(secret: string): Buffer {
  return derivedKey(secret, 'publish');
}

export function bodySha256(body: Buffer): string {
  return body.length === 0 ? EMPTY_BODY_SHA256 : hash('sha256', body, 'hex');
}

const SIGNATURE_PATTERN = /^[0-9a-f]{64}$/;

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Checks in the order of the contract: missing_signature, stale_signature, unknown_site,
 * bad_signature. `url` is the path with its query exactly as sent.
 */
export function verifyRequest(
  req: IncomingMessage,
  url: string,
  body: Buffer,
  apps: AppStore,
  nowMs: number,
): App | Promise<App> {
  const site = header(req, 'x-service-site');
  const timestamp = header(req, 'x-service-timestamp');
  const signature = header(req, 'x-service-signature');
  if (site === undefined) throw new ApiError('missing_signature', 'the X-Service-Site header is missing');
  if (timestamp === undefined) throw new ApiError('missing_signature', 'the X-Service-Timestamp header is missing');
  if (signature === undefined) throw new ApiError('missing_signature', 'the X-Service-Signature header is missing');
  if (!TIMESTAMP_PATTERN.test(timestamp)) {
    throw new ApiError('missing_signature', 'X-Service-Timestamp must be Unix seconds: 1 to 12 digits');
  }
  if (Math.abs(Number(timestamp) - Math.floor(nowMs / 1000)) > LIMITS.clockSkewSeconds) {
    throw new ApiError('stale_signature', 'X-Service-Timestamp is more than 300 seconds from the server clock');
  }
  const found = apps.get(site);
  // Stay synchronous when the store answers from memory: a promise per request costs measurably.
  if (found instanceof Promise) {
    return found.then((app) => checkSignature(req, url, body, app, timestamp, signature, nowMs));
  }
  return checkSignature(req, url, body, found, timestamp, signature, nowMs);
}

function checkSignature(
  req: IncomingMessage,
  url: string,
  body: Buffer,
  app: App | undefined,
  timestamp: string,
  signature: string,
  nowMs: number,
): App {
  if (!app) throw new ApiError('unknown_site', 'no app has the key given in X-Service-Site');
  if (!SIGNATURE_PATTERN.test(signature)) {
    throw new ApiError('bad_signature', 'X-Service-Signature must be 64 lowercase hex digits');
  }
  const message = signingMessage(timestamp, req.method ?? '', url, bodySha256(body));
  const given = Buffer.from(signature, 'hex');
  if (signedUnder(app.secret, message, given)) return app;
  // During a rotation the old secret holds until it retires: servers not yet given the new one go on.
  const rotation = activeRotation(app, nowMs);
  if (rotation !== undefined && signedUnder(rotation.oldSecret, message, given)) return app;
  throw new ApiError('bad_signature', 'the signature does not match this method, path, query and body');
}

function signedUnder(secret: string, message: string, signature: Buffer): boolean {
  return timingSafeEqual(createHmac('sha256', publishKeyOf(secret)).update(message).digest(), signature);
}
