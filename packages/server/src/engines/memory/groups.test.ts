import { groupStoreContract } from '../contract/groups.contract.js';
import { answeringLater, inProcess } from '../contract/harness.js';
import { MemoryGroupStore } from './groups.js';

groupStoreContract(
  'MemoryGroupStore',
  inProcess(() => new MemoryGroupStore()),
);

// The embedded engine's store with every call answering on a later turn (asyncEngine), so racing
// calls interleave as they would over a network.
groupStoreContract(
  'embedded engine, answering later',
  answeringLater('groups', (engine) => engine.groups),
);
