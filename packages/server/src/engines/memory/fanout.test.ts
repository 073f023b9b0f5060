import { brokerContract } from '../contract/broker.contract.js';
import { MemoryBroker } from './broker.js';

brokerContract('MemoryBroker', async () => {
  const broker = new MemoryBroker();
  return { broker, cleanup: async () => broker.close() };
});
