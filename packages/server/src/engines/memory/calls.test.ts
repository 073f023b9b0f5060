import { callStoreContract } from '../contract/calls.contract.js';
import { answeringLater, inProcess } from '../contract/harness.js';
import { MemoryCallStore } from './calls.js';

callStoreContract(
  'MemoryCallStore',
  inProcess(() => new MemoryCallStore()),
);

// The embedded engine's store with every call answering on a later turn (asyncEngine), so racing
// calls interleave as they would over a network.
callStoreContract(
  'embedded engine, answering later',
  answeringLater('calls', (engine) => engine.calls),
);
