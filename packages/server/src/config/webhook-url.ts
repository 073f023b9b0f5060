import { UsageError } from './usage-error.js';

/**
 * Checks the shape of a webhook address when it is set. Whether it reaches a public address is
 * checked on every delivery, after DNS; here only the scheme and form.
 */
export function checkWebhookUrl(value: string, allowPrivate: boolean, where: string): string {
  if (value === '') return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${where}: ${JSON.stringify(value)} is not a URL`);
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    throw new UsageError(
      `${where}: the webhook address must start with https://${allowPrivate ? ' or http://' : ' (http:// only with --allow-private-webhooks)'}`,
    );
  }
  if (url.username || url.password) throw new UsageError(`${where}: the webhook address must not hold credentials`);
  if (url.hash) throw new UsageError(`${where}: the webhook address must not have a #fragment`);
  return value;
}
