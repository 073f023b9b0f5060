// The rooms systems of bench:cluster: signed API emits with history, each into a room drawn at
// random among --room-count rooms, through one or more service nodes, on one Redis ('rooms redis') or on a
// Redis Cluster started here ('rooms cluster'). What it measures is Redis's side: the CPU time of
// each redis-server per emit (INFO CPU, less what it spends idle with the pages open), how that work
// spreads over the primaries, and the scripts each ran (INFO COMMANDSTATS); and each node's CPU per
// emit. Every room has a few pages (spread over the nodes) that count what arrives.

import { performance } from 'node:perf_hooks';
import calculateSlot from 'cluster-key-slot';
import { ask, stop } from './processes.mjs';
import { startRedis, startRedisCluster } from './redis.mjs';
import { appOf, emit, openPage, payloadOf, roomToken } from './service.mjs';

const PREFIX = 'bench:'; // node.mjs's
const roomName = (i) => `room-${i}`;

/** The keys every emit into `room` touches carry this tag: the room's slot (keys.ts). */
const slotOfRoom = (app, room) => calculateSlot(`${PREFIX}{${app.key}:${room}}:m`);
/** An app's rate-limit bucket, taken once per API request (apps/rate-limit.ts, limits.ts): one key, one slot. */
const slotOfBucket = (app) => calculateSlot(`${PREFIX}lim:t:api:${app.key}`);

const owns = (node, slot) => node.slots.some(([from, to]) => slot >= from && slot <= to);

/**
 * Runs one rooms system. `options`: { cluster, primaries, replicas, rooms, roomPages, apps, nodes,
 * rate, window, seconds, history } and `startNodes(count, target)` (cluster.mjs: target { redis } or
 * { cluster }, and { apps }). Answers what printRooms shows.
 */
