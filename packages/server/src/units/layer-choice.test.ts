import { describe, expect, it } from 'vitest';
import { LayerAllocator, type LayerInput, type LayerState } from './layer-choice.js';

const Q: LayerState = { rate: 150_000, flowing: true, width: 320, height: 180 };
const H: LayerState = { rate: 500_000, flowing: true, width: 640, height: 360 };
const F: LayerState = { rate: 1_500_000, flowing: true, width: 1280, height: 720 };
const LAYERS = [Q, H, F];
/** The layers' indexes. */
const q = 0;
const h = 1;
const f = 2;
const HOLD = 1500;

/** An update at `nowMs` with the three layers unless told otherwise. */
function at(allocator: LayerAllocator, nowMs: number, input: Partial<LayerInput> = {}) {
  return allocator.update({ layers: LAYERS, ...input, nowMs });
}

/** Keeps `estimate` from `fromMs` to `toMs` (updates every 100 ms); the last decision. */
function hold(allocator: LayerAllocator, fromMs: number, toMs: number, input: Partial<LayerInput> = {}) {
  let decision = at(allocator, fromMs, input);
  for (let t = fromMs + 100; t <= toMs; t += 100) decision = at(allocator, t, input);
  return decision;
}

describe('LayerAllocator', () => {
  it('sends no video while paused, and chooses afresh on resume', () => {
    const allocator = new LayerAllocator();
    expect(at(allocator, 0, { estimate: 5_000_000 }).target).toBe(f);
    expect(at(allocator, 100, { estimate: 5_000_000, paused: true })).toEqual({ target: undefined });
    expect(allocator.target).toBeUndefined();
    expect(at(allocator, 200, { estimate: 600_000 }).target).toBe(h);
  });

  it('sends no video when no layer flows, and takes only flowing layers', () => {
    const allocator = new LayerAllocator();
    const none = LAYERS.map((layer) => ({ ...layer, flowing: false }));
    expect(at(allocator, 0, { layers: none, estimate: 5_000_000 })).toEqual({ target: undefined });
    const noFull = [Q, H, { ...F, flowing: false }];
    expect(at(allocator, 100, { layers: noFull, estimate: 5_000_000 }).target).toBe(h);
    const noHalf = [Q, { ...H, flowing: false }, F];
    const other = new LayerAllocator();
    expect(at(other, 0, { layers: noHalf, estimate: 1_000_000 }).target).toBe(q);
  });

  it('starts at the lowest layer while no estimate is known, and stays there without probing', () => {
    const allocator = new LayerAllocator();
    expect(at(allocator, 0)).toEqual({ target: q });
    expect(hold(allocator, 100, 30_000)).toEqual({ target: q });
  });

  it('starts with an estimate at the highest layer that fits it, the lowest when none fits', () => {
    expect(at(new LayerAllocator(), 0, { estimate: 800_000 }).target).toBe(h);
    expect(at(new LayerAllocator(), 0, { estimate: 1_500_000 }).target).toBe(f);
    expect(at(new LayerAllocator(), 0, { estimate: 100_000 }).target).toBe(q);
  });

  describe('size asked', () => {
    const big = 50_000_000;
    it('stops at the smallest layer that covers the element, whatever the estimate', () => {
      expect(at(new LayerAllocator(), 0, { estimate: big, maxWidth: 320, maxHeight: 180 }).target).toBe(q);
      expect(at(new LayerAllocator(), 0, { estimate: big, maxWidth: 321, maxHeight: 181 }).target).toBe(h);
      expect(at(new LayerAllocator(), 0, { estimate: big, maxWidth: 1000, maxHeight: 500 }).target).toBe(f);
      // Larger than every layer: the largest.
      expect(at(new LayerAllocator(), 0, { estimate: big, maxWidth: 4000, maxHeight: 3000 }).target).toBe(f);
      // One side asked: that side decides.
      expect(at(new LayerAllocator(), 0, { estimate: big, maxWidth: 500 }).target).toBe(h);
      expect(at(new LayerAllocator(), 0, { estimate: big, maxHeight: 100 }).target).toBe(q);
    });

    it("reads a box as a <video> element's contain fit unless told cover", () => {
      // A wide, short box: a 16:9 picture fitted into 600x100 is shown 178x100, which q covers.
      expect(at(new LayerAllocator(), 0, { estimate: big, maxWidth: 600, maxHeight: 100 }).target).toBe(q);
      // Cropped to fill it, the picture needs 600 pixels across: h.
      const cover = { estimate: big, maxWidth: 600, maxHeight: 100, fit: 'cover' as const };
      expect(at(new LayerAllocator(), 0, cover).target).toBe(h);
    });

    it('ignores the limit when sizes are unknown, and passes over layers of unknown size', () => {
      const unknown = LAYERS.map(({ rate, flowing }) => ({ rate, flowing }));
      expect(at(new LayerAllocator(), 0, { layers: unknown, estimate: big, maxWidth: 320 }).target).toBe(f);
      const halfUnknown = [Q, { rate: H.rate, flowing: true }, F];
      const asked = { layers: halfUnknown, maxWidth: 400, maxHeight: 300 };
      expect(at(new LayerAllocator(), 0, { ...asked, estimate: big }).target).toBe(f);
      expect(at(new LayerAllocator(), 0, { ...asked, estimate: 800_000 }).target).toBe(h);
    });

    it('moves down at once when the element shrinks, and up after the hold when it grows', () => {
      const allocator = new LayerAllocator();
      expect(at(allocator, 0, { estimate: big }).target).toBe(f);
      expect(at(allocator, 100, { estimate: big, maxWidth: 300, maxHeight: 170 }).target).toBe(q);
      expect(at(allocator, 200, { estimate: big }).target).toBe(q);
      expect(hold(allocator, 300, 300 + HOLD, { estimate: big }).target).toBe(h);
    });
  });

  it('moves down at once when the current layer no longer fits the estimate', () => {
    const allocator = new LayerAllocator();
    expect(at(allocator, 0, { estimate: 3_000_000 }).target).toBe(f);
    expect(at(allocator, 100, { estimate: 700_000 }).target).toBe(h);
    expect(at(allocator, 200, { estimate: 100_000 }).target).toBe(q);
    const other = new LayerAllocator();
    at(other, 0, { estimate: 3_000_000 });
    expect(at(other, 100, { estimate: 200_000 }).target).toBe(q);
    // At the lowest already, it stays there (video goes on).
    expect(at(other, 200, { estimate: 10_000 }).target).toBe(q);
  });

  it('moves up one layer once the estimate has covered the next layer with the margin for the hold', () => {
    const allocator = new LayerAllocator();
    at(allocator, 0, { estimate: 200_000 });
    // h × 1.1 = 550 kbit/s: 549 is not enough however long.
    expect(hold(allocator, 100, 5000, { estimate: 549_000 }).target).toBe(q);
    expect(at(allocator, 5100, { estimate: 600_000 }).target).toBe(q);
    expect(at(allocator, 5100 + HOLD - 1, { estimate: 600_000 }).target).toBe(q);
    expect(at(allocator, 5100 + HOLD, { estimate: 600_000 }).target).toBe(h);
  });

  it('after a move up, keeps the new layer while its rate stays under the estimate times the grace margin, for the grace time', () => {
    const allocator = new LayerAllocator({ upGraceMs: 2000, upGraceMargin: 1.5 });
    expect(at(allocator, 0, { estimate: 600_000 }).target).toBe(h);
    expect(hold(allocator, 100, 100 + HOLD, { estimate: 1_700_000 }).target).toBe(f);
    // The keyframe the move asked for swells F's rate past the estimate: kept, within half again.
    const swollen = [Q, H, { ...F, rate: 2_400_000 }];
    expect(hold(allocator, 1700, 3500, { layers: swollen, estimate: 1_700_000 }).target).toBe(f);
    // Past the margin, down at once even within the grace time.
    const other = new LayerAllocator({ upGraceMs: 2000, upGraceMargin: 1.5 });
    at(other, 0, { estimate: 600_000 });
    hold(other, 100, 100 + HOLD, { estimate: 1_700_000 });
    expect(at(other, 1700, { layers: [Q, H, { ...F, rate: 2_600_000 }], estimate: 1_700_000 }).target).toBe(h);
    // After it, as before: down when the rate is over the estimate.
    expect(at(allocator, 3700, { layers: swollen, estimate: 1_700_000 }).target).toBe(h);
  });

  it('starts the hold again when the estimate dips below the next layer meanwhile', () => {
    const allocator = new LayerAllocator();
    at(allocator, 0, { estimate: 200_000 });
    at(allocator, 1000, { estimate: 600_000 });
    at(allocator, 2000, { estimate: 500_000 });
    expect(at(allocator, 2600, { estimate: 600_000 }).target).toBe(q);
    expect(at(allocator, 2600 + HOLD - 1, { estimate: 600_000 }).target).toBe(q);
    expect(at(allocator, 2600 + HOLD, { estimate: 600_000 }).target).toBe(h);
  });

  it('climbs one layer per hold, not straight to the top', () => {
    const allocator = new LayerAllocator();
    at(allocator, 0);
    expect(at(allocator, 100, { estimate: 5_000_000 }).target).toBe(q);
    expect(at(allocator, 100 + HOLD, { estimate: 5_000_000 }).target).toBe(h);
    expect(at(allocator, 100 + HOLD + 100, { estimate: 5_000_000 }).target).toBe(h);
    expect(at(allocator, 100 + 2 * HOLD + 100, { estimate: 5_000_000 }).target).toBe(f);
  });

  it('replaces a layer that stopped flowing with the highest below it that fits, or the next one up', () => {
    const allocator = new LayerAllocator();
    at(allocator, 0, { estimate: 3_000_000 });
    expect(at(allocator, 100, { layers: [Q, H, { ...F, flowing: false }], estimate: 3_000_000 }).target).toBe(h);
    const other = new LayerAllocator();
    at(other, 0);
    expect(at(other, 100, { layers: [{ ...Q, flowing: false }, H, F] }).target).toBe(h);
    // No estimate, f in use stops: the highest below it.
    const third = new LayerAllocator();
    at(third, 0, { estimate: 3_000_000 });
    expect(at(third, 100, { layers: [Q, H, { ...F, flowing: false }] }).target).toBe(h);
  });

  it('takes a ceiling as a bound on the start and on moves up, never as a reason to move down', () => {
    const allocator = new LayerAllocator();
    // The estimate fits f, the ceiling h only: h.
    expect(at(allocator, 0, { estimate: 3_000_000, ceiling: 700_000 }).target).toBe(h);
    // The ceiling falls under h (another stream of the page moved up): the viewer stays on h.
    expect(hold(allocator, 100, 5000, { estimate: 3_000_000, ceiling: 100_000 }).target).toBe(h);
    // It rises over f: up after the hold.
    expect(hold(allocator, 5100, 5100 + HOLD, { estimate: 3_000_000, ceiling: 3_000_000 }).target).toBe(f);
    // The estimate itself falls: down, whatever the ceiling.
    expect(at(allocator, 9000, { estimate: 200_000, ceiling: 3_000_000 }).target).toBe(q);
  });

  describe('probes', () => {
    /** On q with an estimate that does not reach h, settled for the hold: the first probe. */
    function onLow() {
      const allocator = new LayerAllocator();
      at(allocator, 0, { estimate: 200_000 });
      expect(at(allocator, HOLD - 100, { estimate: 200_000 }).probe).toBeUndefined();
      return allocator;
    }

    it('asks for padding at the next layer minus the current for 2 s once the layer is settled', () => {
      const allocator = onLow();
      const decision = at(allocator, HOLD, { estimate: 200_000 });
      expect(decision).toEqual({ target: q, probe: { bitsPerSecond: 350_000, untilMs: HOLD + 2000 } });
      // The same probe on every update while it lasts.
      expect(at(allocator, HOLD + 1000, { estimate: 250_000 }).probe).toEqual(decision.probe);
      expect(at(allocator, HOLD + 1999, { estimate: 250_000 }).probe).toEqual(decision.probe);
    });

    it('moves up once the probe lifted the estimate over the next layer, and probes again after the wait', () => {
      const allocator = onLow();
      at(allocator, HOLD, { estimate: 200_000 });
      // The estimate covers h from 2500 on: up at 4000 (the probe ran until 3500).
      at(allocator, 2500, { estimate: 700_000 });
      expect(at(allocator, 3500, { estimate: 700_000 })).toEqual({ target: q });
      expect(at(allocator, 4000, { estimate: 700_000 })).toEqual({ target: h });
      // On h, f does not fit: the next probe comes 5 s after the last ended (3500), the layer settled.
      expect(hold(allocator, 4100, 8400, { estimate: 700_000 }).probe).toBeUndefined();
      expect(at(allocator, 8500, { estimate: 700_000 }).probe).toEqual({ bitsPerSecond: 1_000_000, untilMs: 10_500 });
    });

    it('judges a probe once its link settled: an estimate that rose meanwhile counts, and the wait stays', () => {
      const settled = new LayerAllocator({ probeSettleMs: 1000 });
      at(settled, 0, { estimate: 200_000 });
      expect(at(settled, HOLD, { estimate: 200_000 }).probe?.untilMs).toBe(HOLD + 2000);
      // Ended: no padding while it settles; the estimate takes in what it carried 800 ms on.
      expect(at(settled, HOLD + 2000, { estimate: 200_000 }).probe).toBeUndefined();
      expect(at(settled, HOLD + 2800, { estimate: 230_000 }).probe).toBeUndefined();
      // Judged at HOLD + 3000: it worked, so the next comes 5 s on, not 10.
      expect(hold(settled, HOLD + 3000, HOLD + 7900, { estimate: 230_000 }).probe).toBeUndefined();
      expect(at(settled, HOLD + 8000, { estimate: 230_000 }).probe?.untilMs).toBe(HOLD + 10_000);

      // Judged at its end, the same probe reads as failed: the wait doubles.
      const hasty = new LayerAllocator();
      at(hasty, 0, { estimate: 200_000 });
      at(hasty, HOLD, { estimate: 200_000 });
      at(hasty, HOLD + 2000, { estimate: 200_000 });
      expect(hold(hasty, HOLD + 2800, HOLD + 11_900, { estimate: 230_000 }).probe).toBeUndefined();
      expect(at(hasty, HOLD + 12_000, { estimate: 230_000 }).probe).toBeDefined();
    });

    it('judges a probe the caller saw fail at once: the next comes the doubled wait after the failure', () => {
      const allocator = new LayerAllocator({ probeSettleMs: 1000 });
      at(allocator, 0, { estimate: 200_000 });
      expect(at(allocator, HOLD, { estimate: 200_000 }).probe?.untilMs).toBe(HOLD + 2000);
      // It lost packets 300 ms in: no more padding, and the wait (10 s after a failure) runs from there.
      allocator.probeFailed(HOLD + 300);
      expect(hold(allocator, HOLD + 400, HOLD + 10_200, { estimate: 200_000 }).probe).toBeUndefined();
      expect(at(allocator, HOLD + 10_300, { estimate: 200_000 }).probe?.untilMs).toBe(HOLD + 12_300);
    });

    it('ends a probe at once when the layer moves up during it', () => {
      const allocator = onLow();
      at(allocator, HOLD, { estimate: 200_000 });
      at(allocator, HOLD + 100, { estimate: 700_000 });
      expect(at(allocator, HOLD + 100 + HOLD, { estimate: 700_000 })).toEqual({ target: h });
    });

    it('doubles the wait after a probe whose estimate did not rise, up to the longest wait, and resets it after one that did', () => {
      const allocator = new LayerAllocator({ maxProbeWaitMs: 20_000 });
      at(allocator, 0, { estimate: 200_000 });
      const starts: number[] = [];
      for (let t = HOLD; t <= HOLD + 57_900; t += 100) {
        const probe = at(allocator, t, { estimate: 200_000 }).probe;
        if (probe && probe.untilMs === t + 2000) starts.push(t);
      }
      // Probes end 2 s after they start; the waits after them: 10, 20, 20, 20 s.
      expect(starts).toEqual([HOLD, HOLD + 12_000, HOLD + 34_000, HOLD + 56_000]);

      // A probe that lifts the estimate by more than 10% (not enough for h) resets the wait to 5 s.
      const last = HOLD + 56_000;
      expect(at(allocator, last + 2000, { estimate: 230_000 }).probe).toBeUndefined();
      expect(hold(allocator, last + 2100, last + 6900, { estimate: 230_000 }).probe).toBeUndefined();
      expect(at(allocator, last + 7000, { estimate: 230_000 }).probe?.untilMs).toBe(last + 9000);
    });

    it('lengthens each wait by up to the jitter share at random, so connections sharing a link do not probe in step', () => {
      const starts = (random: number) => {
        const allocator = new LayerAllocator({ maxProbeWaitMs: 20_000, probeJitter: 0.5, random: () => random });
        at(allocator, 0, { estimate: 200_000 });
        const found: number[] = [];
        for (let t = HOLD; t <= HOLD + 40_000; t += 100) {
          const probe = at(allocator, t, { estimate: 200_000 }).probe;
          if (probe && probe.untilMs === t + 2000) found.push(t);
        }
        return found;
      };
      // Without: waits of 10 and 20 s after failed probes; with half of it at most: 15 and 30 s.
      expect(starts(0)).toEqual([HOLD, HOLD + 12_000, HOLD + 34_000]);
      expect(starts(0.999)).toEqual([HOLD, HOLD + 17_000, HOLD + 49_000].filter((t) => t <= HOLD + 40_000));
      expect(starts(0.5)).toEqual([HOLD, HOLD + 14_500, HOLD + 41_500].filter((t) => t <= HOLD + 40_000));
    });

    it('counts a move down during a probe as a failed probe', () => {
      const allocator = new LayerAllocator();
      at(allocator, 0, { estimate: 700_000 }); // h
      expect(at(allocator, HOLD, { estimate: 700_000 }).probe).toEqual({
        bitsPerSecond: 1_000_000,
        untilMs: HOLD + 2000,
      });
      expect(at(allocator, HOLD + 500, { estimate: 400_000 })).toEqual({ target: q });
      // Back on h later: the wait is 10 s from the move down, not 5.
      at(allocator, HOLD + 600, { estimate: 700_000 });
      const up = hold(allocator, HOLD + 700, HOLD + 600 + HOLD, { estimate: 700_000 });
      expect(up.target).toBe(h);
      expect(hold(allocator, HOLD + 2200, HOLD + 500 + 9900, { estimate: 700_000 }).probe).toBeUndefined();
      expect(at(allocator, HOLD + 500 + 10_000, { estimate: 700_000 }).probe).toBeDefined();
    });

    it('does not probe when the current layer does not fit, at the top layer, or at the size asked', () => {
      const congested = new LayerAllocator();
      at(congested, 0, { estimate: 100_000 });
      expect(hold(congested, 100, 20_000, { estimate: 100_000 }).probe).toBeUndefined();

      const top = new LayerAllocator();
      at(top, 0, { estimate: 1_600_000 });
      expect(hold(top, 100, 20_000, { estimate: 1_600_000 })).toEqual({ target: f });

      const small = new LayerAllocator();
      const asked = { estimate: 200_000, maxWidth: 320, maxHeight: 180 };
      at(small, 0, asked);
      expect(hold(small, 100, 20_000, asked)).toEqual({ target: q });
    });

    it('does not probe without an estimate, and drops a running probe on pause', () => {
      const allocator = new LayerAllocator();
      expect(hold(allocator, 0, 20_000).probe).toBeUndefined();
      at(allocator, 20_100, { estimate: 200_000 });
      expect(at(allocator, 20_100 + HOLD, { estimate: 200_000 }).probe).toBeDefined();
      expect(at(allocator, 20_200 + HOLD, { estimate: 200_000, paused: true })).toEqual({ target: undefined });
      expect(at(allocator, 20_300 + HOLD, { estimate: 200_000 })).toEqual({ target: q });
    });
  });
});
