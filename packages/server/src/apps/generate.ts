import { randomBytes } from 'node:crypto';
import type { App } from '../engines/types.js';
import { ALL_FEATURES, DEFAULT_RATE_LIMIT } from './defaults.js';

export function newAppKey(): string {
  return `app_${randomBytes(10).toString('hex')}`;
}

export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function newApp(fields: Partial<App> = {}): App {
  return {
    key: fields.key ?? newAppKey(),
    secret: fields.secret ?? newSecret(),
    name: fields.name ?? 'app',
    webhook: fields.webhook ?? '',
    features: fields.features ?? [...ALL_FEATURES],
    rateLimit: fields.rateLimit ?? { ...DEFAULT_RATE_LIMIT },
  };
}
