// The customer's side of the chat demo: serves the page and the browser SDK, and mints tokens with
// @realtime/node. A real app would check who the user is before minting; the demo trusts the name.
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { Realtime } from '@realtime/node';

const PAGE = new URL('./index.html', import.meta.url);
const FAVICON = new URL('./favicon.svg', import.meta.url);
/** The names the demo takes: letters, digits, space, `_`, `.` and `-`, 1 to 40. */
const NAME = /^[\p{L}\p{N} _.-]{1,40}$/u;
const NAME_MAX = 40;
/** `server` labels what the customer's server sends (examples/emit.mjs): no page may pose as it. */
const RESERVED = new Set(['server', 'admin', 'system']);
const BUNDLE = new URL('../../packages/browser/dist/realtime.browser.js', import.meta.url);

/** Why the demo does not take `name` as a user name, in words for the page; undefined when it does. */
export function nameProblem(name) {
  if (name === '') return 'Pick a name.';
  if ([...name].length > NAME_MAX) return `A name is at most ${NAME_MAX} characters.`;
  if (!NAME.test(name)) return 'A name may have letters, digits, spaces, _ . and - only.';
  if (RESERVED.has(name.toLowerCase())) return `“${name}” is kept for the demo itself: pick another name.`;
  return undefined;
}

const json = (res, status, body) =>
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));

/**
 * Starts the demo on 127.0.0.1:port; `serviceUrl` is where the pages' browsers reach the service.
 * `app()` gives (or promises) the app's key and secret each time a token is minted, so a rotated
 * secret is used at once, without a restart.
 */
export async function startDemo({ serviceUrl, app, port = 3000, host = '127.0.0.1' }) {
  const { key } = await app();
  // One client per secret: a rotation replaces it.
  let client = { secret: '', realtime: undefined };
  const realtimeNow = async () => {
    const { secret } = await app();
    if (client.secret !== secret) {
      const old = client.realtime;
      client = { secret, realtime: new Realtime({ url: serviceUrl, key, secret }) };
      await old?.close();
    }
    return client.realtime;
  };
  const server = createServer(async (req, res) => {
    let url;
    try {
      url = new URL(req.url ?? '/', 'http://demo');
    } catch {
      // An address no URL can be made of (`//[`): the request's mistake, not the demo's.
      res.writeHead(400).end('bad address');
      return;
    }
    try {
      if (url.pathname === '/') {
        const html = (await readFile(PAGE, 'utf8')).replace(
          '__CONFIG__',
          JSON.stringify({ url: serviceUrl, site: key }),
        );
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' }).end(html);
      } else if (url.pathname === '/favicon.svg') {
        res.writeHead(200, { 'content-type': 'image/svg+xml' }).end(await readFile(FAVICON));
      } else if (url.pathname === '/realtime.browser.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' }).end(await readFile(BUNDLE));
      } else if (url.pathname === '/token') {
        const user = (url.searchParams.get('user') ?? '').trim();
        const problem = nameProblem(user);
        if (problem) {
          json(res, 400, { error: problem });
          return;
        }
        const realtime = await realtimeNow();
        const identity = await realtime.identityToken(user, { info: { name: user } });
        const room = await realtime.roomToken('lobby', {
          userId: user,
          send: ['chat', 'typing'],
          presence: true,
          history: [100, 24],
        });
        json(res, 200, { identity, room });
      } else if (url.pathname === '/call-token') {
        // A call from the page's user to another member of the lobby, audio and video.
        const user = (url.searchParams.get('user') ?? '').trim();
        const to = (url.searchParams.get('to') ?? '').trim();
        if (nameProblem(user) !== undefined || nameProblem(to) !== undefined || user === to) {
          json(res, 400, { error: 'call another member by name' });
          return;
        }
        const realtime = await realtimeNow();
        const token = await realtime.callToken(user, { to, media: ['audio', 'video'] });
        json(res, 200, { token });
      } else if (url.pathname === '/stream-grant') {
        // The lobby's one live stream: any member may present (first come) or watch.
        const user = (url.searchParams.get('user') ?? '').trim();
        const role = url.searchParams.get('role');
        if (nameProblem(user) !== undefined || (role !== 'presenter' && role !== 'viewer')) {
          json(res, 400, { error: 'a member presents or watches' });
          return;
        }
        const realtime = await realtimeNow();
        const grant = await realtime.streamGrant('lobby-live', { role, userId: user });
        json(res, 200, { grant });
      } else {
        res.writeHead(404).end('not found');
      }
    } catch (error) {
      // The page shows the status; the reason stays in this terminal.
      console.error(error);
      if (!res.headersSent) json(res, 500, { error: 'the demo server failed' });
    }
  });
  await new Promise((resolve) => server.listen(port, host, resolve));
  const address = server.address();
  return {
    url: `http://${host}:${address.port}`,
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
      await client.realtime?.close();
    },
  };
}
