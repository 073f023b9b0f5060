// Checks that packages/server/src imports point down its layers and that no file import cycle exists.
// A small script rather than dependency-cruiser: it needs no TypeScript compiler API (the typescript 7
// here is native and has none) and reads the whole tree in well under a second.
// Usage: node scripts/check-layers.mjs [srcDir]; exits 1 and prints each violation when any is found.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

// Rank of each top-level folder or root file of packages/server/src: a file may import its own rank
// or lower, never higher. Keep in step with docs/architecture.md.
export const LAYERS = {
  // The wiring: starts everything, so may import anything.
  'cli.ts': 4,
  'index.ts': 4,
  'lifecycle.ts': 4,
  lifecycle: 4,
  // The edges: what speaks to the outside world.
  http: 3,
  gateway: 3,
  dashboard: 3,
  // Features: each a module, service and store seam built on the core.
  apps: 2,
  rooms: 2,
  asks: 2,
  calls: 2,
  groups: 2,
  streams: 2,
  units: 2,
  webhooks: 2,
  users: 2,
  metrics: 2,
  config: 2,
  // The core: emit, hub, presence, events.
  core: 1,
  // The seams and their memory, SQLite and Redis stores.
  engines: 0,
  // Shared by every layer and importing none.
  'log.ts': 0,
};

// A feature's `*-module.ts` is its frame handlers, plugged into the gateway: it sits at the edge.
const EDGE_FILE = /-module\.ts$/;
const EDGE_RANK = 3;

// Imports that break the rule today, each with why it stays: `from -> to` (paths under src/).
export const ALLOWED = new Map([
  [
    'config/config-file.ts -> http/client-address.ts',
    'the config file names trusted proxies; TrustedProxies is an import-free parser http/ and the dashboard share',
  ],
]);

const SPECIFIER =
  /\b(import|export)\s(type\s)?(?:[^'";=(]*?\sfrom\s*)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Relative imports of one TypeScript source text: the specifier as written, and whether it is type only. */
export function importsOf(text) {
  const found = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[3] ?? m[4];
    if (spec?.startsWith('.')) found.push({ spec, typeOnly: m[2] !== undefined });
  }
  return found;
}

function listSources(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listSources(path));
    // Tests may reach across layers to set a scene, so only shipped sources are checked.
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts'))
      out.push(path);
  }
  return out;
}

function layerOf(file) {
  const top = file.split('/')[0];
  return top in LAYERS ? top : undefined;
}

function rankOf(file, layers) {
  return EDGE_FILE.test(file) ? EDGE_RANK : layers[layerOf(file)];
}

/**
 * The import graph of srcDir: file -> what it imports ({ to, typeOnly }), paths `/`-separated under srcDir.
 */
export function readGraph(srcDir) {
  const graph = new Map();
  const posix = (p) => p.split(sep).join('/');
  for (const abs of listSources(srcDir)) {
    const from = posix(relative(srcDir, abs));
    const targets = importsOf(readFileSync(abs, 'utf8')).map(({ spec, typeOnly }) => ({
      to: posix(relative(srcDir, resolve(dirname(abs), spec.replace(/\.js$/, '.ts')))),
      typeOnly,
    }));
    graph.set(from, targets);
  }
  return graph;
}

/** Every import that points up a layer, or leaves the layer table, and is not allowed. */
export function layerViolations(graph, layers = LAYERS, allowed = ALLOWED) {
  const problems = [];
  for (const [from, targets] of graph) {
    const fromLayer = layerOf(from);
    if (fromLayer === undefined) {
      problems.push(`${from}: not in the layer table`);
      continue;
    }
    // Type-only imports count here too: they say which layer a file is written against.
    for (const { to } of targets) {
      const toLayer = layerOf(to);
      if (toLayer === undefined || toLayer === fromLayer) continue;
      const [fromRank, toRank] = [rankOf(from, layers), rankOf(to, layers)];
      if (toRank > fromRank && !allowed.has(`${from} -> ${to}`))
        problems.push(`${from} -> ${to}: layer ${fromRank} imports layer ${toRank}`);
    }
  }
  return problems;
}

/**
 * Each file import cycle once, as its files (Tarjan's strongly connected components). Type-only imports
 * are left out: they are erased, so they order no module loading.
 */
export function fileCycles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  let next = 0;
  const visit = (node) => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const { to, typeOnly } of graph.get(node) ?? []) {
      if (typeOnly || !graph.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node), low.get(to)));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), index.get(to)));
    }
    if (low.get(node) !== index.get(node)) return;
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    const selfLoop = (graph.get(node) ?? []).some(({ to, typeOnly }) => to === node && !typeOnly);
    if (component.length > 1 || selfLoop) cycles.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return cycles;
}

export function check(srcDir) {
  const graph = readGraph(srcDir);
  return [...layerViolations(graph), ...fileCycles(graph).map((files) => `import cycle among: ${files.join(', ')}`)];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const srcDir = resolve(process.argv[2] ?? 'packages/server/src');
  const problems = check(srcDir);
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    console.error(`check-layers: ${problems.length} problem(s); the layers are in docs/architecture.md`);
    process.exit(1);
  }
}
