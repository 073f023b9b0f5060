/**
 * The audio of a live stream: the presenter's incoming track, when there is one, and the viewers'
 * senders it is copied to, with its audio level (so each viewer's browser can tell who speaks).
 * (Video goes per viewer layer: SimulcastSource and VideoOutput.)
 */
import type { Extensions, MediaStreamTrack, RTCRtpSender, RtpPacket } from 'werift';

const AUDIO_LEVEL_URI = 'urn:ietf:params:rtp-hdrext:ssrc-audio-level';
/** The extension's one byte for each value, made once (it is written on every audio packet). */
const LEVEL_BYTES = Array.from({ length: 256 }, (_, byte) => Buffer.of(byte));

/**
 * The id the viewer's connection negotiated for the audio level extension, once it has. werift keeps
 * a sender's negotiated extensions to itself; read here, in one place.
 */
function audioLevelId(sender: RTCRtpSender): number | undefined {
  const negotiated = (sender as unknown as { headerExtensions?: { id: number; uri: string }[] }).headerExtensions;
  return negotiated?.find((e) => e.uri === AUDIO_LEVEL_URI)?.id;
}

interface Output {
  sender: RTCRtpSender;
  /** Its audio level extension id, once known. */
  levelId?: number | undefined;
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
    const { unSubscribe } = track.onReceiveRtp.subscribe((rtp, extensions) => this.forward(rtp, extensions));
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

  private forward(rtp: RtpPacket, extensions: Extensions | undefined): void {
    const { ssrc, sequenceNumber, timestamp } = rtp.header;
    this.sourceSsrc = ssrc;
    const now = performance.now();
    const level = extensions?.[AUDIO_LEVEL_URI] as { v: boolean; level: number } | undefined;
    const levelByte = level === undefined ? undefined : LEVEL_BYTES[(level.v ? 0x80 : 0) | (level.level & 0x7f)];
    for (const output of this.outputs.values()) {
      // Each sender rewrites SSRC, payload type, sequence number and timestamp in place, so each
      // gets its own header (the payload is shared, never written). The presenter's header
      // extensions were negotiated with the presenter: only the audio level goes on, under the
      // viewer's id.
      const copy = rtp.clone();
      // werift took any padding off the payload, and its SRTP would send the P bit without it.
      copy.header.padding = false;
      copy.header.paddingSize = 0;
      output.levelId ??= audioLevelId(output.sender);
      if (levelByte !== undefined && output.levelId !== undefined) {
        copy.header.extensions = [{ id: output.levelId, payload: levelByte }];
        copy.header.extension = true;
      } else {
        copy.header.extensions = [];
        copy.header.extension = false;
      }
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
