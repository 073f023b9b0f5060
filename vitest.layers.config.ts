import { defineConfig } from 'vitest/config';
import base, { SHAPED_LINKS } from './vitest.config.js';

/** `npm run test:layers`: the shaped-link suites alone (`npm test` runs them first: SHAPED_LINKS in vitest.config.ts). */
export default defineConfig({
  resolve: base.resolve,
  test: {
    include: [SHAPED_LINKS],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
