/** The apps of the service as the dashboard manages them (docs/dashboard.md, "Apps"). */
import { DASHBOARD_PATH, type Handler, ok, type Route, signedIn } from './request.js';

const list: Handler = async (req, res, deps) => {
  req.resume();
  signedIn(req, deps);
  const apps = await deps.apps.list();
  ok(res, { apps: apps.map(({ key, name, features, webhook }) => ({ key, name, features, webhook })) });
};

export const appRoutes: Route[] = [{ path: `${DASHBOARD_PATH}/api/apps`, methods: { GET: list } }];
