import { idempotencyContract } from '../contract/idempotency.contract.js';
import { MemoryIdempotencyStore } from './idempotency.js';

idempotencyContract('MemoryIdempotencyStore', async () => ({
  store: new MemoryIdempotencyStore(),
  cleanup: async () => {},
}));
