import { describe, expect, it } from 'vitest';
import { LinkEstimate } from './link-estimate.js';

/** A probe from start to end at `carried`, with `during` run while it runs; then the link settles. */
function probe(link: LinkEstimate, at: number, carried: number, during: () => void = () => undefined): boolean {
  link.probeStarted();
  during();
  return link.probeEnded(carried, at);
}

describe('LinkEstimate', () => {
  it('knows nothing before the first REMB, then follows it', () => {
    const link = new LinkEstimate();
    expect(link.estimate(0)).toBeUndefined();
    link.remb(200_000);
    expect(link.estimate(0)).toBe(200_000);
    link.remb(150_000);
    expect(link.estimate(0)).toBe(150_000);
  });

  it('a probe that saw no loss and no REMB fall confirms what it carried once the link settled for 1 s', () => {
    const link = new LinkEstimate();
    link.remb(200_000);
    expect(probe(link, 1000, 700_000, () => link.remb(185_000))).toBe(true);
    expect(link.estimate(1999)).toBe(185_000); // still settling (185k is within 10% of 200k)
    expect(link.estimate(2000)).toBe(700_000);
    link.remb(900_000); // a REMB above it wins
    expect(link.estimate(2000)).toBe(900_000);
  });

  it('a probe fails past two packets asked again, or at a REMB 10% under its start', () => {
    const link = new LinkEstimate();
    link.remb(200_000);
    link.probeStarted();
    link.lost(2, 100);
    expect(link.probeFailing).toBe(false);
    link.lost(1, 150);
    expect(link.probeFailing).toBe(true);
    expect(link.probeEnded(700_000, 200)).toBe(false);
    expect(link.estimate(5000)).toBe(200_000);
    expect(link.probeFailing).toBe(false);

    expect(probe(link, 6000, 700_000, () => link.remb(179_000))).toBe(false);
    expect(link.estimate(9000)).toBe(179_000);
  });

  it('loss or a REMB fall while the link settles after a probe cancels it', () => {
    const link = new LinkEstimate();
    link.remb(200_000);
    expect(probe(link, 1000, 700_000, () => link.lost(2, 500))).toBe(true);
    link.lost(1, 1500); // the third packet asked again, while it settles
    expect(link.estimate(3000)).toBe(200_000);
    expect(probe(link, 4000, 700_000)).toBe(true);
    link.remb(170_000);
    expect(link.estimate(6000)).toBe(170_000);
  });

  it('a confirmed rate ends with a REMB under 90% of what the viewer is being sent, not with a REMB that swings above it', () => {
    const link = new LinkEstimate();
    link.remb(400_000);
    probe(link, 0, 1_000_000);
    expect(link.estimate(1000)).toBe(1_000_000);
    link.remb(900_000, 600_000);
    link.remb(560_000, 600_000); // fell by 38%, still above 90% of the 600k sent: holds
    expect(link.estimate(1000)).toBe(1_000_000);
    link.remb(530_000, 600_000); // under 540k: the browser's queue grew
    expect(link.estimate(1000)).toBe(530_000);
  });

  it('a confirmed rate ends with a burst of loss within a second, not with loss spread out', () => {
    const link = new LinkEstimate();
    link.remb(300_000);
    probe(link, 0, 800_000);
    expect(link.estimate(1000)).toBe(800_000);
    for (const at of [2000, 3000, 4000, 5000]) link.lost(3, at);
    expect(link.estimate(5000)).toBe(800_000);
    link.lost(3, 5100);
    link.lost(2, 5200); // eight within a second
    expect(link.estimate(5200)).toBe(300_000);
  });
});
