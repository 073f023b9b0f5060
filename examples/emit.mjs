// Sends one event with the Node SDK. Run from the repository root after `npm install`:
//   REALTIME_URL=http://127.0.0.1:4000 REALTIME_KEY=... REALTIME_SECRET=... node examples/emit.mjs
import { Realtime } from '@realtime/node';

const { REALTIME_URL = 'http://127.0.0.1:4000', REALTIME_KEY, REALTIME_SECRET } = process.env;
if (!REALTIME_KEY || !REALTIME_SECRET) {
  console.error('Set REALTIME_KEY and REALTIME_SECRET (printed by `npm start` on first run).');
  process.exit(2);
}

const realtime = new Realtime({ url: REALTIME_URL, key: REALTIME_KEY, secret: REALTIME_SECRET });
try {
  const ids = await realtime.emit({ rooms: ['lobby'], event: 'chat', data: { text: 'hello from your server' } });
  console.log(JSON.stringify({ ok: true, ids }));
} catch (error) {
  console.error(`emit failed: ${error.code ?? ''} ${error.message}`);
  process.exitCode = 1;
} finally {
  await realtime.close();
}
