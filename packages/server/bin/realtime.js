#!/usr/bin/env node
// The `realtime` command. This file is committed (dist/ is not), so npm links the bin when it
// installs, before the build has made dist/cli.js.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('realtime: the server is not built yet (no dist/cli.js): run `npm run build` first\n');
  process.exit(1);
}
await import(cli.href);
