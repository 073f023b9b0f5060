// Copied into the scratch project of test/packed-install.test.ts and bundled there by esbuild, so
// the page runs the installed @realtime/browser (its browser build, dist/index.js).
// `window.start` connects as the user of the tokens given, joins the lobby with presence, answers
// asks, records what arrives in `window.seen`, and greets the first other member who joins.
import { connect } from '@realtime/browser';

window.start = async ({ url, site, identity, roomToken }) => {
  const seen = { chat: [], news: [], joined: [], sent: undefined };
  window.seen = seen;
  const client = connect({ url, site, identity });
  client.answer('confirm', (data) => ({ by: 'page', amount: data.amount }));
  const room = client.join('lobby', { token: roomToken });
  room.on('chat', (data, meta) => seen.chat.push({ from: meta.from, data }));
  room.on('news', (data) => seen.news.push(data));
  room.on('$member.joined', (member) => {
    seen.joined.push(member.user);
    room.send('chat', { text: `hi ${member.user}, from the page` }).then((id) => {
      seen.sent = id;
    });
  });
  await room.joined;
  return room.members().map((m) => m.user);
};
