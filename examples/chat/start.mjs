// npm start: the service (embedded engine, ./data) on 127.0.0.1:4000 and the chat demo on :3000.
// PORT, DEMO_PORT and DATA change those. The service alone: `npx realtime serve`.
// A development command: webhooks may go to http:// and local addresses (like serve --allow-private-webhooks).
// The dashboard is on: with REALTIME_DASHBOARD_PASSWORD_HASH's password, else a random one printed below.
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import {
  developmentAppBanner,
  ensureDevelopmentApp,
  handleStopSignals,
  hashDashboardPassword,
  startServer,
} from '@realtime/server';
import { startDemo } from './server.mjs';

const port = Number(process.env.PORT ?? 4000);
const demoPort = Number(process.env.DEMO_PORT ?? 3000);
const dataDir = resolve(process.env.DATA ?? './data');

// A password made here lives as long as this process: only its hash reaches the service.
const givenHash = process.env.REALTIME_DASHBOARD_PASSWORD_HASH || undefined;
const dashboardPassword = givenHash === undefined ? randomBytes(12).toString('base64url') : undefined;
const passwordHash = givenHash ?? (await hashDashboardPassword(dashboardPassword));

const service = await startServer({
  host: '127.0.0.1',
  port,
  dataDir,
  allowPrivateWebhooks: true,
  dashboard: { passwordHash },
});
// Once the service listens: a start that failed leaves no app whose credentials were never shown.
const development = await ensureDevelopmentApp({ dataDir });
const { app, created } = development;
service.log.info({ data: dataDir }, `listening on ${service.url}`);
// Banners go to stderr: stdout holds only the service's JSON log lines.
const ownData = dataDir === resolve('./data') ? {} : { dataDir };
if (created) process.stderr.write(developmentAppBanner(app, service.url, ownData));
// The app as the data folder holds it now: `npx realtime apps rotate-secret` reaches the demo at once.
// Were the app deleted, the demo keeps the last credentials it saw.
let last = app;
const demo = await startDemo({
  serviceUrl: service.url,
  app: async () => {
    last = (await development.current()) ?? last;
    return last;
  },
  port: demoPort,
});
process.stderr.write(
  [
    '',
    `Chat demo: open ${demo.url} in two browser tabs (add ?name=alice to choose a name).`,
    `Dashboard: ${service.url}/dashboard/${dashboardPassword ? ` (password: ${dashboardPassword})` : ''}`,
    'This is a development setup: webhooks may go to http:// and local addresses, e.g.',
    `  npx realtime apps set-webhook ${app.key} http://127.0.0.1:3001/realtime --allow-private-webhooks${
      ownData.dataDir ? ` --data ${JSON.stringify(ownData.dataDir)}` : ''
    }`,
    '',
    '',
  ].join('\n'),
);

// SIGTERM and SIGINT drain (a second one, a moment later, exits at once); so does npm going away.
handleStopSignals({
  stop: async (reason) => {
    service.log.info({ signal: reason }, 'draining and stopping');
    await demo.close();
    await development.close();
    await service.close();
    service.log.info('stopped');
    process.exit(0);
  },
  force: () => process.exit(1),
});