export async function runRooms(options, startNodes) {
  const { rooms, roomPages, seconds, history } = options;
  const redis = options.cluster
    ? await startRedisCluster({ primaries: options.primaries, replicas: options.replicas })
    : await startRedis();
  // Room r belongs to app r % apps (--apps: each app's rate-limit bucket is a key of its own).
  const apps = Array.from({ length: options.apps }, (_, i) => appOf(i));
  const target = options.cluster ? { cluster: redis.urls } : { redis: redis.url };
  const nodes = await startNodes(options.nodes, { ...target, apps });
  const ports = nodes.map((n) => n.port);
  const names = Array.from({ length: rooms }, (_, i) => roomName(i));
  const appOfRoom = (r) => apps[r % apps.length];
  const tokens = [];
  for (const [a, app] of apps.entries()) {
    const mine = names.filter((_, r) => r % apps.length === a);
    const minted = await roomToken(mine, app);
    for (const [j, token] of minted.entries()) tokens[a + j * apps.length] = token;
  }

  const latencies = new Uint32Array(500_001); // emit answered, 10 µs buckets up to 5 s
  const emitsPerRoom = new Uint32Array(rooms);
  let measuring = false;
  let delivered = 0;
  let answered = 0;
  let seq = 0;
  let publishing = true;
  let failed;
  const publishNext = () => {
    if (!publishing) return;
    const s = ++seq;
    const room = Math.floor(Math.random() * rooms);
    const sent = performance.now();
    emit(ports[s % ports.length], payloadOf(s, sent), {
      room: names[room],
      app: appOfRoom(room),
      ...(history > 0 ? { history: [history, 24] } : {}),
    }).then(
      () => {
        // Every answer within the window counts, whenever it was sent: the work Redis did in it.
        if (measuring) {
          answered++;
          emitsPerRoom[room]++;
          latencies[Math.min(500_000, Math.round((performance.now() - sent) * 100))]++;
        }
        if (options.rate === undefined) publishNext();
      },
      (error) => {
        failed = error;
      },
    );
  };

  // Page j of room r on node (r + j) % nodes: with as many pages as nodes, every node holds every room.
  const pages = [];
  let next = 0;
  const total = rooms * roomPages;
  await Promise.all(
    Array.from({ length: Math.min(100, total) }, async () => {
      while (next < total) {
        const i = next++;
        const room = i % rooms;
        const node = (room + Math.floor(i / rooms)) % ports.length;
        const onEvent = () => {
          if (measuring) delivered++;
        };
        pages.push(await openPage(ports[node], tokens[room], onEvent, names[room], appOfRoom(room)));
      }
    }),
  );

  const stats = () => redis.stats();
  const nodeCpu = () => Promise.all(nodes.map(async (n) => (await ask(n.child, 'cpu')).cpu));
  // Idle with the pages open (crons, cluster bus, leases), per second: subtracted below.
  const idleSeconds = 2;
  const [idleBefore, nodeIdleBefore] = [await stats(), await nodeCpu()];
  await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
  const [idleAfter, nodeIdleAfter] = [await stats(), await nodeCpu()];

  let ticker;
  if (options.rate === undefined) for (let i = 0; i < options.window; i++) publishNext();
  else {
    const began = performance.now();
    let sent = 0;
    ticker = setInterval(() => {
      const due = Math.floor(((performance.now() - began) / 1000) * options.rate);
      while (sent < due) {
        sent++;
        publishNext();
      }
    }, 5);
  }
  await new Promise((resolve) => setTimeout(resolve, 2000)); // warm-up
  const [before, nodeBefore] = [await stats(), await nodeCpu()];
  measuring = true;
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  measuring = false;
  const elapsed = (performance.now() - started) / 1000;
  const [after, nodeAfter] = [await stats(), await nodeCpu()];
  publishing = false;
  clearInterval(ticker);
  if (failed) throw failed;

  const quantile = (q) => {
    let target = Math.ceil(answered * q);
    for (let i = 0; i < latencies.length; i++) {
      target -= latencies[i];
      if (target <= 0) return i / 100;
    }
    return Number.NaN;
  };
  // Emits by the primary that owns their room's slot (one Redis: all on it).
  const primaryOfSlot = (slot) => (options.cluster ? after.findIndex((s) => s.role === 'primary' && owns(s, slot)) : 0);
  const roomEmits = after.map(() => 0);
  const roomsHeld = after.map(() => 0);
  const limitEmits = after.map(() => 0);
  for (let r = 0; r < rooms; r++) {
    const at = primaryOfSlot(slotOfRoom(appOfRoom(r), names[r]));
    roomEmits[at] += emitsPerRoom[r];
    roomsHeld[at]++;
    // This room's emits each took a token from its app's bucket.
    limitEmits[primaryOfSlot(slotOfBucket(appOfRoom(r)))] += emitsPerRoom[r];
  }
  const buckets = after.map((_, i) => apps.filter((app) => primaryOfSlot(slotOfBucket(app)) === i).length);
  const servers = after.map((s, i) => {
    const idle = (idleAfter[i].cpu - idleBefore[i].cpu) / idleSeconds;
    const cpu = s.cpu - before[i].cpu - idle * elapsed;
    return {
      port: s.port,
      role: s.role,
      perEmit: cpu / answered,
      busy: (s.cpu - before[i].cpu) / (elapsed * 1e6),
      idle: idle / 1e6,
      scriptsPerEmit: (s.scripts - before[i].scripts) / answered,
      roomShare: roomEmits[i] / answered,
      roomsHeld: roomsHeld[i],
      keys: s.keys,
      /** The share of the API requests whose app's rate-limit bucket this server holds. */
      limit: limitEmits[i] / answered,
      buckets: buckets[i],
    };
  });
  const result = {
    cluster: options.cluster,
    apps: options.apps,
    offered: options.rate,
    emits: answered / elapsed,
    p50: quantile(0.5),
    p99: quantile(0.99),
    delivered: delivered / (answered * roomPages),
    nodeCpu: nodes.map(
      (_, i) =>
        (nodeAfter[i] - nodeBefore[i] - ((nodeIdleAfter[i] - nodeIdleBefore[i]) / idleSeconds) * elapsed) / answered,
    ),
    nodeBusy: nodes.map((_, i) => (nodeAfter[i] - nodeBefore[i]) / (elapsed * 1e6)),
    servers,
  };
  for (const page of pages) page.close();
  await new Promise((resolve) => setTimeout(resolve, 200));
  await Promise.all(nodes.map((n) => stop(n.child)));
  await stop(redis.keeper);
  return result;
}

