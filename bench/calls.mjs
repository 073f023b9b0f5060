// npm run bench:calls — calls and live streams, five parts (BUILD first: npm run build):
// 1. signalling: call.invite on the caller's page -> call.ring on the callee's page, p50/p99 over
//    BENCH_CALLS (500) calls, one pair at a time and BENCH_CONCURRENCY (10) pairs at once, against
//    the service and, in the same run, a bare `ws` relay of the same frames (bench/calls/relay.mjs).
// 2. streams: one presenter (Chromium, fake camera 640x480 30 fps, VP8 + Opus) through the
//    forwarding unit (werift, a node process of its own) to N viewers (pages of a second Chromium),
//    N from BENCH_VIEWERS (1,5,10,20): the unit's CPU, what it forwards, frames decoded per viewer.
// 3. mesh: k pages of one Chromium (BENCH_MESH: 2,3,4,5,6), each sending its camera to the k - 1
//    others: Chromium CPU per page, upload and download per page.
// 4. group: a group call of k pages of one Chromium through forwarding units (BENCH_GROUP: 3,4,5,6),
//    as the service runs one from GROUP_UNIT_FROM pages on: each page sends once to a unit of its own
//    and receives each other page's media from that page's unit (the k units in one node process).
//    Chromium CPU per page, upload (one stream's worth at any k) and download per page, fps per
//    incoming video, the units' CPU and µs per packet; with mesh in the same run, mesh vs units per k.
// 5. layers (issue 21): a presenter sending simulcast (q/h/f) from a 1280x720 grain camera through
//    a unit; (a) per viewer behind 300 kbit/s, 1.5 Mbit/s (network namespaces + tc, as root) and
//    loopback: decoded fps, frame size, bytes received per second; (c) the 300 kbit/s viewer's link
//    opened then shut: time to move up and down a layer (its getStats frameWidth); (b) the unit's
//    CPU per forwarded stream, 1 presenter + BENCH_LAYER_VIEWERS (4) viewers on loopback, simulcast
//    on vs off. BENCH_LAYER_CYCLES (1) open/shut cycles. See bench/calls/layers.mjs.
// Every socket and every ICE candidate is on 127.0.0.1 (part 5: also 10.231.0.0/16, its links).
// Media parts measure BENCH_SECONDS (10) after BENCH_WARMUP (5) seconds. BENCH_ONLY, or the first
// argument (`npm run bench:calls -- layers`): one part or a comma list (signalling,streams,mesh,group,layers).
import { cpus } from 'node:os';
import { startPageServer } from './calls/chromium.mjs';
import { group } from './calls/group.mjs';
import { layers } from './calls/layers.mjs';
import { mesh } from './calls/mesh.mjs';
import { signalling } from './calls/signalling.mjs';
import { streams } from './calls/streams.mjs';

const list = (value, fallback) => (value ?? fallback).split(',').map(Number);
const CALLS = Number(process.env.BENCH_CALLS ?? 500);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);
const VIEWERS = list(process.env.BENCH_VIEWERS, '1,5,10,20');
const MESH = list(process.env.BENCH_MESH, '2,3,4,5,6');
const GROUP = list(process.env.BENCH_GROUP, '3,4,5,6');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const LAYER_VIEWERS = Number(process.env.BENCH_LAYER_VIEWERS ?? 4);
const LAYER_CYCLES = Number(process.env.BENCH_LAYER_CYCLES ?? 1);
const PARTS = ['signalling', 'streams', 'mesh', 'group', 'layers'];
const chosen = process.argv[2] ?? process.env.BENCH_ONLY;
const ONLY = chosen ? chosen.split(',').map((part) => part.trim()) : PARTS;
for (const part of ONLY) {
  if (!PARTS.includes(part)) throw new Error(`BENCH_ONLY: no part ${part} (parts: ${PARTS.join(', ')})`);
}
const runs = (part) => ONLY.includes(part);

const progress = (row) => process.stderr.write(`  ... ${JSON.stringify(row)}\n`);

/** Prints rows as a table: columns are [heading, value of a row]. */
function table(columns, rows) {
  const cells = [columns.map(([heading]) => heading), ...rows.map((row) => columns.map(([, cell]) => cell(row)))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i].length)));
  for (const line of cells) console.log(`  ${line.map((cell, i) => cell.padStart(widths[i])).join('  ')}`);
}
const f = (digits) => (value) => value.toFixed(digits);

