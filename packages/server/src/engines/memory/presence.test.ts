import { presenceContract } from '../contract/presence.contract.js';
import { MemoryPresenceStore } from './presence.js';

presenceContract('MemoryPresenceStore', async ({ offlineDelayMs }) => {
  const store = new MemoryPresenceStore({ offlineDelayMs });
  return { store, cleanup: async () => store.close() };
});
