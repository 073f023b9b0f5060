// Bundles the SDK into one ES module for pages that load it without a bundler:
// dist/realtime.browser.js, every dependency included (@realtime/protocol, @noble/*), minified, with
// dist/realtime.browser.js.map beside it (the sources inside it, so it needs no src/ to read).
// Run: node packages/browser/build.mjs (its size: packages/browser/README.md)
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

await build({
  entryPoints: [here('./src/index.ts')],
  outfile: here('./dist/realtime.browser.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  sourcesContent: true,
  // The protocol package's sources, as the tests use them, so the bundle never holds a stale build.
  alias: { '@realtime/protocol': here('../protocol/src/index.ts') },
  logLevel: 'warning',
});
