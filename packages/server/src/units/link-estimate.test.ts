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

  it('a link seen queueing fails the running probe, or cancels one settling; outside probes it changes nothing', () => {
    const link = new LinkEstimate();
    link.remb(200_000);
    expect(probe(link, 1000, 700_000, () => link.congested())).toBe(false);
    expect(link.estimate(3000)).toBe(200_000);
    expect(probe(link, 4000, 700_000)).toBe(true);
    link.congested();
    expect(link.estimate(6000)).toBe(200_000);
    expect(probe(link, 7000, 700_000)).toBe(true);
    expect(link.estimate(8000)).toBe(700_000);
    link.congested();
    expect(link.estimate(9000)).toBe(700_000);
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

  it('a confirmed rate holds whatever the REMB under it does (loss ends it)', () => {
    const link = new LinkEstimate();
    link.remb(200_000);
    probe(link, 0, 1_000_000);
    expect(link.estimate(1000)).toBe(1_000_000);
    link.remb(150_000); // a busy receiver's REMB wobbling, far under the confirmed rate
    expect(link.estimate(1000)).toBe(1_000_000);
  });

  it('loss over 25% of the packets of a second caps the estimate at what is sent, less half the share, until a probe goes through', () => {
    const link = new LinkEstimate();
    link.remb(900_000); // a REMB that stays high behind a dropping link
    link.sent(100, 0);
    link.lost(20, 100, 600_000); // 20%: late ones on a busy receiver, maybe
    expect(link.estimate(100)).toBe(900_000);
    link.lost(20, 200, 600_000); // 40% of 100 packets
    expect(link.estimate(200)).toBe(600_000 * 0.8);
    // More loss at the lower rate lowers it again; the REMB does not lift it.
    link.sent(40, 500);
    link.lost(20, 600, 300_000);
    expect(link.estimate(600)).toBe(300_000 * 0.75);
    link.remb(1_000_000);
    expect(link.estimate(700)).toBe(225_000);
    // A probe that goes through lifts it.
    expect(probe(link, 5000, 500_000)).toBe(true);
    expect(link.estimate(6000)).toBe(1_000_000);
  });

  it('a link that took what it was sent for a second with no loss carries it', () => {
    const link = new LinkEstimate();
    link.remb(300_000);
    link.sent(10, 0);
    link.carrying(800_000, 500); // not a second of it yet
    expect(link.estimate(500)).toBe(300_000);
    link.sent(10, 950);
    link.carrying(800_000, 950);
    expect(link.estimate(950)).toBe(800_000);
    link.lost(1, 1000, 900_000); // a packet asked again in the window: no more
    link.sent(10, 1900);
    link.carrying(1_200_000, 1900);
    expect(link.estimate(1900)).toBe(800_000);
  });

  it("a failed probe's aftermath (its loss asked again after it ended) is not counted against the layer", () => {
    const link = new LinkEstimate();
    link.remb(500_000);
    link.sent(40, 0);
    link.probeStarted();
    link.lost(5, 100, 400_000);
    expect(link.probeEnded(1_200_000, 200)).toBe(false);
    link.sent(40, 300);
    link.lost(30, 400, 400_000); // within the second after it: its queue draining
    expect(link.estimate(400)).toBe(500_000);
    link.sent(40, 1300);
    link.lost(30, 1400, 400_000); // later: the layer's own loss
    expect(link.estimate(1400)).toBe(400_000 * (1 - 30 / 40 / 2));
  });

  it('a few packets asked again are no full link, and loss only counts over the last second', () => {
    const link = new LinkEstimate();
    link.remb(400_000);
    link.sent(20, 0);
    link.lost(9, 10, 300_000); // 45% but nine packets
    expect(link.estimate(10)).toBe(400_000);
    link.sent(200, 1500);
    link.lost(10, 1600, 300_000); // the earlier loss is out of the window: 10 of 200
    expect(link.estimate(1600)).toBe(400_000);
  });
});
