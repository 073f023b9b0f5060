import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { frameString } from '../core/ws-frame.js';
import { Outbox, type Traffic } from './outbox.js';

/**
 * A socket whose kernel takes nothing until the test says so (`drain`): what is written waits in
 * `writableLength`, as for a page that stops reading. Writes between cork and uncork go out as one
 * flush (one writev); a write while not corked is a flush of its own.
 */
class FakeSocket extends EventEmitter {
  writableLength = 0;
  corks = 0;
  readonly flushes: Buffer[][] = [];
  #corked = 0;
  #pending: Buffer[] = [];

  cork(): void {
    this.corks++;
    this.#corked++;
  }

  uncork(): void {
    this.#corked = Math.max(0, this.#corked - 1);
    if (this.#corked === 0 && this.#pending.length > 0) {
      this.flushes.push(this.#pending);
      this.#pending = [];
    }
  }

  write(chunk: Buffer): boolean {
    this.writableLength += chunk.length;
    if (this.#corked > 0) this.#pending.push(chunk);
    else this.flushes.push([chunk]);
    return true;
  }

  /** The kernel took everything waiting. */
  drain(): void {
    this.writableLength = 0;
    this.emit('drain');
  }

  /** The text of everything flushed, in order. */
  text(): string {
    return Buffer.concat(this.flushes.flat()).toString('latin1');
  }
}

const traffic = (): Traffic => ({ deliveries: 0, bytesOut: 0, slowConsumerCloses: 0, framesRateLimited: 0 });

function outbox(limitBytes = 1000) {
  const socket = new FakeSocket();
  const counts = traffic();
  const overflow = vi.fn();
  const box = new Outbox(socket as unknown as Socket, limitBytes, overflow, counts);
  return { socket, counts, overflow, box };
}

/** A frame of exactly `bytes` bytes on the wire (the outbox never looks inside). */
const frameOf = (bytes: number): Buffer => Buffer.alloc(bytes, 0x78);

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  // The uncork of the last turn runs, so no outbox stays corked into the next test.
  vi.runOnlyPendingTimers();
  vi.useRealTimers();
});

describe('Outbox', () => {
  it('counts each frame delivered and its bytes, and writes the parts of a split frame in order', () => {
    const { socket, counts, box } = outbox();
    expect(box.write(frameString('{"a":1}'))).toBe(true);
    const parts = [Buffer.from([0x81, 5]), Buffer.from('{"b"'), Buffer.from('}')];
    expect(box.write(parts)).toBe(true);
    vi.runOnlyPendingTimers();
    expect(socket.text()).toBe(`\x81\x07{"a":1}\x81\x05{"b"}`);
    expect(counts).toEqual({ deliveries: 2, bytesOut: 9 + 7, slowConsumerCloses: 0, framesRateLimited: 0 });
  });

  it('sends the frames of one turn together: corked at the first, uncorked once after the turn, for every outbox', () => {
    const a = outbox();
    const b = outbox();
    a.box.write(frameString('1'));
    a.box.write(frameString('2'));
    b.box.write(frameString('3'));
    a.box.write(frameString('4'));
    // Nothing left yet, and a single callback uncorks both pages.
    expect(a.socket.flushes).toEqual([]);
    expect(b.socket.flushes).toEqual([]);
    expect(a.socket.corks).toBe(1);
    expect(b.socket.corks).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    vi.runOnlyPendingTimers();
    expect(a.socket.flushes).toHaveLength(1);
    expect(a.socket.flushes[0]).toHaveLength(3);
    expect(b.socket.flushes).toHaveLength(1);

    // The next turn corks again.
    a.box.write(frameString('5'));
    expect(a.socket.corks).toBe(2);
    vi.runOnlyPendingTimers();
    expect(a.socket.flushes).toHaveLength(2);
    expect(a.socket.text()).toBe('\x81\x011\x81\x012\x81\x014\x81\x015');
  });

  it('takes frames up to the bound of bytes waiting, exactly to it', () => {
    const { socket, overflow, box } = outbox(1000);
    expect(box.write(frameOf(600))).toBe(true);
    expect(box.write(frameOf(400))).toBe(true);
    expect(socket.writableLength).toBe(1000);
    expect(overflow).not.toHaveBeenCalled();
  });

  it('a page past the bound is a slow consumer: told once, the frame is not written or counted, and no frame after it', () => {
    const { socket, counts, overflow, box } = outbox(1000);
    box.write(frameOf(600));
    expect(box.write(frameOf(401))).toBe(false);
    expect(overflow).toHaveBeenCalledTimes(1);
    expect(box.write(frameOf(10))).toBe(false);
    // Even once the kernel took what waited: the page was found too slow.
    socket.drain();
    expect(box.write(frameOf(10))).toBe(false);
    expect(overflow).toHaveBeenCalledTimes(1);
    vi.runOnlyPendingTimers();
    expect(socket.flushes.flat().map((b) => b.length)).toEqual([600]);
    expect(counts).toMatchObject({ deliveries: 1, bytesOut: 600 });
  });

  it('sends a frame larger than the whole bound to a page with nothing waiting', () => {
    const { socket, overflow, box } = outbox(1000);
    expect(box.write(frameOf(5000))).toBe(true);
    expect(overflow).not.toHaveBeenCalled();
    // With that waiting, the next frame is over the bound.
    expect(box.write(frameOf(10))).toBe(false);
    expect(overflow).toHaveBeenCalledTimes(1);
    socket.drain();
    expect(socket.writableLength).toBe(0);
  });

  it('is full past half the bound', () => {
    const { socket, box } = outbox(1000);
    box.write(frameOf(500));
    expect(box.full).toBe(false);
    box.write(frameOf(2));
    expect(box.full).toBe(true);
    socket.drain();
    expect(box.full).toBe(false);
  });

  it('drained: at once with nothing waiting, else when the kernel took it, the socket closed, or the time ran out', async () => {
    const { socket, box } = outbox();
    const order: string[] = [];
    await box.drained();
    order.push('nothing waiting');

    box.write(frameOf(100));
    const onDrain = box.drained().then(() => order.push('drain'));
    await Promise.resolve();
    expect(order).toEqual(['nothing waiting']);
    socket.drain();
    await onDrain;

    box.write(frameOf(100));
    const onClose = box.drained().then(() => order.push('close'));
    socket.emit('close');
    await onClose;

    const onTime = box.drained(50).then(() => order.push('time'));
    await vi.advanceTimersByTimeAsync(49);
    expect(order).not.toContain('time');
    await vi.advanceTimersByTimeAsync(1);
    await onTime;
    expect(order).toEqual(['nothing waiting', 'drain', 'close', 'time']);
    // Each wait took its listeners away with it.
    expect(socket.listenerCount('drain')).toBe(0);
    expect(socket.listenerCount('close')).toBe(0);
  });

  it('once closed, writes nothing more without calling it slow, and a drain wait ends at once', async () => {
    const { socket, counts, overflow, box } = outbox();
    box.write(frameOf(100));
    box.close();
    expect(box.write(frameOf(100))).toBe(false);
    expect(overflow).not.toHaveBeenCalled();
    await box.drained();
    // What was queued before the close still goes out.
    vi.runOnlyPendingTimers();
    expect(socket.flushes.flat().map((b) => b.length)).toEqual([100]);
    expect(counts.deliveries).toBe(1);
  });
});
