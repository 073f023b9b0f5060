import { SOCKET_PATH } from '@realtime/protocol';

/**
 * The socket URL for a service base URL: `ws(s)://<host>[/<base path>]/service/realtime/socket?site=<key>`.
 * `http` becomes `ws` and `https` becomes `wss`. A relative URL is resolved against the page's address.
 */
export function socketUrl(base: string, site: string): string {
  if (typeof base !== 'string' || base === '') throw new TypeError('`url` must be the address of the service');
  if (typeof site !== 'string' || site === '') throw new TypeError('`site` must be the app key');
  const page = (globalThis as { location?: { href?: unknown } }).location?.href;
  let url: URL;
  try {
    url = new URL(base, typeof page === 'string' ? page : undefined);
  } catch {
    throw new TypeError(`\`url\` is not a valid address: ${base}`);
  }
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  else if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
    throw new TypeError(`\`url\` must be http(s) or ws(s), not ${url.protocol}`);
  }
  url.pathname = url.pathname.replace(/\/+$/, '') + SOCKET_PATH;
  url.search = `?site=${encodeURIComponent(site)}`;
  url.hash = '';
  return url.toString();
}
