/** What the dashboard's endpoints use of the service. */
import type { Logger } from 'pino';
import type { AppStore, LimitStore } from '../engines/types.js';
import type { TrustedProxies } from '../http/client-address.js';
import type { PasswordHash } from './password.js';
import type { SessionKeys } from './session.js';

export interface DashboardDeps {
  password: PasswordHash;
  keys: SessionKeys;
  apps: AppStore;
  limits: LimitStore;
  trusted: TrustedProxies;
  log: Logger;
  now: () => number;
}
