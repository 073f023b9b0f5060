// The browser tests' own helpers for bench:calls' layers part, so the bench shapes links and launches
// Chromium exactly as test/browser does: test/browser/shaped-link.ts (network namespaces + tc tbf),
// fake-video.ts (a grain camera) and chromium.ts. They are TypeScript and not built, so esbuild (a
// dev dependency) bundles them once per run into a file in node_modules/.cache (removed once loaded), where their own imports
// (playwright-core) resolve from the workspace's node_modules.
import { mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** { shapedLinks, canShape, ownLeftovers, secureOriginsFlag, writeGrainVideo, launchChromium, closeChromium, servePages } */
export async function loadBrowserHelpers() {
  const dir = `${root}node_modules/.cache/realtime-bench`;
  mkdirSync(dir, { recursive: true });
  const outfile = `${dir}/browser-helpers-${process.pid}.mjs`;
  await build({
    stdin: {
      contents: [
        "export { shapedLinks, canShape, ownLeftovers, secureOriginsFlag } from './test/browser/shaped-link.ts';",
        "export { writeGrainVideo } from './test/browser/fake-video.ts';",
        "export { launchChromium, closeChromium, servePages } from './test/browser/chromium.ts';",
      ].join('\n'),
      resolveDir: root,
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outfile,
    logLevel: 'warning',
  });
  try {
    return await import(pathToFileURL(outfile).href);
  } finally {
    rmSync(outfile, { force: true });
  }
}
