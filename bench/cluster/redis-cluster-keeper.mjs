// A Redis Cluster for a cluster bench, kept by this small process (BENCH_REDIS_CLUSTER: JSON
// { primaries, replicas }): redis-servers with --cluster-enabled on free ports of 127.0.0.1 (no
// persistence, one temp folder), joined with `redis-cli --cluster create`. It reports the seed URLs
// and each node (port, pid, role, slots) once every node says cluster_state:ok, answers 'stats' (CPU
// time, keys and script calls of each redis-server), and kills every redis-server by its pid when the
// bench ends or goes away (its IPC channel closes), even after a SIGKILL.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { exitOnSignals, watchParent } from './child.mjs';
import { answering, command, freePort, isFree, serverArgs, statsOf } from './resp.mjs';

const { primaries = 3, replicas = 0 } = JSON.parse(process.env.BENCH_REDIS_CLUSTER ?? '{}');
const SLOTS = 16_384;
const dir = mkdtempSync(join(tmpdir(), 'realtime-bench-redis-cluster-'));
const servers = new Map(); // port -> child
let ending = false;
function cleanup() {
  ending = true;
  for (const server of servers.values()) server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
// The nodes end at the same signal: Redis goes half a second later, once they are gone.
watchParent(cleanup, 500);
exitOnSignals(cleanup, 500);
process.once('exit', cleanup);

/** A free port whose cluster bus port (port + 10000) is free too. */
async function clusterPort(taken) {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = await freePort();
    if (port + 10_000 > 65_535 || taken.has(port) || !(await isFree(port + 10_000))) continue;
    taken.add(port);
    return port;
  }
  throw new Error('no free port pair for a cluster node');
}

/** The nodes as `port` sees them (CLUSTER NODES): id, port, role, owned slot ranges. */
async function clusterNodes(port) {
  const answer = await command(port, 'CLUSTER NODES');
  const nodes = [];
  for (const line of answer.split('\n').slice(1)) {
    const [id, address, flags, , , , , , ...ranges] = line.trim().split(' ');
    if (!id || !address || !flags) continue;
    const slots = [];
    for (const range of ranges) {
      if (range.startsWith('[')) continue; // being migrated
      const [from, to] = range.split('-').map(Number);
      slots.push([from, to ?? from]);
    }
    nodes.push({
      id,
      port: Number(address.split('@')[0].split(':')[1]),
      role: flags.includes('master') ? 'primary' : 'replica',
      slots,
    });
  }
  return nodes;
}

const taken = new Set();
const ports = [];
for (let i = 0; i < primaries * (1 + replicas); i++) ports.push(await clusterPort(taken));
for (const port of ports) {
  const nodeDir = join(dir, String(port));
  mkdirSync(nodeDir);
  const server = spawn(
    process.env.REDIS_SERVER_PATH || 'redis-server',
    [...serverArgs(port, nodeDir), '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  servers.set(port, server);
  server.once('exit', (code, signal) => {
    if (ending) return;
    process.stderr.write(`redis-server ${port} exited (${code ?? signal})\n`);
    process.exit(1);
  });
}
await Promise.all(ports.map(answering));
await promisify(execFile)(
  process.env.REDIS_CLI_PATH || 'redis-cli',
  [
    '--cluster',
    'create',
    ...ports.map((port) => `127.0.0.1:${port}`),
    '--cluster-replicas',
    String(replicas),
    '--cluster-yes',
  ],
  { timeout: 30_000 },
);

// Every node says ok and sees every primary with its slots (bounded: 30 s).
let nodes;
for (let tries = 0; ; tries++) {
  const views = await Promise.all(
    ports.map(async (port) => ({ info: await command(port, 'CLUSTER INFO'), nodes: await clusterNodes(port) })),
  );
  const owners = (view) =>
    view.nodes
      .filter((node) => node.role === 'primary' && node.slots.length > 0)
      .map((node) => `${node.port}:${JSON.stringify(node.slots)}`)
      .sort()
      .join(' ');
  const ok = views.every(
    (view) =>
      view.info.includes('cluster_state:ok') &&
      view.info.includes(`cluster_slots_ok:${SLOTS}`) &&
      view.nodes.filter((node) => node.role === 'replica').length === primaries * replicas &&
      owners(view) === owners(views[0]),
  );
  if (ok) {
    nodes = views[0].nodes;
    break;
  }
  if (tries > 600) throw new Error('the bench Redis Cluster did not settle in 30 s');
  await new Promise((resolve) => setTimeout(resolve, 50));
}

const withPid = (node) => ({ ...node, pid: servers.get(node.port).pid });
process.send({ urls: ports.map((port) => `redis://127.0.0.1:${port}`), nodes: nodes.map(withPid) });
process.on('message', async (message) => {
  if (message === 'stats')
    process.send({
      stats: await Promise.all(nodes.map(async (node) => ({ ...withPid(node), ...(await statsOf(node.port)) }))),
    });
});
