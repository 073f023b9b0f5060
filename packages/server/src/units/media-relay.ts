/**
 * One kind of media (audio or video) of a live stream: the presenter's incoming track, when there
 * is one, and the viewers' senders it is copied to.
 */
import type { MediaStreamTrack, RTCRtpSender, RtpPacket } from 'werift';

interface Output {
  sender: RTCRtpSender;
  /** SSRC of the presenter track last forwarded here, to spot a new presenter. */
  source?: number;
  /** When the last packet went out (ms, monotonic). */
  sentAt: number;
}

export class MediaRelay {
  /** @param clockRate the RTP clock of the kind's codec (Hz), to move timestamps on over a gap. */
  constructor(private readonly clockRate: number) {}

  private readonly outputs = new Map<RTCRtpSender, Output>();
  private stopSource: (() => void) | undefined;
  private sourceSsrc: number | undefined;

  /** Whether a presenter's track is attached. */
  get live(): boolean {
    return this.stopSource !== undefined;
  }

  /** The presenter's current SSRC (known once a packet arrived), for keyframe requests. */
  get ssrc(): number | undefined {
    return this.sourceSsrc;
  }

  /** Forwards `track`'s packets from now on, in place of any earlier track. */
  attach(track: MediaStreamTrack): void {
    this.detach();
    const { unSubscribe } = track.onReceiveRtp.subscribe((rtp) => this.forward(rtp));
    this.stopSource = unSubscribe;
  }

  detach(): void {
    this.stopSource?.();
    this.stopSource = undefined;
    this.sourceSsrc = undefined;
  }

  add(sender: RTCRtpSender): void {
    this.outputs.set(sender, { sender, sentAt: 0 });
  }

  remove(sender: RTCRtpSender): void {
    this.outputs.delete(sender);
  }

  private forward(rtp: RtpPacket): void {
    const { ssrc, sequenceNumber, timestamp } = rtp.header;
    this.sourceSsrc = ssrc;
    const now = performance.now();
    for (const output of this.outputs.values()) {
      // Each sender rewrites SSRC, payload type, sequence number and timestamp in place, so each
      // gets its own header (the payload is shared, never written). The presenter's header
      // extensions are dropped: their ids were negotiated with the presenter, not this viewer.
      const copy = rtp.clone();
      copy.header.extensions = [];
      copy.header.extension = false;
      if (output.source !== undefined && output.source !== ssrc) {
        // A new presenter: number on from the viewer's last packet (no gap to NACK) and move the
        // timestamp on by the time that passed, so its decoder sees one stream going forward.
        // (werift's own `discontinuity` flag cuts the timestamp offset to 16 bits: not used.)
        const ticks = Math.max(1, Math.round(((now - output.sentAt) * this.clockRate) / 1000));
        output.sender.replaceRTP({
          sequenceNumber: (sequenceNumber - 1) & 0xffff,
          timestamp: (timestamp - ticks) >>> 0,
        });
      }
      output.source = ssrc;
      output.sentAt = now;
      output.sender.sendRtp(copy).catch(() => {
        // A viewer whose transport just closed: its session is being torn down.
      });
    }
  }
}
