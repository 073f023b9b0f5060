/**
 * The service's stats (docs/dashboard.md, "Stats"): small charts of the last ten minutes, a sample
 * every five seconds, refreshed as samples come. Each chart says whether it counts the node that
 * answered or the whole cluster.
 */
import { useEffect, useState } from 'preact/hooks';
import type { StatsSample } from '../../../src/dashboard/stats-sample.js';
import { failed } from '../action.js';
import { api } from '../api.js';
import { LineChart, type Point } from '../charts.js';
import { html } from '../html.js';

type Sample = StatsSample;

type SeriesName = Exclude<keyof Sample, 'at'>;

interface StatsAnswer {
  interval: number;
  node: string;
  scope: Partial<Record<SeriesName, 'node' | 'cluster'>>;
  samples: Sample[];
}

const CHARTS: { series: SeriesName; label: string; unit?: string }[] = [
  { series: 'pages', label: 'Pages open' },
  { series: 'messagesIn', label: 'Messages in', unit: '/s' },
  { series: 'messagesOut', label: 'Frames out to pages', unit: '/s' },
  { series: 'deliveries', label: 'Webhook tries', unit: '/s' },
  { series: 'webhookBacklog', label: 'Webhook backlog (batches)' },
];

/** The series as chart points; samples that could not read it (null) are left out. */
function pointsOf(samples: Sample[], series: SeriesName): Point[] {
  const points: Point[] = [];
  for (const sample of samples) {
    const value = sample[series];
    if (value !== null) points.push({ at: sample.at, value });
  }
  return points;
}

export function Stats() {
  const [stats, setStats] = useState<StatsAnswer | undefined>(undefined);
  const [error, setError] = useState('');
  const every = stats?.interval ?? 5000;

  useEffect(() => {
    let live = true;
    const load = async () => {
      try {
        const answer = await api.get<StatsAnswer>('/stats');
        if (!live) return;
        setStats(answer);
        setError('');
      } catch (failure) {
        if (live) setError(failed(failure, 'Reading the stats'));
      }
    };
    void load();
    // At most once a second, however often the service samples.
    const timer = setInterval(() => void load(), Math.max(1000, every));
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [every]);

  const samples = stats?.samples ?? [];
  // The ring holds 120 samples: ten minutes at the service's 5 s.
  const keptS = Math.round(((stats?.interval ?? 5000) * 120) / 1000);
  const kept = keptS >= 120 ? `${Math.round(keptS / 60)} minutes` : `${keptS} seconds`;
  return html`
    <h1>Stats</h1>
    <p class="muted">
      ${
        stats
          ? html`Node <code>${stats.node}</code>: a sample every ${stats.interval / 1000} s, the last ${kept}.
              “This node” counts what the node that answered did; behind a load balancer another refresh may
              reach another node.`
          : 'Loading…'
      }
    </p>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${
      stats && samples.length === 0
        ? html`<p class="muted">No sample yet: the first comes ${stats.interval / 1000} s after the service started.</p>`
        : null
    }
    <div class="grid">
      ${CHARTS.map(({ series, label, unit }) => {
        const where = stats?.scope[series] === 'cluster' ? 'all nodes' : 'this node';
        return html`<div class="card" key=${series}>
          <${LineChart} label=${`${label}, ${where}`} points=${pointsOf(samples, series)} unit=${unit ?? ''} />
        </div>`;
      })}
    </div>
  `;
}
