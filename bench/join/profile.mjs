// Preloaded into each server of bench:join when BENCH_PROF names a folder: a CPU profile of the storm
// alone (from 'profile-start' to 'profile-stop' over IPC), not of the server's start or its pages' close.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

const session = new Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) =>
    session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
  );

process.on('message', async (message) => {
  if (message === 'profile-start') {
    await post('Profiler.enable');
    await post('Profiler.start');
    process.send?.('profile-started');
  }
  if (message === 'profile-stop') {
    const { profile } = await post('Profiler.stop');
    const file = join(process.env.BENCH_PROF, `${process.env.BENCH_SYSTEM}.${process.pid}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    process.send?.('profile-stopped');
  }
});
