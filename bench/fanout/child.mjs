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
    if (message === 'stop') process.exit(0);
  });
}
