import { describe, expect, it } from 'vitest';
import { START_KBPS, withStartBitrate } from './start-bitrate.js';

const ANSWER = [
  'v=0',
  'o=- 1 0 IN IP4 127.0.0.1',
  's=-',
  't=0 0',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111',
  'a=rtpmap:111 opus/48000/2',
  'a=fmtp:111 minptime=10;useinbandfec=1',
  'm=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 35',
  'a=rtpmap:96 VP8/90000',
  'a=rtcp-fb:96 transport-cc',
  'a=rtpmap:97 rtx/90000',
  'a=fmtp:97 apt=96',
  'a=rtpmap:102 H264/90000',
  'a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f',
  'a=rtpmap:103 red/90000',
  'a=rtpmap:35 ulpfec/90000',
  '',
].join('\r\n');

describe('the start rate in the answer to a presenter', () => {
  it('is set on every picture codec of a video section, on a line of its own when the codec has none', () => {
    const sdp = withStartBitrate(ANSWER, 800);
    const lines = sdp.split('\r\n');
    // VP8 has no parameters: a line right after its rtpmap.
    expect(lines[lines.indexOf('a=rtpmap:96 VP8/90000') + 1]).toBe('a=fmtp:96 x-google-start-bitrate=800');
    // H264's line keeps its parameters.
    expect(lines).toContain(
      'a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f;x-google-start-bitrate=800',
    );
    // Resends, redundancy and FEC carry no picture of their own; audio is left alone.
    expect(lines).toContain('a=fmtp:97 apt=96');
    expect(sdp).not.toMatch(/^a=fmtp:(97|103|35|111) .*x-google-start-bitrate/m);
    expect(lines).toContain('a=fmtp:111 minptime=10;useinbandfec=1');
    // Nothing else moved: the same lines, plus one.
    expect(lines.length).toBe(ANSWER.split('\r\n').length + 1);
    expect(sdp.endsWith('\r\n')).toBe(true);
  });

  it('keeps a start rate already there, and is the same when applied twice', () => {
    const once = withStartBitrate(ANSWER);
    expect(once).toContain(`a=fmtp:96 x-google-start-bitrate=${START_KBPS}`);
    expect(withStartBitrate(once, 2000)).toBe(once);
  });

  it('keeps the line ends it was given, and an SDP without video as it was', () => {
    const lf = ANSWER.replaceAll('\r\n', '\n');
    expect(withStartBitrate(lf, 800)).toContain('\na=fmtp:96 x-google-start-bitrate=800\n');
    expect(withStartBitrate(lf, 800)).not.toContain('\r');
    const audioOnly = ANSWER.slice(0, ANSWER.indexOf('m=video'));
    expect(withStartBitrate(audioOnly, 800)).toBe(audioOnly);
  });
});
