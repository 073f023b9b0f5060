// Replays the Dockerfile's steps in a clean temp folder, as the image build would run them, then
// starts the service from the last stage's files with its ENTRYPOINT, CMD and ENV, probes it with
// the HEALTHCHECK command and stops it with the STOPSIGNAL. `npm run test:docker-steps`; it takes
// minutes (a full `npm ci` and build), so it is not part of `npm test`.
//
// What it cannot do here (no image can be pulled or built on this machine), it says as it goes:
// - each stage's `/` is a folder under the temp one, not the node:20-bookworm-slim image: Node, npm
//   and the shell are this machine's;
// - system steps (apt-get, groupadd, useradd) need root and the image's OS: listed, not run; the
//   folders they make are made, and, when this runs as root, the service runs as the USER's uid and
//   gid (from useradd --uid and groupadd --gid) with the folders chown gives it; else as this user;
// - the service listens on 127.0.0.1 and a free port instead of 0.0.0.0:4000 (loopback only here).
// .dockerignore is applied with the patterns it uses (`**/name`, `name`); other forms are refused.
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { basename, dirname, isAbsolute, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const CONTEXT = fileURLToPath(new URL('..', import.meta.url));
const SYSTEM_COMMANDS = new Set(['apt-get', 'groupadd', 'useradd']);
const keep = process.argv.includes('--keep');

/** The Dockerfile's instructions: continuation lines joined, comments and blank lines left out. */
export function parseDockerfile(text) {
  const instructions = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (pending === '' && (line.trim() === '' || line.trim().startsWith('#'))) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    const whole = (pending + line.trim()).trim();
    pending = '';
    const [word, ...rest] = whole.split(/\s+/);
    instructions.push({ op: word.toUpperCase(), args: whole.slice(word.length).trim(), words: rest });
  }
  return instructions;
}

/** A .dockerignore of `**\/name` and `name` lines, as a test of a path relative to the context. */
export function ignoreFilter(text) {
  const anywhere = new Set();
  const atRoot = new Set();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('**/') && !line.slice(3).includes('/')) anywhere.add(line.slice(3));
    else if (!line.includes('/') && !line.includes('*')) atRoot.add(line);
    else throw new Error(`.dockerignore: ${line}: only "**/name" and "name" patterns are replayed here`);
  }
  const matches = (name, pattern) => (pattern.startsWith('*.') ? name.endsWith(pattern.slice(1)) : name === pattern);
  return (path) => {
    const parts = path.split('/').filter(Boolean);
    if (parts.length === 0) return false;
    if ([...atRoot].some((p) => p === parts[0])) return true;
    return parts.some((part) => [...anywhere].some((p) => matches(part, p)));
  };
}

function jsonArray(args, what) {
  try {
    const value = JSON.parse(args);
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
  } catch {}
  throw new Error(`${what} must be in exec form (a JSON array): ${args}`);
}

