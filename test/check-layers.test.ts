import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { check, importsOf, LAYERS } from '../scripts/check-layers.mjs';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A src tree of the given files (path -> text) in a fresh temporary folder. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'layers-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe('scripts/check-layers.mjs', () => {
  it('reads import, export-from, type-only and dynamic imports, skipping packages', () => {
    const text = [
      "import { a } from './a.js';",
      "import type {\n  B,\n} from '../b.js';",
      "export { c } from './c.js';",
      "import 'pino';",
      "const d = await import('./d.js');",
    ].join('\n');
    expect(importsOf(text)).toEqual([
      { spec: './a.js', typeOnly: false },
      { spec: '../b.js', typeOnly: true },
      { spec: './c.js', typeOnly: false },
      { spec: './d.js', typeOnly: false },
    ]);
  });

  it('passes imports that point down, and a feature module importing the gateway', () => {
    const root = tree({
      'gateway/connection.ts': "import { emit } from '../core/emit.js';",
      'calls/call-module.ts': "import type { Connection } from '../gateway/connection.js';",
      'core/emit.ts': "import type { Broker } from '../engines/types.js';",
      'engines/types.ts': "import { log } from '../log.js';",
      'log.ts': 'export const log = 1;',
    });
    expect(check(root)).toEqual([]);
  });

  it('fails an import up a layer, even a type-only one, and a folder outside the table', () => {
    const root = tree({
      'core/emit.ts': "import type { Connection } from '../gateway/connection.js';",
      'gateway/connection.ts': '',
      'config/config-file.ts': "import { x } from '../dashboard/password.js';",
      'dashboard/password.ts': '',
      'misc/thing.ts': '',
    });
    expect(check(root).sort()).toEqual([
      'config/config-file.ts -> dashboard/password.ts: layer 2 imports layer 3',
      'core/emit.ts -> gateway/connection.ts: layer 1 imports layer 3',
      'misc/thing.ts: not in the layer table',
    ]);
  });

  it('fails a file cycle, but not one closed by a type-only import', () => {
    const root = tree({
      'core/a.ts': "import { b } from './b.js';",
      'core/b.ts': "export { c } from './c.js';",
      'core/c.ts': "import { a } from './a.js';",
      'core/hub.ts': "import { SIGNAL } from './signals.js';",
      'core/signals.ts': "import type { Page } from './hub.js';",
    });
    expect(check(root)).toEqual(['import cycle among: core/a.ts, core/b.ts, core/c.ts']);
  });

  it('passes on the service as it is, and docs/architecture.md lists every layer as the script does', () => {
    const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
    expect(check(here('../packages/server/src'))).toEqual([]);
    const doc = readFileSync(here('../docs/architecture.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `([^`/]+)\/?` \| (\d) \|/gm)].map(([, name, rank]) => [name, Number(rank)]);
    expect(Object.fromEntries(rows)).toEqual(LAYERS);
  });
});
