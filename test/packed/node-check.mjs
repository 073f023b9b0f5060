// Copied into the scratch project of test/packed-install.test.ts and run there by Node, so every
// import resolves to the installed tarballs, never to the workspace.
//   node node-check.mjs tokens <user>   prints a page's identity and lobby token (JSON)
//   node node-check.mjs                 as user "nia" (the browser SDK in Node): join the lobby
//                                       with presence, send, receive an emit and the page's send,
//                                       answer an ask; asks the page's user too; prints what it saw.
// REALTIME_URL, REALTIME_KEY and REALTIME_SECRET say where the service is and which app.
import { connect } from '@realtime/browser';
import { Realtime } from '@realtime/node';

const { REALTIME_URL: url = '', REALTIME_KEY: key = '', REALTIME_SECRET: secret = '' } = process.env;
const realtime = new Realtime({ url, key, secret });
const lobbyToken = (userId) => realtime.roomToken('lobby', { userId, send: ['chat'], presence: true });

/** `promise`, or an error naming `what` after `ms`. */
function within(ms, what, promise) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Resolves once `check()` is true, checked every 20 ms for at most `ms`. */
async function until(ms, what, check) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function tokens(user) {
  const identity = await realtime.identityToken(user);
  return { identity, roomToken: await lobbyToken(user) };
}

async function run() {
  const online = await realtime.online(['pat', 'nia']);
  // No WebSocket given: Node's own, or (Node 20) the ws package's, through the package's node entry.
  const client = connect({ url, site: key, identity: () => realtime.identityToken('nia') });
  try {
    client.answer('confirm', (data) => ({ by: 'node', amount: data.amount }));
    const room = client.join('lobby', { token: () => lobbyToken('nia') });
    const fromPage = new Promise((resolve) => room.on('chat', (data, meta) => meta.from === 'pat' && resolve(data)));
    const news = new Promise((resolve) => room.on('news', (data) => resolve(data)));
    await within(5000, 'join', room.joined);
    await until(5000, 'the page among the members', () => room.members().some((m) => m.user === 'pat'));
    const members = room.members().map((m) => m.user);
    const sent = await within(5000, 'send', room.send('chat', { text: 'hi from node' }));
    const emitted = await realtime.emit({
      rooms: ['lobby'],
      event: 'news',
      data: { headline: 'packed' },
      history: { lobby: [10, 1] }, // kept, so it has an id
    });
    return {
      online,
      members,
      sent,
      emitted: emitted.lobby,
      news: await within(5000, 'the emit', news),
      fromPage: await within(5000, "the page's send", fromPage),
      pageReplies: await realtime.ask('pat', { event: 'confirm', data: { amount: 10 }, timeout: 5000 }),
      nodeReplies: await realtime.ask('nia', { event: 'confirm', data: { amount: 20 }, timeout: 5000 }),
    };
  } finally {
    client.close();
  }
}

try {
  const result = process.argv[2] === 'tokens' ? await tokens(process.argv[3] ?? 'pat') : await run();
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await realtime.close();
}
