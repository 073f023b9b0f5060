import type { StatsSampler } from '../dashboard/stats-sampler.js';
import type { Component } from './component.js';

/** The dashboard's stats samples; none without the dashboard: a service without it pays nothing. */
export function dashboardSampler(stats: StatsSampler | undefined): Component {
  return { name: 'dashboard sampler', start: () => stats?.start(), stop: () => stats?.stop() };
}
