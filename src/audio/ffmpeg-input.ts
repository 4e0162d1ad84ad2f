/**
 * What ffmpeg may read from an upload, and what of its complaints reaches the client. Without an
 * allow-list ffmpeg chose its demuxer from the content, and some demuxers open other files: an HLS
 * playlist, a DASH manifest or an ffconcat list naming a server file outside the file roots was
 * decoded and transcribed for any client. Only containers that hold their own audio are allowed;
 * the only protocol is `file`, through which the input itself (/dev/stdin, the upload's
 * descriptor) is opened.
 */

/**
 * ffmpeg's demuxer names (as `-format_whitelist` matches them against a demuxer's name list: `mov`
 * is also mp4, m4a and 3gp; `matroska` is also webm), each reading only the bytes it is given
 * (mov's external references, `enable_drefs`, stay off as they are by default).
 */
export const DECODE_DEMUXERS = [
  'wav',
  'w64',
  'aiff',
  'caf',
  'mp3',
  'aac',
  'flac',
  'ogg',
  'matroska',
  'mov',
  'mpeg',
  'mpegts',
] as const;

/**
 * The rates decoded audio comes out at: an input at one of them keeps it; any other (1 Hz, 44101 Hz,
 * 384 kHz) is resampled by ffmpeg to the nearest, so no header can make the decode larger than 48,000
 * frames a second. Mono and stereo are kept as they are (voxd averages them to mono as it reads);
 * more channels are mixed down to stereo by ffmpeg, so its output is at most 384 KB a second.
 */
const OUTPUT_RATES = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000];
export const MAX_DECODE_RATE = 48_000;

/** ffmpeg's arguments for a decode of the descriptor on its stdin to a streamed float WAV. */
export function decodeArgs(): string[] {
  const input = ['-format_whitelist', DECODE_DEMUXERS.join(','), '-protocol_whitelist', 'file'];
  const format = `aformat=sample_fmts=flt:sample_rates=${OUTPUT_RATES.join('|')}:channel_layouts=mono|stereo`;
  const output = [
    '-map',
    '0:a:0',
    '-af',
    format,
    '-map_metadata',
    '-1',
    '-c:a',
    'pcm_f32le',
    '-f',
    'wav',
    'pipe:1',
  ];
  // /dev/stdin is opened through the file protocol: seekable, since fd 0 is the regular file.
  return [...input, '-i', '/dev/stdin', ...output];
}

const REFUSED = /\[([\w.-]+) @ 0x[0-9a-f]+\] Format not on whitelist/i;

/** The demuxer ffmpeg found for an input it refused by the allow-list (hls, dash, concat, ...). */
export function refusedFormat(stderr: string): string | undefined {
  return REFUSED.exec(stderr)?.[1];
}

/** ffmpeg's names of the formats clients send, for the refusal's message. */
export const ACCEPTED_FORMATS =
  'WAV, W64, AIFF, CAF, MP3, AAC (ADTS), FLAC, Ogg (Vorbis, Opus), WebM/Matroska, MP4/M4A/MOV, MPEG-PS/TS';

/**
 * ffmpeg's verdict on an input it could not read: its last line, without the input's name (always
 * /dev/stdin or a pipe) or a context's address (`[concat @ 0x558a...]` says nothing to a client and
 * tells an attacker where ffmpeg's heap lies), cut short.
 */
export function lastLine(stderr: string): string {
  const line = (stderr.trim().split('\n').at(-1)?.trim() ?? '')
    .replace(/\[([\w.:-]+) @ 0x[0-9a-f]+\]\s*/gi, '$1: ')
    .replace(/0x[0-9a-f]{6,}/gi, '0x...')
    .replace(/^(\/dev\/stdin|pipe:\d): /, '');
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
