import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { asyncEngine } from './async-engine.js';
import { brokerContract } from './contract/broker.contract.js';
import { openEmbeddedEngine } from './embedded.js';

function openEngine() {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-broker-'));
  const engine = openEmbeddedEngine({ dataDir: dir, log: pino({ level: 'silent' }) });
  const cleanup = async () => {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { engine, cleanup };
}

brokerContract('embedded engine', async () => {
  const { engine, cleanup } = openEngine();
  return { broker: engine.broker, history: engine.history, webhooks: engine.webhooks, cleanup };
});

// Every store call and delivery on a later turn, as over a network. Two wrappers of one engine are
// two connections to the same backend: the peer publishes and subscribes beside the broker.
brokerContract('embedded engine, answering asynchronously', async () => {
  const { engine, cleanup } = openEngine();
  const one = asyncEngine(engine);
  const two = asyncEngine(engine);
  return { broker: one.broker, peer: two.broker, history: one.history, webhooks: one.webhooks, cleanup };
});
