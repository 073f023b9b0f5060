import { EPOCH_MAX_LENGTH } from '@realtime/protocol';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../engines/store-error.js';
import { roomModule } from '../rooms/room-module.js';
import type { GatewayDeps } from './context.js';
import { FrameError, FrameRegistry, frameData, stored } from './frame-registry.js';

const registry = new FrameRegistry();
registry.add(roomModule({} as GatewayDeps).frames);
const parseFrame = (text: string) => registry.parse(text).frame;

/** The error a frame gets, or undefined when it parses. */
function refusal(frame: unknown): { code: string; message: string; ref: number | undefined } | undefined {
  try {
    parseFrame(JSON.stringify(frame));
    return undefined;
  } catch (error) {
    if (!(error instanceof FrameError)) throw error;
    return { code: error.code, message: error.message, ref: error.ref };
  }
}

describe('parseFrame: a join resuming with an epoch', () => {
  const join = { t: 'join', ref: 3, room: 'r', token: 'x', since: '1700000000000-2' };

  it('takes an epoch with since, up to 64 characters, and keeps it as sent', () => {
    for (const epoch of ['', 'e', 'aB3-_x', 'é'.repeat(EPOCH_MAX_LENGTH), 'x'.repeat(EPOCH_MAX_LENGTH)]) {
      expect(parseFrame(JSON.stringify({ ...join, epoch }))).toEqual({ ...join, epoch });
    }
    expect(parseFrame(JSON.stringify(join))).toEqual(join);
  });

  it('refuses an epoch that is not a string, too long, or without since, as bad_frame with the ref', () => {
    const cases: unknown[] = [
      { ...join, epoch: 5 },
      { ...join, epoch: null },
      { ...join, epoch: ['e'] },
      { ...join, epoch: 'x'.repeat(EPOCH_MAX_LENGTH + 1) },
      { t: 'join', ref: 3, room: 'r', token: 'x', epoch: 'e' },
      { t: 'join', ref: 3, room: 'r', token: 'x', last: 5, epoch: 'e' },
    ];
    for (const frame of cases) {
      expect(refusal(frame)).toMatchObject({ code: 'bad_frame', ref: 3, message: expect.stringContaining('epoch') });
    }
  });

  it('takes no epoch on frames other than join', () => {
    expect(refusal({ t: 'leave', ref: 4, room: 'r', epoch: 'e' })).toMatchObject({ code: 'bad_frame', ref: 4 });
  });
});

describe('frameData: a frame data encoded once, with room to spare for the frames it goes into', () => {
  it('is the JSON text of the data', () => {
    for (const data of [{}, { sdp: { type: 'offer', sdp: 'v=0\r\n' } }, { a: [1, [2, [3]]], s: '[]' }, [], null]) {
      expect(frameData('call.signal', data, undefined, {})).toBe(JSON.stringify(data));
    }
  });

  it('refuses data nested too deeply as bad_frame with the ref and what the frame named', () => {
    const deep = JSON.parse(`${'['.repeat(5000)}${']'.repeat(5000)}`) as unknown;
    let error: unknown;
    try {
      frameData('group.signal', deep, 7, { group: 'g' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(FrameError);
    expect(error).toMatchObject({
      code: 'bad_frame',
      message: 'group.signal: data is nested too deeply',
      ref: 7,
      group: 'g',
    });
  });
});

describe('stored: a store step of a frame', () => {
  it('gives back what the step made', async () => {
    await expect(stored(async () => 7, 3, { group: 'g' })).resolves.toBe(7);
  });

  it('turns a StoreError into an unavailable error frame naming the ref and subject', async () => {
    const failing = async () => {
      throw new StoreError('unavailable');
    };
    const error = await stored(failing, 4, { stream: 's' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FrameError);
    expect(error).toMatchObject({ code: 'unavailable', ref: 4, stream: 's', call: undefined, group: undefined });
    expect((error as FrameError).message).toBe('the service could not reach its storage; try again');
  });

  it('lets any other error through unchanged', async () => {
    const bug = new TypeError('a bug');
    await expect(
      stored(
        async () => {
          throw bug;
        },
        1,
        { call: 'c' },
      ),
    ).rejects.toBe(bug);
  });
});
