import { isRecord, videoWantsProblem } from '@realtime/protocol';
import type { IceCandidateInit } from './peer-sessions.js';
import { NoMediaPortError } from './session-errors.js';
import { UnitLimitError } from './unit-budget.js';
import type { VideoWants } from './video-wants.js';

/**
 * A page's signal for a forwarding unit, read: an SDP of the expected type, a candidate, a restart
 * request, or what a receiving page asks of the video (adaptive stream).
 */
export type UnitSignal = { sdp: string } | { candidate: IceCandidateInit } | { restart: true } | { video: VideoWants };

/**
 * Reads a page's signal for a unit, or answers what is wrong with it. A sending page (`sends`) offers
 * its media; a receiving one answers the unit's offer and may ask for a fresh one. `who` names the
 * page in the problem ("a presenter", "a viewer"). A receiving page may also say what it wants of
 * the video (`video`: a maximum size, paused); a sending page has nothing to ask of its own unit.
 */
export function readUnitSignal(data: Record<string, unknown>, sends: boolean, who: string): UnitSignal | string {
  if (data.sdp !== undefined) {
    const expected = sends ? 'offer' : 'answer';
    if (!isRecord(data.sdp) || data.sdp.type !== expected || typeof data.sdp.sdp !== 'string') {
      return `data.sdp must be { "type": "${expected}", "sdp": <string> } from ${who}`;
    }
    // werift takes an SDP without media and "connects" it at once: a sender must send something.
    if (sends && !/^m=(audio|video) /m.test(data.sdp.sdp)) return 'data.sdp: the offer has no audio or video to send';
    return { sdp: data.sdp.sdp };
  }
  if (data.candidate !== undefined) {
    const c = data.candidate;
    if (!isRecord(c) || typeof c.candidate !== 'string') return 'data.candidate must be { "candidate": <string>, ... }';
    const candidate: IceCandidateInit = { candidate: c.candidate };
    if (typeof c.sdpMid === 'string' || c.sdpMid === null) candidate.sdpMid = c.sdpMid;
    if (typeof c.sdpMLineIndex === 'number' || c.sdpMLineIndex === null) candidate.sdpMLineIndex = c.sdpMLineIndex;
    return { candidate };
  }
  if (data.restart === true && !sends) return { restart: true };
  if (data.video !== undefined) {
    if (sends) return `data.video is for a page receiving video, not from ${who}`;
    const problem = videoWantsProblem(data.video);
    if (problem !== undefined) return problem;
    return { video: readWants(data.video as Record<string, unknown>) };
  }
  return sends ? 'data must hold sdp or candidate' : 'data must hold sdp, candidate, restart: true or video';
}

/** The fields of a checked `video` (videoWantsProblem), without the unknown ones. */
function readWants(video: Record<string, unknown>): VideoWants {
  const wants: VideoWants = {};
  if (typeof video.maxWidth === 'number') wants.maxWidth = video.maxWidth;
  if (typeof video.maxHeight === 'number') wants.maxHeight = video.maxHeight;
  if (typeof video.paused === 'boolean') wants.paused = video.paused;
  return wants;
}

/**
 * Why a unit could not take a page's signal: the node has no port left, a bound of the page or app
 * (units per page or app, the app's share of a short port range), or the page's SDP is at fault.
 */
export interface UnitRefusal {
  code: 'unavailable' | 'bad_frame';
  /** For the page, after the frame's name. */
  message: string;
  /** Whether the operator should hear of it (the node is full), or it is the page's or app's business. */
  operator: boolean;
}

export function unitRefusal(error: unknown): UnitRefusal {
  if (error instanceof NoMediaPortError) {
    return { code: 'unavailable', message: 'the service has no free media port now; try again later', operator: true };
  }
  if (error instanceof UnitLimitError) return { code: 'unavailable', message: error.message, operator: false };
  // werift could not take the description: the page's SDP is at fault, not the service.
  return { code: 'bad_frame', message: 'the forwarding unit could not use this signal', operator: false };
}

/**
 * A receiving page's session that a unit could not open for want of a port or by a bound of its
 * app: the page is told (`unavailable`), as it would otherwise wait for an offer that never comes.
 * Undefined for any other failure, which is the service's and only logged.
 */
export function viewerRefusal(error: unknown): UnitRefusal | undefined {
  if (!(error instanceof NoMediaPortError) && !(error instanceof UnitLimitError)) return undefined;
  return unitRefusal(error);
}
