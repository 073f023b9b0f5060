// A forked child answering { id, op, args } with { id, result | error } (see unit.mjs).
import { fork } from 'node:child_process';

export async function forkRpc(url) {
  const child = fork(url, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map();
  let next = 0;
  await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${url} exited with ${code} before it was ready`)));
  });
  child.on('message', ({ id, result, error }) => {
    const pending = waiting.get(id);
    waiting.delete(id);
    if (error) pending?.reject(new Error(error));
    else pending?.resolve(result);
  });
  const call = (op, ...args) =>
    new Promise((resolve, reject) => {
      const id = ++next;
      waiting.set(id, { resolve, reject });
      child.send({ id, op, args });
    });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    call,
    async stop() {
      await call('close').catch(() => {});
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3000))]);
      child.kill('SIGKILL');
    },
  };
}
