import { limitsContract } from '../contract/limits.contract.js';
import { MemoryLimitStore } from './limits.js';

limitsContract('MemoryLimitStore', async () => ({ store: new MemoryLimitStore(), cleanup: async () => {} }));
