// A page process of bench:scale: opens its share of the pages (BENCH_PAGES_JOB: JSON { ports, first,
// count, token, concurrency }; global page i goes to ports[i % ports.length]) and reports
// { opened } once every page joined. For each bench event it records, per page, the time from the
// emit (the bench's monotonic clock, shared by every process of the machine) to the page reading it,
// and sends { seq, latencies, missing } once all its pages have it, or at once when asked { flush: seq }.
import { exitOnSignals, watchParent } from './child.mjs';
import { openPage } from './service.mjs';

watchParent();
exitOnSignals();
const { ports, first, count, token, concurrency = 100 } = JSON.parse(process.env.BENCH_PAGES_JOB);
const now = () => Number(process.hrtime.bigint()) / 1e6;

/** seq -> what arrived: latencies by local page index (NaN: not yet), and how many arrived. */
const events = new Map();
function recordOf(seq) {
  let record = events.get(seq);
  if (!record) {
    record = { latencies: new Float64Array(count).fill(Number.NaN), got: 0, sent: false };
    events.set(seq, record);
  }
  return record;
}
function report(seq, record) {
  record.sent = true;
  const latencies = [];
  for (const l of record.latencies) if (!Number.isNaN(l)) latencies.push(l);
  process.send({ seq, latencies, missing: count - latencies.length });
}

const pages = [];
let next = 0;
const workers = Array.from({ length: Math.min(concurrency, count) }, async () => {
  while (next < count) {
    const local = next++;
    const global = first + local;
    const page = await openPage(ports[global % ports.length], token, (seq, sentMs) => {
      const arrived = now();
      const record = recordOf(seq);
      if (!Number.isNaN(record.latencies[local])) return;
      record.latencies[local] = arrived - sentMs;
      if (++record.got === count && !record.sent) report(seq, record);
    });
    pages.push(page);
  }
});
await Promise.all(workers);
process.send({ opened: pages.length });

process.on('message', (message) => {
  if (message?.flush !== undefined) {
    const record = recordOf(message.flush);
    if (!record.sent) report(message.flush, record);
  }
});
