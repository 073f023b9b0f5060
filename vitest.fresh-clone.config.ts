import { defineConfig } from 'vitest/config';

/**
 * `npm run test:fresh-clone`: the README's first run in a clone of its own, after one `npm ci`.
 * Left out of `npm test` (vitest.config.ts) for its minutes: CI itself runs on a fresh clone, and
 * test/readme/readme-cli.test.ts tries every README command there.
 */
export default defineConfig({
  test: {
    include: ['test/readme/fresh-clone.test.ts'],
    pool: 'forks',
  },
});
