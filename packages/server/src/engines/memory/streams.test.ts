import { answeringLater, inProcess } from '../contract/harness.js';
import { streamStoreContract } from '../contract/streams.contract.js';
import { MemoryStreamStore } from './streams.js';

streamStoreContract(
  'MemoryStreamStore',
  inProcess(() => new MemoryStreamStore()),
);

// The embedded engine's store with every call answering on a later turn (asyncEngine), so racing
// calls interleave as they would over a network.
streamStoreContract(
  'embedded engine, answering later',
  answeringLater('streams', (engine) => engine.streams),
);
