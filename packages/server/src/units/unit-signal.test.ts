import { describe, expect, it } from 'vitest';
import { NoMediaPortError } from './peer-sessions.js';
import { UnitLimitError } from './unit-budget.js';
import { readUnitSignal, viewerRefusal } from './unit-signal.js';

describe('what a receiving page is told when its session is refused', () => {
  it('unavailable for a full node (the operator hears) or a bound (the app’s business); nothing for other failures', () => {
    expect(viewerRefusal(new NoMediaPortError())).toStrictEqual({
      code: 'unavailable',
      message: 'the service has no free media port now; try again later',
      operator: true,
    });
    expect(viewerRefusal(new UnitLimitError('fairShare', 'the app holds its share'))).toStrictEqual({
      code: 'unavailable',
      message: 'the app holds its share',
      operator: false,
    });
    expect(viewerRefusal(new Error('werift failed'))).toBeUndefined();
  });
});

describe('what a receiving page asks of the video (adaptive stream)', () => {
  const viewer = (data: Record<string, unknown>) => readUnitSignal(data, false, 'a viewer');

  it('reads a size, paused, or nothing (no bound, not paused), keeping only the known fields', () => {
    expect(viewer({ video: { maxWidth: 640, maxHeight: 360 } })).toStrictEqual({
      video: { maxWidth: 640, maxHeight: 360 },
    });
    expect(viewer({ video: { paused: true } })).toStrictEqual({ video: { paused: true } });
    expect(viewer({ video: { maxWidth: 1, maxHeight: 16_384, paused: false, fps: 30 } })).toStrictEqual({
      video: { maxWidth: 1, maxHeight: 16_384, paused: false },
    });
    expect(viewer({ video: {} })).toStrictEqual({ video: {} });
  });

  it('refuses sizes that are not whole pixels from 1 to 16384, a paused that is not a boolean, a video that is no object', () => {
    for (const size of [0, -1, 16_385, 1.5, '640', null, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(viewer({ video: { maxWidth: size } })).toBe(
        'data.video.maxWidth must be a whole number of pixels from 1 to 16384',
      );
      expect(viewer({ video: { maxHeight: size } })).toBe(
        'data.video.maxHeight must be a whole number of pixels from 1 to 16384',
      );
    }
    for (const paused of ['yes', 1, null]) {
      expect(viewer({ video: { paused } })).toBe('data.video.paused must be true or false');
    }
    for (const video of [true, 640, 'small', null, [640, 360]]) {
      expect(viewer({ video })).toMatch(/^data\.video must be \{ "maxWidth"\?: <whole number 1\.\.16384>/);
    }
  });

  it('is refused from a sending page, whose own unit sends it nothing', () => {
    expect(readUnitSignal({ video: { paused: true } }, true, 'a presenter')).toBe(
      'data.video is for a page receiving video, not from a presenter',
    );
  });

  it('a description, candidate or restart in the same data wins, as before; nothing known is refused', () => {
    expect(viewer({ restart: true, video: { paused: true } })).toStrictEqual({ restart: true });
    expect(viewer({ other: 1 })).toBe('data must hold sdp, candidate, restart: true or video');
  });
});
