import { hostProblem } from '../webhooks/address.js';
import { UsageError } from './usage-error.js';

/** Host names that always resolve to the machine itself (RFC 6761), so delivery would always refuse them. */
function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * Checks a webhook address when it is set (config file, CLI), by the rule delivery applies before
 * every try (`hostProblem`), so an address is never stored that the server will refuse: https:// only,
 * no credentials, and a host written as an IP address must be public; `allowPrivate` (a server started
 * with --allow-private-webhooks) lets http:// and local addresses through. Other host names are
 * judged at delivery, after DNS; `localhost` is refused here already since it never reaches a public
 * address.
 */
export function checkWebhookUrl(value: string, allowPrivate: boolean, where: string): string {
  if (value === '') return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${where}: ${JSON.stringify(value)} is not a URL`);
  }
  if (url.hash)
    throw new UsageError(`${where}: the webhook address ${JSON.stringify(value)} must not have a #fragment`);
  const problem =
    hostProblem(url, allowPrivate) ?? (!allowPrivate && isLocalhostName(url.hostname) ? 'loopback' : undefined);
  if (problem === undefined) return value;
  const rule = allowPrivate
    ? 'it must start with http:// or https:// and hold no credentials'
    : 'it must start with https:// and reach a public address (--allow-private-webhooks lets http:// and local addresses through, for development only)';
  throw new UsageError(
    `${where}: the server would refuse the webhook address ${JSON.stringify(value)} (${problem}); ${rule}`,
  );
}
