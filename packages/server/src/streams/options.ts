import type { IceSettings } from '../units/ice-settings.js';
import { DEFAULT_UNIT_LIMITS, type UnitLimits } from '../units/unit-budget.js';

/**
 * How the service runs live streams (docs/calls.md, "Live streams"): the addresses its forwarding
 * units announce to browsers, and the bounds a stream has.
 */
export interface StreamOptions {
  /**
   * The IP addresses browsers reach this node's forwarding units on (its public address in
   * production). Default 127.0.0.1: streams work between pages on this machine only.
   */
  mediaAddresses?: string[];
  /** UDP ports the units bind in, inclusive; any free port when absent. */
  portRange?: [number, number];
  /** Browser addresses the units may exchange media with; any when absent (tests restrict it to 127.0.0.1). */
  remoteAddresses?: string[];
  /** Pages one stream takes at most (presenter and watchers); default STREAM_MAX_PAGES (200). */
  maxPages?: number;
  /**
   * A presenter's or viewer's media that has not connected by then ends failed, and its UDP port is
   * free again (ms); default 15,000.
   */
  connectTimeoutMs?: number;
  /** Forwarding units one page may send to on a node at once (streams and group calls); default 4. */
  unitsPerPage?: number;
  /** Forwarding units one app may have on a node at once; default 100. */
  unitsPerApp?: number;
}

export const STREAM_CONNECT_TIMEOUT_MS = 15_000;

/** Streams one page may be on at once. */
export const STREAMS_PER_PAGE = 8;

/** The media settings of this node's forwarding units (live streams' and group calls'), from the stream options. */
export function unitMedia(options: StreamOptions = {}): IceSettings {
  const allowed = options.remoteAddresses;
  return {
    hostAddresses: options.mediaAddresses ?? ['127.0.0.1'],
    portRange: options.portRange,
    allowRemoteAddress: allowed === undefined ? undefined : (address: string) => allowed.includes(address),
  };
}

/** The bounds of this node's forwarding units, from the stream options. */
export function unitLimits(options: StreamOptions = {}): UnitLimits {
  return {
    unitsPerPage: options.unitsPerPage ?? DEFAULT_UNIT_LIMITS.unitsPerPage,
    unitsPerApp: options.unitsPerApp ?? DEFAULT_UNIT_LIMITS.unitsPerApp,
  };
}
