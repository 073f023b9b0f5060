// Every process a cluster bench starts goes through here, so all of them end with the bench: on a
// normal exit, an error, Ctrl-C or SIGTERM (each child cleans up on SIGTERM). The children also exit
// by themselves when their IPC channel to the bench closes (child.mjs), which covers a bench killed
// with SIGKILL. Only the bench imports this module: it installs the bench's signal handlers.
import { fork } from 'node:child_process';

const children = new Set();

function killAll() {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  children.clear();
}

process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}
process.once('uncaughtException', (error) => {
  console.error(error);
  killAll();
  process.exit(1);
});
process.once('unhandledRejection', (error) => {
  console.error(error);
  killAll();
  process.exit(1);
});

/**
 * Forks `script` (a path or file URL) with IPC; resolves with the child and its first message once
 * it sent one (its "ready"), rejects if it exits before.
 */
export function start(script, { env = {}, execArgv = [] } = {}) {
  const child = fork(script, [], {
    execArgv,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return new Promise((resolve, reject) => {
    const early = (code, signal) => reject(new Error(`${script} exited at start (${code ?? signal})`));
    child.once('exit', early);
    child.once('message', (first) => {
      child.off('exit', early);
      resolve({ child, first });
    });
  });
}

/** Sends one message and resolves with the child's next message (its answer). */
export function ask(child, message) {
  return new Promise((resolve, reject) => {
    const gone = () => reject(new Error(`a child exited while asked ${JSON.stringify(message)}`));
    child.once('exit', gone);
    child.once('message', (answer) => {
      child.off('exit', gone);
      resolve(answer);
    });
    child.send(message);
  });
}

/** Ends one child (SIGTERM, then SIGKILL after 3 s) and waits for it. */
export function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export function stopAll() {
  return Promise.all([...children].map(stop));
}
