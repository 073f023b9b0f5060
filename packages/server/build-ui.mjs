// Bundles the dashboard's page (ui/) into dist-ui/: one ES module with Preact and htm inside, the
// HTML, the CSS and the favicon. The service serves these files itself (src/dashboard/static-files.ts):
// no CDN at run time. Run: node packages/server/build-ui.mjs
import { copyFile, mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

await mkdir(here('./dist-ui'), { recursive: true });
await build({
  entryPoints: [here('./ui/src/main.ts')],
  outfile: here('./dist-ui/dashboard.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
for (const file of ['index.html', 'dashboard.css', 'favicon.svg']) {
  await copyFile(here(`./ui/${file}`), here(`./dist-ui/${file}`));
}
