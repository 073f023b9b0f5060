import { describe, expect, it } from 'vitest';
import { LinkEstimate } from './link-estimate.js';

describe('LinkEstimate', () => {
  it('knows nothing before the first REMB, then follows it', () => {
    const link = new LinkEstimate();
    expect(link.value).toBeUndefined();
    link.remb(200_000);
    expect(link.value).toBe(200_000);
    link.remb(150_000);
    expect(link.value).toBe(150_000);
  });

  it('a probe that lost nothing confirms what it carried, above the REMB', () => {
    const link = new LinkEstimate();
    link.remb(200_000);
    link.probeStarted();
    link.lost(2, 0); // a couple of packets asked again: still carried
    expect(link.probeFailing).toBe(false);
    expect(link.probeEnded(700_000)).toBe(true);
    expect(link.value).toBe(700_000);
    // A REMB above it wins.
    link.remb(900_000);
    expect(link.value).toBe(900_000);
  });

  it('a probe that saw loss confirms nothing and says so while it runs', () => {
    const link = new LinkEstimate();
    link.remb(200_000);
    link.probeStarted();
    link.lost(3, 0);
    expect(link.probeFailing).toBe(true);
    expect(link.probeEnded(700_000)).toBe(false);
    expect(link.value).toBe(200_000);
    expect(link.probeFailing).toBe(false);
  });

  it('a confirmed rate ends with a REMB falling below 85% of its highest since', () => {
    const link = new LinkEstimate();
    link.remb(400_000);
    link.probeStarted();
    link.probeEnded(1_000_000);
    link.remb(500_000);
    link.remb(430_000); // 86% of 500k: holds
    expect(link.value).toBe(1_000_000);
    link.remb(420_000); // 84%: the browser saw delay grow
    expect(link.value).toBe(420_000);
  });

  it('a confirmed rate ends with a burst of loss within a second, not with loss spread out', () => {
    const link = new LinkEstimate();
    link.remb(300_000);
    link.probeStarted();
    link.probeEnded(800_000);
    for (const at of [0, 1000, 2000, 3000]) link.lost(1, at);
    expect(link.value).toBe(800_000);
    link.lost(2, 3100);
    link.lost(2, 3200);
    expect(link.value).toBe(300_000);
  });
});