const primariesOf = (r) => r.servers.filter((s) => s.role === 'primary');
/** Redis CPU per emit, summed over every redis-server (replicas included). */
export const totalPerEmit = (r) => r.servers.reduce((sum, s) => sum + s.perEmit, 0);
const primaryTotal = (r) => primariesOf(r).reduce((sum, s) => sum + s.perEmit, 0);
/** The busiest primary's part of the primaries' Redis CPU. */
export const topShare = (r) => Math.max(...primariesOf(r).map((s) => s.perEmit)) / primaryTotal(r);

/**
 * Splits a cluster's CPU per emit into a room script's cost R (µs per emit into a room the primary
 * holds) and the rate-limit take's L (µs per API request, on the primary of the app's bucket):
 * primary i spends R x (its share of room emits) + L x (its share of the requests' buckets); least
 * squares over the primaries. When both shares are alike on every primary (one hot room on its
 * app's bucket's primary), L is unknown.
 */
export function splitCosts(r) {
  const primaries = primariesOf(r);
  let ss = 0;
  let sh = 0;
  let hh = 0;
  let cs = 0;
  let ch = 0;
  for (const p of primaries) {
    const h = p.limit;
    ss += p.roomShare * p.roomShare;
    sh += p.roomShare * h;
    hh += h * h;
    cs += p.perEmit * p.roomShare;
    ch += p.perEmit * h;
  }
  const det = ss * hh - sh * sh;
  if (Math.abs(det) < 1e-9) return { room: cs / ss, limit: Number.NaN };
  return { room: (cs * hh - ch * sh) / det, limit: (ss * ch - sh * cs) / det };
}

const f1 = (n) => n.toFixed(1);
const bucketText = (s, apps) => {
  if (s.buckets === 0) return '';
  if (apps === 1) return ", the app's rate-limit bucket";
  return `, rate-limit buckets of ${s.buckets} of ${apps} apps (${pct(s.limit)} of requests)`;
};
const pct = (n) => `${Math.round(n * 100)}%`;

/** Prints one rooms run. */
export function printRooms(name, r, roomPages) {
  console.log(
    `  ${name.padEnd(14)} ${Math.round(r.emits).toString().padStart(6)} emits/s answered${r.offered === undefined ? '' : ` of ${r.offered} offered`}   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms   ` +
      `pages got ${(r.delivered * 100).toFixed(1)}% of ${roomPages} per emit`,
  );
  console.log(
    `      node CPU per emit: ${r.nodeCpu.map((c, i) => `${c.toFixed(0)} µs (${pct(r.nodeBusy[i])} busy)`).join(' + ')}`,
  );
  const total = totalPerEmit(r);
  for (const s of r.servers) {
    const what =
      s.role === 'primary'
        ? `${s.roomsHeld} rooms, ${pct(s.roomShare)} of emits' rooms${bucketText(s, r.apps)}`
        : 'replica';
    console.log(
      `      redis :${s.port} ${s.role.padEnd(7)} ${f1(s.perEmit).padStart(6)} µs per emit (${pct(s.perEmit / total).padStart(4)} of Redis CPU, ` +
        `${pct(s.busy)} busy, idle ${pct(s.idle)})   ${s.scriptsPerEmit.toFixed(2)} scripts per emit${s.scriptsPerEmit >= 0.01 ? ` (${f1(s.perEmit / s.scriptsPerEmit)} µs each)` : ''}   ${s.keys} keys   ${what}`,
    );
  }
  const primaries = primariesOf(r).length;
  console.log(
    `      Redis CPU per emit: ${f1(total)} µs in all` +
      (primaries > 1 ? `, busiest primary ${pct(topShare(r))} of the primaries' (goal <= 40%)` : ''),
  );
  // One app: the same without its rate-limit takes (as if many apps spread their buckets). With
  // several apps the buckets spread like the rooms, and the split cannot tell them apart.
  if (primaries > 1 && r.apps === 1) {
    const split = splitCosts(r).limit;
    const limit = Number.isNaN(split) ? 0 : split;
    const rooms = primariesOf(r).map((s) => s.perEmit - s.limit * limit);
    const sum = rooms.reduce((a, b) => a + b, 0);
    console.log(
      `      rooms' scripts alone (less the rate-limit takes, ${f1(limit)} µs per emit): ${rooms.map((c) => pct(c / sum)).join(' / ')} of their CPU`,
    );
  }
}

