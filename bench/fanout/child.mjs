// Shared by the servers of bench:fanout: report the port over IPC, answer memory questions.
export function ready(port) {
  process.send?.({ port });
  process.on('message', (message) => {
    if (message === 'mem') {
      global.gc?.();
      global.gc?.();
      const { heapUsed, rss } = process.memoryUsage();
      process.send?.({ heapUsed, rss });
    }
    // CPU time of this server process (user + system, µs): per delivered message over a window.
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage();
      process.send?.({ cpu: user + system });
    }
    if (message === 'stop') process.exit(0);
  });
}
