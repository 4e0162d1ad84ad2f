/**
 * The fuzzer's media mutations (issue 22): what ffmpeg is handed as uploaded audio. Playlists and
 * other indirection formats (HLS, DASH, concat/ffconcat, SDP, images, subfile and data URLs) that
 * name server files, loopback URLs or themselves; and real containers (FLAC, Ogg Vorbis, Ogg Opus,
 * MP3, M4A, ADTS AAC, WebM) made by ffmpeg once per run, with absurd rates and channel counts
 * written into their headers, bytes flipped, or cut short. Whatever comes back, no playlist is
 * ever decoded, no pointer address and no "WAV" wording reaches the client.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface MediaRng {
  int(n: number): number;
  range(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
  bytes(n: number): Buffer;
}

/** What a media case's answer must not show. */
export interface MediaCase {
  name: string;
  bytes: Buffer;
  /** A playlist or other indirection: decoding it at all is a finding. */
  indirect: boolean;
}

const TARGETS = [
  '/etc/passwd',
  '/etc/hostname',
  '/proc/self/environ',
  '/dev/stdin',
  'stdin',
  'pipe:0',
  'file:/etc/passwd',
  'http://127.0.0.1:1/x.mp3',
  'subfile,,start,0,end,0,,:/etc/passwd',
  'data:audio/mp3;base64,AAAA',
  'concat:/etc/passwd|/etc/hostname',
  '../../../../etc/passwd',
];

function playlist(rng: MediaRng): MediaCase {
  const target = rng.pick(TARGETS);
  const kind = rng.int(8);
  const texts: [string, string][] = [
    [
      'hls',
      `#EXTM3U\n#EXT-X-TARGETDURATION:${rng.pick([1, 10, 0, 99999])}\n#EXTINF:5.0,\n${target}\n${rng.chance(0.5) ? '#EXT-X-ENDLIST\n' : ''}`,
    ],
    [
      'hls-master',
      `#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n${target}\n#EXT-X-MEDIA:TYPE=AUDIO,URI="${target}"\n`,
    ],
    [
      'dash',
      `<?xml version="1.0"?>\n<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="${rng.pick(['static', 'dynamic'])}" mediaPresentationDuration="PT2S" minBufferTime="PT1S"><Period><AdaptationSet mimeType="audio/mp4"><Representation id="a" bandwidth="1" codecs="mp4a.40.2"><BaseURL>${target}</BaseURL></Representation></AdaptationSet></Period></MPD>\n`,
    ],
    ['ffconcat', `ffconcat version 1.0\n${`file ${target}\n`.repeat(rng.range(1, 3))}`],
    ['concat-safe0', `ffconcat version 1.0\nfile '${target}'\noption safe 0\ninpoint 0\n`],
    [
      'sdp',
      `v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\nm=audio ${rng.range(1, 65535)} RTP/AVP 0\n`,
    ],
    ['m3u-plain', `${target}\n${target}\n`],
    ['smil-ish', `<smil><body><audio src="${target}"/></body></smil>\n`],
  ];
  const [name, text] = texts[kind]!;
  return { name, bytes: Buffer.from(text), indirect: true };
}

