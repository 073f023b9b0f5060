/** The dashboard's stats (docs/dashboard.md, "Stats"): the sampler's ring as it is now. */
import { DASHBOARD_PATH, type Handler, ok, type Route, signedIn } from './request.js';
import { STATS_SCOPE } from './stats-sampler.js';

const stats: Handler = async (req, res, deps) => {
  req.resume();
  signedIn(req, deps);
  const sampler = deps.stats;
  ok(res, { interval: sampler.intervalMs, node: sampler.node, scope: STATS_SCOPE, samples: sampler.samples() });
};

export const statsRoutes: Route[] = [{ path: `${DASHBOARD_PATH}/api/stats`, methods: { GET: stats } }];