const results = {};
if (runs('signalling')) {
  results.signalling = await signalling({ calls: CALLS, concurrencies: [1, CONCURRENCY], log: progress });
}
const pages = runs('streams') || runs('mesh') || runs('group') ? await startPageServer() : undefined;
try {
  if (runs('streams')) {
    results.streams = await streams({
      url: pages.url,
      viewerCounts: VIEWERS,
      seconds: SECONDS,
      warmupSeconds: WARMUP,
      log: progress,
    });
  }
  if (runs('mesh')) {
    results.mesh = await mesh({ url: pages.url, sizes: MESH, seconds: SECONDS, warmupSeconds: WARMUP, log: progress });
  }
  if (runs('group')) {
    results.group = await group({
      url: pages.url,
      sizes: GROUP,
      seconds: SECONDS,
      warmupSeconds: WARMUP,
      log: progress,
    });
  }
} finally {
  await pages?.close();
}
if (runs('layers')) {
  results.layers = await layers({
    seconds: SECONDS,
    warmupSeconds: WARMUP,
    cpuViewers: LAYER_VIEWERS,
    cycles: LAYER_CYCLES,
    log: progress,
  });
}

const where = runs('layers') ? '127.0.0.1 (layers: also 10.231.0.0/16, its links)' : '127.0.0.1';
console.log(`bench:calls  node ${process.version}, ${cpus().length} cores, everything on ${where}`);
if (results.signalling) {
  const rows = results.signalling;
  console.log(`\nSignalling: call.invite -> call.ring on the callee's page, ${CALLS} calls per row, each then hung up`);
  table(
    [
      ['system', (r) => r.system],
      ['pairs at once', (r) => String(r.concurrency)],
      ['p50 ms', (r) => f(2)(r.p50)],
      ['p99 ms', (r) => f(2)(r.p99)],
      ['calls/s', (r) => f(0)(r.callsPerSecond)],
      ['server CPU µs/call', (r) => f(0)(r.cpuPerCall)],
    ],
    rows,
  );
  for (const concurrency of new Set(rows.map((r) => r.concurrency))) {
    const service = rows.find((r) => r.system === 'service' && r.concurrency === concurrency);
    const raw = rows.find((r) => r.system === 'raw ws' && r.concurrency === concurrency);
    if (service && raw) {
      console.log(
        `  ${concurrency} at once, service / raw ws: p50 ${(service.p50 / raw.p50).toFixed(2)}x, p99 ${(service.p99 / raw.p99).toFixed(2)}x, calls/s ${(service.callsPerSecond / raw.callsPerSecond).toFixed(2)}x`,
      );
    }
  }
}
if (results.streams) {
  console.log(`\nForwarding unit: one presenter (VP8 640x480 + Opus) to N viewers, ${SECONDS} s per row`);
  table(
    [
      ['viewers', (r) => String(r.viewers)],
      ['unit CPU %', (r) => f(1)(r.unitCpu)],
      ['µs/packet', (r) => f(1)(r.cpuPerPacket)],
      ['packets out/s', (r) => f(0)(r.packetsPerSecond)],
      ['Mbit/s out', (r) => f(2)(r.mbitOut)],
      ['fps/viewer mean', (r) => f(1)(r.fpsMean)],
      ['fps min', (r) => f(1)(r.fpsMin)],
      ['decoding', (r) => `${r.decoding}/${r.viewers}`],
      ['viewers Chromium %', (r) => f(0)(r.viewersCpu)],
      ['% per viewer', (r) => f(1)(r.viewersCpu / r.viewers)],
      ['presenter Chromium %', (r) => f(0)(r.presenterCpu)],
      ['presenter up kbit/s', (r) => f(0)(r.uplinkKbit)],
      ['presenter packets/s', (r) => f(0)(r.presenterPackets)],
      ['presenter fps', (r) => f(1)(r.presenterFps)],
    ],
    results.streams,
  );
}
if (results.mesh) {
  console.log(`\nMesh group call: k pages in one Chromium, each sending to k - 1, ${SECONDS} s per row`);
  table(
    [
      ['pages k', (r) => String(r.pages)],
      ['Chromium CPU %', (r) => f(0)(r.cpuTotal)],
      ['% per page', (r) => f(1)(r.cpuPerPage)],
      ['up kbit/s per page', (r) => f(0)(r.uplinkKbit)],
      ['per outgoing', (r) => f(0)(r.uplinkKbit / (r.pages - 1))],
      ['down kbit/s per page', (r) => f(0)(r.downlinkKbit)],
      ['fps per incoming video', (r) => f(1)(r.fpsPerStream)],
      ['encoded fps per outgoing', (r) => f(1)(r.encodedPerStream)],
    ],
    results.mesh,
  );
}
if (results.group) {
  console.log(
    `\nGroup call through units: k pages in one Chromium, each sending once to its unit and receiving k - 1 from the others' units, ${SECONDS} s per row`,
  );
  table(
    [
      ['pages k', (r) => String(r.pages)],
      ['Chromium CPU %', (r) => f(0)(r.cpuTotal)],
      ['% per page', (r) => f(1)(r.cpuPerPage)],
      ['up kbit/s per page', (r) => f(0)(r.uplinkKbit)],
      ['down kbit/s per page', (r) => f(0)(r.downlinkKbit)],
      ['fps per incoming video', (r) => f(1)(r.fpsMean)],
      ['fps min', (r) => f(1)(r.fpsMin)],
      ['decoding', (r) => `${r.decoding}/${r.videos}`],
      ['encoded fps per page', (r) => f(1)(r.encodedFps)],
      ['units CPU %', (r) => f(1)(r.unitCpu)],
      ['µs/packet', (r) => f(1)(r.cpuPerPacket)],
      ['units packets out/s', (r) => f(0)(r.packetsPerSecond)],
    ],
    results.group,
  );
}
if (results.mesh && results.group) {
  console.log('\nMesh vs units, same k (Chromium CPU % per page; upload kbit/s per page; units CPU % of a core):');
  for (const units of results.group) {
    const meshRow = results.mesh.find((r) => r.pages === units.pages);
    if (!meshRow) continue;
    console.log(
      `  k=${units.pages}: CPU per page mesh ${f(1)(meshRow.cpuPerPage)} vs units ${f(1)(units.cpuPerPage)} (${f(2)(units.cpuPerPage / meshRow.cpuPerPage)}x), upload per page mesh ${f(0)(meshRow.uplinkKbit)} vs units ${f(0)(units.uplinkKbit)} (${f(2)(units.uplinkKbit / meshRow.uplinkKbit)}x), units' process ${f(1)(units.unitCpu)}%`,
    );
  }
}
if (results.layers) {
  const { byLink, presenterLayers, moves, cpu, skipped, settleSeconds } = results.layers;
  const ms = (value) => (value === undefined ? 'not in 25 s' : f(0)(value));
  if (skipped) console.log(`\nLayers by link and moves skipped: ${skipped}`);
  if (byLink) {
    console.log(
      `\nSimulcast, layer per viewer by link: presenter 1280x720 grain camera, q/h/f, ${SECONDS} s window (all at their layer ${settleSeconds === undefined ? 'not within 30 s' : `${f(1)(settleSeconds)} s after the presenter joined`})`,
    );
    table(
      [
        ['viewer link', (r) => r.link],
        ['decoded fps', (r) => f(1)(r.fps)],
        ['frame size (seconds seen)', (r) => r.sizes],
        ['video kbit/s in', (r) => f(0)(r.videoKbit)],
        ['all kbit/s in', (r) => f(0)(r.pairKbit)],
        ['freezes', (r) => String(r.freezes)],
        ['lost', (r) => String(r.lost)],
        ['unit layer', (r) => String(r.layer ?? '-')],
        ['unit estimate kbit/s', (r) => f(0)(r.estimateKbit)],
      ],
      byLink,
    );
    console.log('  presenter sends:');
    table(
      [
        ['rid', (r) => r.rid],
        ['width', (r) => String(r.width)],
        ['kbit/s', (r) => f(0)(r.kbit)],
        ['fps', (r) => f(1)(r.fps)],
        ['limited by', (r) => r.limit || '-'],
      ],
      presenterLayers,
    );
  }
  if (moves) {
    console.log(
      '\nLayer moves of the 300 kbit/s viewer: its link opened (up to the top layer), then at once shut again (down to the bottom one); ms after the tc change, from its getStats frameWidth',
    );
    table(
      [
        ['cycle', (r) => String(r.cycle)],
        ['link', (r) => r.direction],
        ['widths seen (s after the change)', (r) => r.widths],
        ['a layer ms', (r) => (r.already ? '- (there already)' : ms(r.firstMoveMs))],
        ['at top/bottom ms', (r) => (r.already ? '-' : ms(r.reachedMs))],
        ['longest still ms', (r) => f(0)(r.stallMs)],
        ['freezes', (r) => String(r.freezes)],
        ['unit at end layer ms', (r) => (r.already ? '-' : ms(r.unitMs))],
        ['unit layer after', (r) => String(r.unitLayer ?? '-')],
        ['unit estimate kbit/s', (r) => f(0)(r.estimateKbit)],
      ],
      moves,
    );
  }
  console.log('\nUnit CPU per forwarded stream, 1 presenter (1280x720 grain) + N viewers on loopback');
  table(
    [
      ['simulcast', (r) => r.simulcast],
      ['viewers', (r) => String(r.viewers)],
      ['unit CPU %', (r) => f(1)(r.unitCpu)],
      ['% per stream', (r) => f(2)(r.perStream)],
      ['µs/packet in+out', (r) => f(1)(r.cpuPerPacket)],
      ['packets in/s', (r) => f(0)(r.packetsInPerSecond)],
      ['packets out/s', (r) => f(0)(r.packetsPerSecond)],
      ['Mbit/s out', (r) => f(2)(r.mbitOut)],
      ['presenter up kbit/s', (r) => f(0)(r.uplinkKbit)],
      ['layers sent (rid:width)', (r) => r.layersSent],
      ['fps/viewer', (r) => f(1)(r.fps)],
      ['viewer widths', (r) => r.widths],
    ],
    cpu,
  );
  const [on, off] = cpu;
  if (on && off) console.log(`  per stream, simulcast on / off: ${f(2)(on.perStream / off.perStream)}x`);
}