function parseEnv(args) {
  const env = {};
  for (const pair of args.split(/\s+/).filter(Boolean)) {
    const at = pair.indexOf('=');
    if (at < 1) throw new Error(`ENV ${pair}: only NAME=value pairs are replayed`);
    env[pair.slice(0, at)] = pair.slice(at + 1).replace(/^"(.*)"$/, '$1');
  }
  return env;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const say = (text) => process.stdout.write(`docker-steps: ${text}\n`);

export async function replay() {
  const started = Date.now();
  const instructions = parseDockerfile(readFileSync(join(CONTEXT, 'Dockerfile'), 'utf8'));
  const ignored = ignoreFilter(readFileSync(join(CONTEXT, '.dockerignore'), 'utf8'));
  const root = mkdtempSync(join(tmpdir(), 'realtime-docker-steps-'));
  say(`replaying Dockerfile in ${root}`);
  const stages = new Map();
  let stage;
  const inStage = (s, path) => join(s.root, path);
  const resolveIn = (s, path) => (posix.isAbsolute(path) ? path : posix.join(s.workdir, path));
  try {
    for (const { op, args, words } of instructions) {
      switch (op) {
        case 'FROM': {
          const name = words[1]?.toUpperCase() === 'AS' ? words[2] : String(stages.size);
          stage = {
            name,
            image: words[0],
            root: join(root, name),
            workdir: '/',
            env: {},
            user: 'root',
            users: new Map(),
            owned: [],
            meta: {},
          };
          mkdirSync(stage.root, { recursive: true });
          stages.set(name, stage);
          say(`stage ${name} (FROM ${words[0]}: this machine's Node ${process.version} stands in for the image)`);
          break;
        }
        case 'WORKDIR':
          stage.workdir = resolveIn(stage, args);
          mkdirSync(inStage(stage, stage.workdir), { recursive: true });
          break;
        case 'ENV':
          Object.assign(stage.env, parseEnv(args));
          break;
        case 'COPY': {
          const from = words[0]?.startsWith('--from=') ? words[0].slice('--from='.length) : undefined;
          const paths = from === undefined ? words : words.slice(1);
          const dest = resolveIn(stage, paths.at(-1));
          const sources = paths.slice(0, -1);
          const intoDir = dest.endsWith('/') || sources.length > 1;
          for (const source of sources) {
            let origin;
            let filter = () => true;
            if (from === undefined) {
              if (isAbsolute(source) || source.includes('..')) throw new Error(`COPY ${source}: outside the context`);
              origin = join(CONTEXT, source);
              filter = (path) => !ignored(relative(CONTEXT, path).split('\\').join('/'));
            } else {
              const other = stages.get(from);
              if (!other) throw new Error(`COPY --from=${from}: no such stage`);
              origin = inStage(other, source);
            }
            if (!existsSync(origin)) throw new Error(`COPY ${from ? `--from=${from} ` : ''}${source}: not found`);
            const isDir = statSync(origin).isDirectory();
            const target = inStage(stage, intoDir && !isDir ? posix.join(dest, basename(source)) : dest);
            mkdirSync(isDir ? target : dirname(target), { recursive: true });
            cpSync(origin, target, { recursive: true, filter, verbatimSymlinks: true });
          }
          say(`COPY ${args}`);
          break;
        }
        case 'RUN': {
          const first = args.split(/\s+/)[0];
          if (SYSTEM_COMMANDS.has(first)) {
            say(`NOT RUN (a system step: root and the image's OS): RUN ${args}`);
            // The folders the system step makes, so later steps find them.
            for (const made of args.matchAll(/mkdir -p ((?:\/[\w./-]+\s*)+)/g)) {
              for (const dir of made[1].trim().split(/\s+/)) mkdirSync(inStage(stage, dir), { recursive: true });
            }
            // The user it adds and the folders it gives them, for the run as that user (as root only).
            const uid = /useradd\b[^&]*--uid (\d+)/.exec(args)?.[1];
            const gid = /groupadd\b[^&]*--gid (\d+)/.exec(args)?.[1];
            const name = /useradd\b[^&]*\s([a-z_][a-z0-9_-]*)\s*(?:&&|$)/.exec(args)?.[1];
            if (uid && gid && name) stage.users.set(name, { uid: Number(uid), gid: Number(gid) });
            for (const owned of args.matchAll(/chown ([a-z_][a-z0-9_-]*):[a-z_][a-z0-9_-]* ((?:\/[\w./-]+\s*)+)/g)) {
              stage.owned.push(
                ...owned[2]
                  .trim()
                  .split(/\s+/)
                  .map((dir) => ({ user: owned[1], dir })),
              );
            }
            break;
          }
          say(`RUN ${args}`);
          const env = Object.fromEntries(
            Object.entries(process.env).filter(([name]) => !name.startsWith('npm_') && !name.startsWith('REALTIME_')),
          );
          const result = spawnSync('sh', ['-c', args], {
            cwd: inStage(stage, stage.workdir),
            env: { ...env, ...stage.env },
            stdio: 'inherit',
          });
          if (result.status !== 0) throw new Error(`RUN ${args}: exit ${result.status}`);
          break;
        }
        case 'USER':
          stage.user = args;
          break;
        case 'ENTRYPOINT':
        case 'CMD':
        case 'HEALTHCHECK':
        case 'STOPSIGNAL':
        case 'VOLUME':
        case 'EXPOSE':
          stage.meta[op] = args;
          break;
        default:
          throw new Error(`${op}: not replayed by this script; teach it or leave the instruction out`);
      }
    }
    await runImage(stage);
    say(`done in ${Math.round((Date.now() - started) / 1000)} s`);
  } finally {
    if (keep) say(`kept ${root}`);
    else rmSync(root, { recursive: true, force: true });
  }
}

/** Starts the last stage as the container would, probes it with its HEALTHCHECK, stops it with its STOPSIGNAL. */
async function runImage(stage) {
  const mapArg = (arg) => (arg.startsWith('/') && existsSync(join(stage.root, arg)) ? join(stage.root, arg) : arg);
  const entry = jsonArray(stage.meta.ENTRYPOINT, 'ENTRYPOINT').map(mapArg);
  const cmd = jsonArray(stage.meta.CMD, 'CMD');
  const health = jsonArray(stage.meta.HEALTHCHECK.replace(/^.*?\bCMD\s+/, ''), 'HEALTHCHECK CMD').map(mapArg);
  const signal = stage.meta.STOPSIGNAL ?? 'SIGTERM';
  const volume = jsonArrayOrWord(stage.meta.VOLUME);
  const port = String(await freePort());
  const env = {
    PATH: process.env.PATH,
    HOME: stage.root,
    ...stage.env,
    REALTIME_HOST: '127.0.0.1',
    REALTIME_PORT: port,
    REALTIME_DATA: join(stage.root, stage.env.REALTIME_DATA ?? volume),
  };
  const as = runAs(stage);
  say(`starting ${[...entry, ...cmd].join(' ')} (port ${port}, data in the VOLUME ${volume})`);
  const child = spawn(entry[0], [...entry.slice(1), ...cmd], {
    cwd: join(stage.root, stage.workdir),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...as,
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise((resolve) => child.once('exit', (code, sig) => resolve({ code, sig })));
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const probe = spawnSync(health[0], health.slice(1), { env, timeout: 5000, ...as });
      if (probe.status === 0) break;
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`HEALTHCHECK never passed\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    say('HEALTHCHECK passed');
    for (const path of ['/service/realtime/ready', '/service/realtime/browser.js', '/metrics']) {
      const answer = await fetch(`http://127.0.0.1:${port}${path}`);
      if (answer.status !== 200) throw new Error(`GET ${path}: ${answer.status}`);
      say(`GET ${path}: 200`);
    }
    child.kill(signal);
    const end = await exited;
    if (end.code !== 0) throw new Error(`after ${signal} the service exited ${end.code ?? end.sig}\n${output}`);
    if (!output.includes('"msg":"stopped"')) throw new Error(`no "stopped" line after ${signal}\n${output}`);
    say(`${signal}: drained and exited 0`);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

/**
 * The USER of the last stage, as its uid and gid, when this replay runs as root: the service then
 * runs as that user, reads the copied files and writes only the folders the system step gave it.
 * Otherwise it runs as this user, and says so.
 */
function runAs(stage) {
  if (stage.user === 'root') return {};
  const user = stage.users.get(stage.user);
  if (!user) throw new Error(`USER ${stage.user}: no useradd --uid and groupadd --gid for it in the system steps`);
  if (process.getuid?.() !== 0) {
    say(`USER ${stage.user}: not switched to (this replay runs as ${userInfo().username}, not root)`);
    return {};
  }
  // The temp folder (made 0700) must be passable by that user, as / is in an image.
  chmodSync(dirname(stage.root), 0o755);
  for (const { user: owner, dir } of stage.owned) {
    const to = stage.users.get(owner);
    if (to) chownSync(join(stage.root, dir), to.uid, to.gid);
  }
  say(`USER ${stage.user}: the service and its HEALTHCHECK run as uid ${user.uid}, gid ${user.gid}`);
  return { uid: user.uid, gid: user.gid };
}

function jsonArrayOrWord(args) {
  if (args === undefined) throw new Error('the last stage has no VOLUME');
  return args.startsWith('[') ? jsonArray(args, 'VOLUME')[0] : args.split(/\s+/)[0];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  replay().catch((error) => {
    process.stderr.write(`docker-steps: ${error.message}\n`);
    process.exit(1);
  });
}
