/**
 * Small charts in plain SVG (a chart library would weigh more than the whole page). Each is an
 * image with a text name that says what a screen reader needs: the series and its latest value.
 */
import { html } from './html.js';

const W = 320;
const H = 96;
const PAD = 4;

export interface Point {
  at: number;
  value: number;
}

/** One series over time, scaled from 0 to its highest value, with the latest value written out. */
export function LineChart({ label, points, unit = '' }: { label: string; points: Point[]; unit?: string }) {
  const latest = points.at(-1)?.value ?? 0;
  const max = Math.max(1, ...points.map((p) => p.value));
  const first = points[0]?.at ?? 0;
  const span = Math.max(1, (points.at(-1)?.at ?? 1) - first);
  const line = points
    .map((p) => {
      const x = PAD + ((p.at - first) / span) * (W - 2 * PAD);
      const y = H - PAD - (p.value / max) * (H - 2 * PAD);
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    })
    .join(' ');
  const shown = `${formatNumber(latest)}${unit}`;
  return html`
    <figure class="chart">
      <figcaption><span>${label}</span> <strong>${shown}</strong></figcaption>
      <svg viewBox=${`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label=${`${label}: ${shown} now, at most ${formatNumber(max)}${unit}`}>
        <line x1=${PAD} y1=${H - PAD} x2=${W - PAD} y2=${H - PAD} class="axis" />
        ${points.length > 1 ? html`<polyline points=${line} class="line" />` : null}
      </svg>
    </figure>
  `;
}

export interface Series {
  name: string;
  /** A CSS class giving its colour: ok, warn, bad, info, muted. */
  tone: string;
}

/** Stacked bars: one bar per label, one segment per series, with a legend of totals. */
export function BarChart({
  label,
  series,
  bars,
}: {
  label: string;
  series: Series[];
  bars: { label: string; values: number[] }[];
}) {
  const totals = series.map((_, i) => bars.reduce((sum, bar) => sum + (bar.values[i] ?? 0), 0));
  const max = Math.max(1, ...bars.map((bar) => bar.values.reduce((a, b) => a + b, 0)));
  const slot = (W - 2 * PAD) / Math.max(1, bars.length);
  const described = series.map((s, i) => `${s.name} ${totals[i]}`).join(', ');
  return html`
    <figure class="chart">
      <figcaption><span>${label}</span></figcaption>
      <svg viewBox=${`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label=${`${label}: ${described}`}>
        <line x1=${PAD} y1=${H - PAD} x2=${W - PAD} y2=${H - PAD} class="axis" />
        ${bars.map((bar, b) => {
          let y = H - PAD;
          return bar.values.map((value, i) => {
            const h = (value / max) * (H - 2 * PAD);
            y -= h;
            const tone = series[i]?.tone ?? 'muted';
            return value > 0
              ? html`<rect x=${PAD + b * slot + 1} y=${y} width=${Math.max(1, slot - 2)} height=${h} class=${`bar ${tone}`}>
                  <title>${bar.label}: ${series[i]?.name} ${value}</title>
                </rect>`
              : null;
          });
        })}
      </svg>
      <ul class="legend">
        ${series.map((s, i) => html`<li><span class=${`swatch ${s.tone}`}></span>${s.name} <strong>${totals[i]}</strong></li>`)}
      </ul>
    </figure>
  `;
}

export function formatNumber(value: number): string {
  if (value >= 1e6) return `${(value / 1e6).toFixed(1)}M`;
  if (value >= 1e4) return `${(value / 1e3).toFixed(1)}k`;
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}
