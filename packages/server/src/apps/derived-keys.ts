import { createHmac } from 'node:crypto';
import { KEY_LABELS, type KeyName } from '@realtime/protocol';

const caches = new Map<KeyName, Map<string, Buffer>>();
const MAX_SECRETS = 10_000;

/**
 * A key of section 5.3 (HMAC-SHA256 of its label under the secret), derived once per secret and key:
 * request checks, token checks and webhook signing all run on hot paths. node:crypto here; the
 * protocol package's pure-JS `deriveKey` gives the same bytes (checked against the test vectors).
 */
export function derivedKey(secret: string, name: KeyName): Buffer {
  let cache = caches.get(name);
  if (!cache) {
    cache = new Map();
    caches.set(name, cache);
  }
  let key = cache.get(secret);
  if (!key) {
    if (cache.size >= MAX_SECRETS) cache.clear();
    key = createHmac('sha256', secret).update(KEY_LABELS[name]).digest();
    cache.set(secret, key);
  }
  return key;
}