/** Prints what the rooms runs compare: cluster against one Redis per pair of runs, and extrapolations. */
export function printRoomsSummary(runs, primaries, rooms) {
  const one = runs.filter((run) => !run.result.cluster).map((run) => run.result);
  const many = runs.filter((run) => run.result.cluster).map((run) => run.result);
  if (one.length === 0 || many.length === 0) return;
  console.log('  rooms cluster against rooms redis, run by run (Redis CPU per emit, every redis-server):');
  for (let i = 0; i < Math.min(one.length, many.length); i++) {
    const a = totalPerEmit(one[i]);
    const b = totalPerEmit(many[i]);
    console.log(
      `    run ${i + 1}: ${f1(b)} µs / ${f1(a)} µs = ${(b / a).toFixed(2)}x (goal <= 1.2x); busiest primary ${pct(topShare(many[i]))} (goal <= 40%)`,
    );
  }
  const median = (values) => {
    const sorted = [...values].sort((x, y) => x - y);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  };
  const single = median(one.map(totalPerEmit));
  console.log('  extrapolated, each primary on a core of its own (medians of the runs above, not measured as such):');
  console.log(`    one Redis: ${f1(single)} µs per emit: ${Math.round(1e6 / single)} emits/s`);
  if (many[0].apps > 1) {
    // Rooms and buckets both spread: a primary's core carries its share of the cluster's CPU per emit.
    const cluster = median(many.map(totalPerEmit));
    console.log(`    cluster: ${f1(cluster)} µs per emit in all (rooms and rate-limit buckets spread)`);
    for (const k of [primaries, 6, 12].filter((k, i, all) => all.indexOf(k) === i))
      console.log(`    ${String(k).padStart(2)} primaries: ${Math.round((k * 1e6) / cluster)} emits/s`);
    return;
  }
  const split = many.map(splitCosts);
  const room = median(split.map((s) => s.room));
  const limits = split.map((s) => s.limit).filter((l) => !Number.isNaN(l));
  const limit = limits.length > 0 ? median(limits) : 0;
  console.log(
    `    cluster: a room's emit ${f1(room)} µs on its room's primary, the app's rate-limit take ${f1(limit)} µs on one primary per API request`,
  );
  console.log(
    `    one primary core: ${Math.round(1e6 / room)} emits/s into its rooms (also the ceiling of one hot room)`,
  );
  if (rooms === 1) return; // one room is one slot: more primaries do not help it
  for (const k of [primaries, 6, 12].filter((k, i, all) => all.indexOf(k) === i)) {
    // Rooms spread evenly; one app's bucket primary also takes every request's limit take.
    const manyApps = (k * 1e6) / room;
    const oneApp = 1e6 / (room / k + limit);
    console.log(
      `    ${String(k).padStart(2)} primaries: ${Math.round(manyApps)} emits/s of many apps; one app alone ${Math.round(oneApp)} emits/s (its bucket's primary)`,
    );
  }
}
