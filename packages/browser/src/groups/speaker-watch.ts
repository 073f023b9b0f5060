import type { Clock } from '../connection/clock.js';
import { type SpeakerLevel, Speakers } from './speakers.js';

/** How often the levels are read while the group call has media. */
export const SPEAKER_POLL_MS = 200;

/** A stats report as WebRTC gives it (RTCStatsReport, or a test's Map). */
export interface StatsLike {
  forEach(callback: (report: Record<string, unknown>) => void): void;
}

/** What the watch reads of an RTCRtpReceiver. */
export interface ReceiverLike {
  readonly track: { readonly kind: string } | null;
  getSynchronizationSources(): readonly {
    readonly source: number;
    readonly audioLevel?: number;
    readonly rtpTimestamp: number;
  }[];
  getStats(): Promise<StatsLike>;
}

/** What the watch reads of an RTCRtpSender. */
export interface SenderLike {
  readonly track: { readonly kind: string; readonly enabled: boolean; readonly muted: boolean } | null;
  getStats(): Promise<StatsLike>;
}

/** What the watch reads of an RTCPeerConnection. */
export interface ConnectionLike {
  getReceivers(): readonly ReceiverLike[];
  getSenders(): readonly SenderLike[];
}

/** A participant and the connection its audio comes on (remote) or goes out on (this page). */
export interface SpeakerSource {
  readonly id: string;
  readonly connection: ConnectionLike | undefined;
}

/** Where the watch finds the group's participants at each poll. */
export interface SpeakerSources {
  /** The other participants now. */
  remotes(): readonly SpeakerSource[];
  /** This page, with a connection that sends its audio (none: its level is not known). */
  local(): SpeakerSource | undefined;
}

/** Energy totals of an audio stats report, kept between polls. */
interface Totals {
  energy: number;
  duration: number;
}

/**
 * Reads each participant's audio level every {@link SPEAKER_POLL_MS} and tells `changed` the
 * speakers, loudest first, when who speaks or their order changed ({@link Speakers} smooths).
 *
 * A remote participant's level over a poll is the greater of two readings of what the page
 * receives: the RTP audio level header extension of the latest packet
 * (`getSynchronizationSources()`), and the root mean square of the decoded audio since the last poll
 * (`inbound-rtp` `totalAudioEnergy` over `totalSamplesDuration`). The extension alone is one
 * packet's moment: Chromium's fake microphone beeps about 40 ms in 500, which polls 200 ms apart
 * mostly miss; the energy counts every packet. This page's level is the energy of what its audio
 * sender captured (`media-source`), and silence while its track is disabled or muted. Chromium
 * decodes (and reports) a peer's audio only while the page plays it in a media element.
 */
export class SpeakerWatch {
  readonly #sources: SpeakerSources;
  readonly #changed: (speakers: SpeakerLevel[]) => void;
  readonly #clock: Clock;
  readonly #speakers: Speakers;
  /** Totals at the last poll, per stats object (a receiver or sender: a new connection starts afresh). */
  readonly #totals = new WeakMap<object, Totals>();
  /** Per receiver, the RTP timestamp of each source's latest packet at the last poll: an unchanged one is old news. */
  readonly #stamps = new WeakMap<object, Map<number, number>>();
  #timer: unknown;
  #running = false;

  constructor(
    sources: SpeakerSources,
    changed: (speakers: SpeakerLevel[]) => void,
    clock: Clock,
    speakers: Speakers = new Speakers(),
  ) {
    this.#sources = sources;
    this.#changed = changed;
    this.#clock = clock;
    this.#speakers = speakers;
  }

  /** The speakers at the last poll, loudest first. */
  get current(): readonly SpeakerLevel[] {
    return this.#speakers.current;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule();
  }

  /** No more polls, nor changes told (a poll on its way is dropped). */
  stop(): void {
    this.#running = false;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    // The next poll is counted from the end of this one: a slow getStats does not pile polls up.
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#poll().finally(() => {
        if (this.#running) this.#schedule();
      });
    }, SPEAKER_POLL_MS);
  }

  async #poll(): Promise<void> {
    const remotes = this.#sources.remotes();
    const local = this.#sources.local();
    const readings = await Promise.all([
      ...remotes.map(async ({ id, connection }) => [id, await this.#received(connection)] as const),
      ...(local ? [(async () => [local.id, await this.#sent(local.connection)] as const)()] : []),
    ]);
    if (!this.#running) return;
    const now = this.#clock.now();
    const here = new Set(readings.map(([id]) => id));
    for (const speaker of this.#speakers.current) if (!here.has(speaker.id)) this.#speakers.remove(speaker.id);
    for (const [id, level] of readings) if (level !== undefined) this.#speakers.feed(id, level, now);
    const changed = this.#speakers.update(now);
    if (changed) this.#changed(changed);
  }

  /** A remote participant's level over the last poll; undefined when nothing of its audio is known. */
  async #received(connection: ConnectionLike | undefined): Promise<number | undefined> {
    let level: number | undefined;
    for (const receiver of connection?.getReceivers() ?? []) {
      if (receiver.track?.kind !== 'audio') continue;
      let stamps = this.#stamps.get(receiver);
      if (!stamps) {
        stamps = new Map();
        this.#stamps.set(receiver, stamps);
      }
      for (const source of receiver.getSynchronizationSources()) {
        // A source is listed for 10 s after its last packet: its level then is no longer news.
        const fresh = stamps.get(source.source) !== source.rtpTimestamp;
        stamps.set(source.source, source.rtpTimestamp);
        if (fresh && typeof source.audioLevel === 'number') level = Math.max(level ?? 0, source.audioLevel);
      }
      const energy = this.#energy(receiver, await statsOf(receiver), 'inbound-rtp');
      if (energy !== undefined) level = Math.max(level ?? 0, energy);
    }
    return level;
  }

  /** This page's level over the last poll, from its audio sender on `connection`. */
  async #sent(connection: ConnectionLike | undefined): Promise<number | undefined> {
    const sender = connection?.getSenders().find((s) => s.track?.kind === 'audio');
    if (!sender?.track) return undefined;
    const energy = this.#energy(sender, await statsOf(sender), 'media-source');
    // Read either way, so the totals stay current; a page that muted itself is silent.
    return !sender.track.enabled || sender.track.muted ? 0 : energy;
  }

  /**
   * The RMS level since the last poll of the audio report of `type` in `stats`, from its energy
   * totals; on the first poll (or without totals) its `audioLevel` of the moment.
   */
  #energy(owner: object, stats: StatsLike | undefined, type: string): number | undefined {
    let found: Record<string, unknown> | undefined;
    stats?.forEach((report) => {
      if (report.type === type && report.kind === 'audio') found = report;
    });
    if (!found) return undefined;
    const energy = found.totalAudioEnergy;
    const duration = found.totalSamplesDuration;
    const moment = typeof found.audioLevel === 'number' ? found.audioLevel : undefined;
    if (typeof energy !== 'number' || typeof duration !== 'number') return moment;
    const last = this.#totals.get(owner);
    this.#totals.set(owner, { energy, duration });
    if (!last || duration <= last.duration || energy < last.energy) return moment;
    return Math.sqrt((energy - last.energy) / (duration - last.duration));
  }
}

/** The stats of a receiver or sender; undefined when it is closed or WebRTC refused. */
async function statsOf(owner: { getStats(): Promise<StatsLike> }): Promise<StatsLike | undefined> {
  try {
    return await owner.getStats();
  } catch {
    return undefined;
  }
}
