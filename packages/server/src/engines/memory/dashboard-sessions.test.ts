import { dashboardSessionsContract } from '../contract/dashboard-sessions.contract.js';
import { MemoryDashboardSessionStore } from './dashboard-sessions.js';

dashboardSessionsContract('MemoryDashboardSessionStore', async () => ({
  store: new MemoryDashboardSessionStore(),
  cleanup: async () => {},
}));
