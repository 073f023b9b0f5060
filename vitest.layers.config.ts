import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/** `npm run test:layers`: test/browser/shaped-layers.check.ts (why it is not in `npm test` is written there). */
export default defineConfig({
  resolve: base.resolve,
  test: {
    include: ['test/browser/shaped-layers.check.ts'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
