import { describe, expect, it } from 'vitest';
import type { LayerState } from './layer-choice.js';
import { LayerDemand, OFF_AFTER_MS } from './layer-demand.js';

const Q: LayerState = { rate: 150_000, flowing: true, width: 320, height: 180 };
const H: LayerState = { rate: 500_000, flowing: true, width: 640, height: 360 };
const F: LayerState = { rate: 1_500_000, flowing: true, width: 1280, height: 720 };
const THREE = [Q, H, F];

describe('LayerDemand (dynacast)', () => {
  it('keeps every layer while a viewer asks for no size or for one only the top covers', () => {
    const demand = new LayerDemand();
    expect(demand.update(THREE, [{}], 0)).toBeUndefined();
    expect(
      demand.update(
        THREE,
        [
          { maxWidth: 320, maxHeight: 180 },
          { maxWidth: 1000, maxHeight: 600 },
        ],
        10_000,
      ),
    ).toBeUndefined();
  });

  it('turns layers off once no viewer used them for 3 s, and on at once when one does', () => {
    const demand = new LayerDemand();
    const small = [{ maxWidth: 320, maxHeight: 180 }];
    expect(demand.update(THREE, small, 0)).toBeUndefined();
    expect(demand.update(THREE, small, OFF_AFTER_MS - 1)).toBeUndefined();
    expect(demand.update(THREE, small, OFF_AFTER_MS)).toBe(1);
    expect(demand.update(THREE, small, OFF_AFTER_MS + 250)).toBeUndefined();
    // Turned off, its sizes are still known (from its last keyframe): a viewer asking 640x360 needs h.
    const off = [Q, { ...H, flowing: false }, { ...F, flowing: false }];
    expect(demand.update(off, [...small, { maxWidth: 600, maxHeight: 340 }], 5000)).toBe(2);
    expect(demand.update(off, [{}], 5250)).toBe(3);
  });

  it('a size asked for only briefly smaller does not turn a layer off (the wait starts again)', () => {
    const demand = new LayerDemand();
    expect(demand.update(THREE, [{ maxWidth: 320 }], 0)).toBeUndefined();
    expect(demand.update(THREE, [{}], 2000)).toBeUndefined();
    expect(demand.update(THREE, [{ maxWidth: 320 }], 2500)).toBeUndefined();
    expect(demand.update(THREE, [{ maxWidth: 320 }], 2500 + OFF_AFTER_MS - 1)).toBeUndefined();
    expect(demand.update(THREE, [{ maxWidth: 320 }], 2500 + OFF_AFTER_MS)).toBe(1);
  });

  it('paused viewers need no layer, but the lowest always stays; no viewer at all turns nothing off', () => {
    const demand = new LayerDemand();
    expect(demand.update(THREE, [], 0)).toBeUndefined();
    expect(demand.update(THREE, [], 60_000)).toBeUndefined();
    expect(demand.update(THREE, [{ paused: true }], 60_000)).toBeUndefined();
    expect(demand.update(THREE, [{ paused: true }], 60_000 + OFF_AFTER_MS)).toBe(1);
  });

  it('a size no known layer covers, or layers of unknown size, keep every layer; one layer: nothing to say', () => {
    const demand = new LayerDemand();
    const unknown = [Q, { rate: 0, flowing: false }, { rate: 0, flowing: false }];
    expect(demand.update(unknown, [{ maxWidth: 600, maxHeight: 340 }], 0)).toBeUndefined();
    expect(demand.update(unknown, [{ maxWidth: 600, maxHeight: 340 }], 10_000)).toBeUndefined();
    const single = new LayerDemand();
    expect(single.update([Q], [{ paused: true }], 0)).toBeUndefined();
    expect(single.update([Q], [{ paused: true }], 10_000)).toBeUndefined();
  });
});
