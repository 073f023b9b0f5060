import { createHmac, hash } from 'node:crypto';
import { HEADERS, signingMessage } from '@realtime/protocol';
import { derivedKey } from '../apps/derived-keys.js';
import { webhookSecrets } from '../apps/secret-rotation.js';
import type { App, StoredBatch, TryResult } from '../engines/types.js';
import { type Deliverer, requestPath } from './deliver.js';

/**
 * One try of a batch: signed afresh (a retry hours later carries a fresh timestamp), then a POST of
 * the stored body byte for byte to the app's address as it is now. No address, or one that no
 * longer parses: unreachable, without a request.
 */
export async function signedTry(
  deliverer: Deliverer,
  app: App | undefined,
  batch: StoredBatch,
  now: number,
): Promise<TryResult> {
  if (!app || app.webhook === '') return { status: 0, error: 'unreachable' };
  let url: URL;
  try {
    url = new URL(app.webhook);
  } catch {
    return { status: 0, error: 'unreachable' };
  }
  const timestamp = String(Math.floor(now / 1000));
  // node:crypto, not the protocol's pure-JS HMAC (for browsers); the message is the protocol's.
  const message = signingMessage(timestamp, 'POST', requestPath(url), hash('sha256', batch.body, 'hex'));
  const sign = (secret: string) => createHmac('sha256', derivedKey(secret, 'webhook')).update(message).digest('hex');
  const { signing, other } = webhookSecrets(app, now);
  const headers: Record<string, string> = {
    [HEADERS.site]: app.key,
    [HEADERS.timestamp]: timestamp,
    [HEADERS.signature]: sign(signing),
    [HEADERS.batch]: batch.id,
  };
  // During a rotation: a receiver that has either secret finds a signature it can check.
  if (other !== undefined) headers[HEADERS.otherSignature] = sign(other);
  return deliverer.deliver(url.href, batch.body, headers);
}