/** Real containers, made by ffmpeg once per run (0.2 s of a tone each; small). */
let seeds: Map<string, Buffer> | undefined;
function mediaSeeds(): Map<string, Buffer> {
  if (seeds) return seeds;
  seeds = new Map();
  const dir = mkdtempSync(join(tmpdir(), 'voxd-fuzz-media-'));
  try {
    const make = (name: string, args: string[], input = 'sine=f=440:r=16000:d=0.2') => {
      const path = join(dir, name);
      execFileSync('ffmpeg', [
        '-hide_banner',
        '-loglevel',
        'error',
        '-f',
        'lavfi',
        '-i',
        input,
        ...args,
        path,
      ]);
      seeds!.set(name, readFileSync(path));
    };
    make('a.flac', ['-c:a', 'flac']);
    make('b.flac', ['-c:a', 'flac'], 'anullsrc=r=384000:cl=7.1:d=0.2');
    make('a.ogg', ['-c:a', 'libvorbis']);
    make('a.opus', ['-c:a', 'libopus']);
    make('a.mp3', ['-c:a', 'libmp3lame']);
    make('a.m4a', ['-c:a', 'aac']);
    make('a.aac', ['-c:a', 'aac', '-f', 'adts']);
    make('a.webm', ['-c:a', 'libopus']);
    make('p.png', ['-frames:v', '1'], 'testsrc=size=8x8:d=0.1');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return seeds;
}

const ABSURD_RATES = [0, 1, 2, 7, 999, 8000, 44101, 96000, 384000, 655350, 0xfffff];

/** FLAC STREAMINFO (right after "fLaC" and its 4-byte block header): rate 20 bits, channels-1 3 bits. */
function editFlac(rng: MediaRng, out: Buffer): void {
  const at = 8 + 10;
  const rate = rng.pick(ABSURD_RATES) & 0xfffff;
  const channels = rng.int(8);
  const bits = out.readUInt8(at + 2) & 0x01; // keep the top bit of bits-per-sample
  out.writeUInt8((rate >> 12) & 0xff, at);
  out.writeUInt8((rate >> 4) & 0xff, at + 1);
  out.writeUInt8(((rate & 0xf) << 4) | (channels << 1) | bits, at + 2);
}

/** The Vorbis identification header: channels (1 byte) and rate (32 bits) after "\x01vorbis" + version. */
function editVorbis(rng: MediaRng, out: Buffer): void {
  const at = out.indexOf('\x01vorbis', 0, 'latin1');
  if (at < 0) return;
  out.writeUInt8(rng.pick([0, 1, 2, 8, 255]), at + 11);
  out.writeUInt32LE(rng.pick(ABSURD_RATES), at + 12);
}

/** OpusHead: channel count (byte 9) and input rate (bytes 12..15). */
function editOpus(rng: MediaRng, out: Buffer): void {
  const at = out.indexOf('OpusHead', 0, 'latin1');
  if (at < 0) return;
  out.writeUInt8(rng.pick([0, 1, 2, 8, 255]), at + 9);
  out.writeUInt32LE(rng.pick(ABSURD_RATES), at + 12);
  if (rng.chance(0.3)) out.writeUInt8(rng.pick([0, 1, 255]), at + 18); // mapping family
}

/** An MP3 or ADTS frame header's rate index and channel bits, in the first frames found. */
function editFrameHeaders(rng: MediaRng, out: Buffer): void {
  for (let i = 0, edited = 0; i + 4 < out.length && edited < 4; i++) {
    if (out[i] !== 0xff || (out[i + 1]! & 0xe0) !== 0xe0) continue;
    out[i + 2] = (out[i + 2]! & 0x03) | (rng.int(16) << 4) | (rng.int(4) << 2);
    out[i + 3] = (out[i + 3]! & 0x3f) | (rng.int(4) << 6);
    edited++;
  }
}

/** The mp4 sample description's channel count and rate (after "mp4a"). */
function editMp4(rng: MediaRng, out: Buffer): void {
  const at = out.indexOf('mp4a', 0, 'latin1');
  if (at < 0) return;
  out.writeUInt16BE(rng.pick([0, 1, 2, 8, 0xffff]), at + 20);
  // 16.16 fixed point; `>>> 0` keeps a rate of 32768 or more from turning negative.
  out.writeUInt32BE(((rng.pick(ABSURD_RATES) & 0xffff) << 16) >>> 0, at + 28);
}

function container(rng: MediaRng): MediaCase {
  const all = mediaSeeds();
  const name = rng.pick([...all.keys()]);
  const out = Buffer.from(all.get(name)!);
  const edits = rng.range(1, 3);
  for (let i = 0; i < edits; i++) {
    switch (rng.int(5)) {
      case 0:
        if (name.endsWith('.flac')) editFlac(rng, out);
        else if (name === 'a.ogg') editVorbis(rng, out);
        else if (name === 'a.opus' || name === 'a.webm') editOpus(rng, out);
        else if (name === 'a.m4a') editMp4(rng, out);
        else editFrameHeaders(rng, out);
        break;
      case 1:
        editFrameHeaders(rng, out);
        break;
      case 2:
        for (let k = rng.range(1, 16); k > 0; k--) out[rng.int(out.length)] = rng.int(256);
        break;
      case 3:
        return { name, bytes: out.subarray(0, rng.int(out.length)), indirect: false };
      default:
        // Unchanged: the real file decodes.
        break;
    }
  }
  return { name, bytes: out, indirect: false };
}

export function mediaInput(rng: MediaRng): MediaCase {
  return rng.chance(0.4) ? playlist(rng) : container(rng);
}

/** What a media case's answer shows that it must not; undefined when it is clean. */
export function mediaProblem(media: MediaCase, status: number | string, body: string): string | undefined {
  if (/0x[0-9a-f]{6,}/i.test(body)) return 'a pointer address reached the client';
  if (/unsupported WAV|not a WAV/.test(body)) return 'a compressed input was called a WAV';
  if (media.indirect && typeof status === 'number' && status >= 200 && status < 300)
    return `a ${media.name} input was decoded`;
  return undefined;
}
