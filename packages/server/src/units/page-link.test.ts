import { describe, expect, it, vi } from 'vitest';
import { PageLinks, soloShare } from './page-link.js';

describe('PageLinks', () => {
  it('leaves a page with one output to its own estimate: no budget, probes never held back', () => {
    const share = new PageLinks().join('p1');
    share.rate = 300_000;
    expect(share.shared).toBe(false);
    share.overloaded(0);
    expect(share.budget).toBeUndefined();
    expect(share.startProbe(0)).toBe(true);
    expect(share.startProbe(1)).toBe(true);
    const solo = soloShare();
    expect(solo.startProbe(0)).toBe(true);
    expect(solo.budget).toBeUndefined();
  });

  it('lets one output of a page probe at a time, the next a second after it ended', () => {
    const links = new PageLinks();
    const a = links.join('p1');
    const b = links.join('p1');
    const other = links.join('p2');
    expect(a.shared).toBe(true);
    expect(a.startProbe(0)).toBe(true);
    expect(b.startProbe(10)).toBe(false);
    // Another page's outputs are not held back.
    expect(other.startProbe(10)).toBe(true);
    a.probeEnded(true, 400_000, 1200);
    expect(b.startProbe(2100)).toBe(false);
    expect(b.startProbe(2200)).toBe(true);
  });

  it('waits longer after each failed probe of the page (2, 4, 8, 8 s) and a second after one that worked', () => {
    const links = new PageLinks();
    const shares = [links.join('p1'), links.join('p1')];
    let now = 0;
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      // Each output in turn, the earliest it may: every failure, whoever's, counts for the page.
      const share = shares[i % 2];
      const from = now;
      while (!share?.startProbe(now)) now += 250;
      waits.push(now - from);
      now += 1200;
      share.probeEnded(false, 0, now);
    }
    expect(waits).toEqual([0, 2000, 4000, 8000]);
    const [a, b] = shares;
    if (!a || !b) throw new Error('two shares');
    const from = now;
    while (!a.startProbe(now)) now += 250;
    expect(now - from).toBe(8000);
    now += 1200;
    a.probeEnded(true, 100_000, now);
    // One that worked: the next may start a second after it, and the waits start again at 2 s.
    expect(b.startProbe(now + 999)).toBe(false);
    expect(b.startProbe(now + 1000)).toBe(true);
    b.probeEnded(false, 0, now + 1000);
    expect(a.startProbe(now + 2999)).toBe(false);
    expect(a.startProbe(now + 3000)).toBe(true);
  });

  it('fails the running probe when another output of the page loses packets, not when the prober does', () => {
    const links = new PageLinks();
    const a = links.join('p1');
    const b = links.join('p1');
    const failed = vi.fn();
    a.onProbeFailed(failed);
    b.lost();
    expect(failed).not.toHaveBeenCalled();
    expect(a.startProbe(0)).toBe(true);
    // Its own loss is its own LinkEstimate's to count.
    a.lost();
    expect(failed).not.toHaveBeenCalled();
    b.lost();
    expect(failed).toHaveBeenCalledTimes(1);
    // The layers keep what they had: a probe's overflow caps nothing.
    a.rate = 200_000;
    b.rate = 200_000;
    b.overloaded(100);
    expect(a.budget).toBeUndefined();
  });

  it('caps the page at 0.85 of its layers when one output is overloaded outside a probe, once a second', () => {
    const links = new PageLinks();
    const a = links.join('p1');
    const b = links.join('p1');
    a.rate = 300_000;
    b.rate = 100_000;
    expect(a.budget).toBeUndefined();
    b.overloaded(0);
    // 0.85 × 400 kbit/s = 340: each output gets what the other's layer leaves.
    expect(a.capped).toBe(true);
    expect(a.budget).toBe(240_000);
    expect(b.budget).toBe(40_000);
    b.overloaded(999);
    expect(a.budget).toBe(240_000);
    a.rate = 150_000;
    a.overloaded(1000);
    // 0.85 × 250 = 212.5.
    expect(a.budget).toBe(112_500);
  });

  it('lifts the cap to what the page carried during a probe that worked', () => {
    const links = new PageLinks();
    const a = links.join('p1');
    const b = links.join('p1');
    a.rate = 100_000;
    b.rate = 100_000;
    a.overloaded(0);
    expect(a.budget).toBe(70_000);
    expect(a.startProbe(5000)).toBe(true);
    a.probeEnded(true, 350_000, 6200);
    // b's 100 and a's layer and padding (350) carried together.
    expect(b.budget).toBe(350_000);
    expect(a.budget).toBe(350_000);
    // A failed probe lowers nothing.
    expect(b.startProbe(7200)).toBe(true);
    b.probeEnded(false, 0, 8400);
    expect(a.budget).toBe(350_000);
  });

  it('bounds moves up by what the page carried during a probe that worked, before any loss', () => {
    const links = new PageLinks();
    const a = links.join('p1');
    const b = links.join('p1');
    a.rate = 150_000;
    b.rate = 150_000;
    // Nothing known yet: each output is left to its own estimate.
    expect(a.room).toBeUndefined();
    expect(a.capped).toBe(false);
    expect(a.startProbe(0)).toBe(true);
    a.probeEnded(true, 450_000, 1200);
    // 150 (b) + 450 (a's layer and padding) carried together: a may move up to what b's layer leaves
    // (and, not found full, may still probe for double its share); no cap, so no budget.
    expect(a.room).toBe(450_000);
    expect(b.room).toBe(450_000);
    expect(a.budget).toBeUndefined();
    expect(a.capped).toBe(false);
    a.rate = 350_000;
    // a moved up: b, which earned nothing itself, may move up to what a's new layer leaves.
    expect(b.room).toBe(250_000);
    // A failed probe lowers nothing; one that carried more lifts the bound.
    expect(b.startProbe(2200)).toBe(true);
    b.probeEnded(false, 0, 3400);
    expect(b.room).toBe(250_000);
    expect(b.startProbe(5400)).toBe(true);
    b.probeEnded(true, 600_000, 6600);
    // 350 (a) + 600 (b's layer and padding).
    expect(a.room).toBe(800_000);
    expect(b.room).toBe(600_000);
    // Capped, the cap bounds both.
    a.overloaded(7000);
    expect(a.capped).toBe(true);
    // 0.85 × 500 = 425.
    expect(a.budget).toBe(275_000);
    expect(a.room).toBe(275_000);
  });

  it('forgets a page when its last output leaves; a prober that leaves frees the page probe', () => {
    const links = new PageLinks();
    const a = links.join('p1');
    const b = links.join('p1');
    a.rate = 100_000;
    b.rate = 100_000;
    b.overloaded(0);
    expect(a.startProbe(0)).toBe(true);
    a.leave();
    expect(b.shared).toBe(false);
    expect(b.budget).toBeUndefined();
    const c = links.join('p1');
    expect(c.startProbe(0)).toBe(true);
    c.leave();
    b.leave();
    expect(links.size).toBe(0);
  });

  it('takes a second leave as nothing: the page joined again keeps its new link', () => {
    const links = new PageLinks();
    const old = links.join('p1');
    old.leave();
    const a = links.join('p1');
    old.leave();
    expect(links.size).toBe(1);
    // A later output of the page still shares a's link.
    const b = links.join('p1');
    expect(a.shared).toBe(true);
    expect(b.shared).toBe(true);
  });
});
