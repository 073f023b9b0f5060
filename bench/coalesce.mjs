// npm run bench:coalesce — what write coalescing buys: frames due to one socket in the same tick
// written with one writev (cork/uncork, as the gateway's outbox does) against one write per frame.
// A server process pushes bursts of BURST ~100-byte frames to PAGES sockets; a client counts them.
// Env: PAGES (100), BURST (20), BENCH_SECONDS (5).
import { fork } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { performance } from 'node:perf_hooks';

const PAGES = Number(process.env.PAGES ?? 100);
const BURST = Number(process.env.BURST ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

if (process.argv[2] === 'server') {
  const mode = process.argv[3];
  const frame = Buffer.alloc(102, 0x61);
  frame[0] = 0x81;
  frame[1] = 100;
  const sockets = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
  });
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
  let running = true;
  process.on('message', (m) => {
    if (m === 'stop') running = false;
  });
  const burst = () => {
    if (!running) return process.exit(0);
    for (const socket of sockets) {
      if (socket.writableLength > 1 << 20) continue; // the client is behind: skip, as a bounded queue would
      if (mode === 'coalesced') socket.cork();
      for (let i = 0; i < BURST; i++) socket.write(frame);
      if (mode === 'coalesced') process.nextTick(() => socket.uncork());
    }
    setImmediate(burst);
  };
  process.on('message', (m) => {
    if (m === 'go') burst();
  });
} else {
  const results = {};
  for (const mode of ['one write per frame', 'coalesced']) {
    const child = fork(new URL(import.meta.url), ['server', mode === 'coalesced' ? 'coalesced' : 'plain']);
    const { port } = await new Promise((resolve) => child.once('message', resolve));
    let bytes = 0;
    const clients = await Promise.all(
      Array.from(
        { length: PAGES },
        () =>
          new Promise((resolve) => {
            const socket = connect(port, '127.0.0.1', () => resolve(socket));
            socket.on('data', (chunk) => {
              bytes += chunk.length;
            });
          }),
      ),
    );
    child.send('go');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const start = bytes;
    const t0 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
    results[mode] = (bytes - start) / 102 / ((performance.now() - t0) / 1000);
    child.send('stop');
    for (const socket of clients) socket.destroy();
    await new Promise((resolve) => child.once('exit', resolve));
  }
  console.log(
    `bench:coalesce  ${PAGES} sockets, bursts of ${BURST} frames of 102 bytes per socket per tick, ${SECONDS} s`,
  );
  for (const [mode, rate] of Object.entries(results))
    console.log(`  ${mode.padEnd(20)} ${Math.round(rate).toString().padStart(9)} frames/s`);
  console.log(`  coalesced / one write per frame: ${(results.coalesced / results['one write per frame']).toFixed(1)}x`);
}
