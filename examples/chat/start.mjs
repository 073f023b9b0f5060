// npm start: the service (embedded engine, ./data) on 127.0.0.1:4000 and the chat demo on :3000.
// PORT, DEMO_PORT and DATA change those. The service alone: `npx realtime serve`.
import { resolve } from 'node:path';
import { developmentAppBanner, ensureDevelopmentApp, startServer } from '@realtime/server';
import { startDemo } from './server.mjs';

const port = Number(process.env.PORT ?? 4000);
const demoPort = Number(process.env.DEMO_PORT ?? 3000);
const dataDir = resolve(process.env.DATA ?? './data');

const { app, created } = ensureDevelopmentApp(dataDir);
const service = await startServer({ host: '127.0.0.1', port, dataDir });
service.log.info({ data: dataDir }, `listening on ${service.url}`);
if (created) process.stdout.write(developmentAppBanner(app, service.url));
const demo = await startDemo({ serviceUrl: service.url, key: app.key, secret: app.secret, port: demoPort });
process.stdout.write(`\nChat demo: open ${demo.url} in two browser tabs (add ?name=alice to choose a name).\n\n`);

let stopping = false;
async function stop() {
  if (stopping) process.exit(1);
  stopping = true;
  await demo.close();
  await service.close();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
