/**
 * The rate a presenter's browser starts its video at, told in the unit's answer.
 *
 * Chromium starts its send-side estimate at 300 kbit/s and climbs from there by probing (bursts at
 * 3x and 6x at once, judged by the unit's transport-wide feedback), else by 8% a second. The unit
 * stamps each packet's arrival in JavaScript: when its event loop or its process waits (a busy
 * machine, a page or viewer being set up), a probe's packets are stamped together, Chromium finds
 * the probe invalid, and a 720p camera takes 20 s to reach its top layer (seen in Chromium's own
 * log, issue 21). Starting higher shortens that climb whatever the probes show; Chromium reads the
 * start from the `x-google-start-bitrate` codec parameter (kbit/s) of the remote description, as
 * Jitsi's bridge sets it (800 kbit/s). A presenter whose uplink carries less backs off within a
 * second or two of loss and queueing.
 */
export const START_KBPS = 800;

/** Codecs in a video section that carry no picture of their own (no start rate for them). */
const NOT_PICTURES = new Set(['rtx', 'red', 'ulpfec', 'flexfec-03']);

/** `sdp` with the start rate set on every picture codec of its video sections. */
export function withStartBitrate(sdp: string, kbps: number = START_KBPS): string {
  const eol = sdp.includes('\r\n') ? '\r\n' : '\n';
  const sections = sdp.split(/(?=^m=)/m);
  return sections
    .map((section) => (section.startsWith('m=video') ? videoSection(section, kbps, eol) : section))
    .join('');
}

function videoSection(section: string, kbps: number, eol: string): string {
  const lines = section.split(eol);
  const pictures = new Set<string>();
  for (const line of lines) {
    const rtpmap = /^a=rtpmap:(\d+) ([^/\s]+)/.exec(line);
    if (rtpmap?.[1] && rtpmap[2] && !NOT_PICTURES.has(rtpmap[2].toLowerCase())) pictures.add(rtpmap[1]);
  }
  const parameter = `x-google-start-bitrate=${kbps}`;
  const withFmtp = new Set<string>();
  const out = lines.map((line) => {
    const fmtp = /^a=fmtp:(\d+) (.*)$/.exec(line);
    if (!fmtp?.[1] || !pictures.has(fmtp[1])) return line;
    withFmtp.add(fmtp[1]);
    if (/(^|;)\s*x-google-start-bitrate=/.test(fmtp[2] ?? '')) return line;
    return `${line};${parameter}`;
  });
  // A codec without parameters (VP8 has none) gets a line of its own after its rtpmap.
  const result: string[] = [];
  for (const line of out) {
    result.push(line);
    const rtpmap = /^a=rtpmap:(\d+) /.exec(line);
    if (rtpmap?.[1] && pictures.has(rtpmap[1]) && !withFmtp.has(rtpmap[1])) {
      result.push(`a=fmtp:${rtpmap[1]} ${parameter}`);
    }
  }
  return result.join(eol);
}
