import { revocationsContract } from '../contract/revocations.contract.js';
import { MemoryRevocationStore } from './revocations.js';

revocationsContract('MemoryRevocationStore', async () => ({
  store: new MemoryRevocationStore(),
  cleanup: async () => {},
}));
