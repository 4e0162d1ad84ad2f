import { InputError } from '../errors.js';
import { decodePcm } from './pcm.js';
import { pcm16Audio } from './pcm16-audio.js';
import { type Audio, HOST_LITTLE_ENDIAN } from './types.js';
import { floatToPcm16 } from './wav-encode.js';

/** Any WAV input voxd cannot decode. The message says what was received, so it can go to the client. */
export class WavError extends InputError {
  constructor(message: string) {
    super(message);
    this.name = 'WavError';
  }
}

/**
 * A well-formed WAV whose samples are in an encoding voxd does not read itself (mu-law and A-law
 * telephony audio, ADPCM, MP3 in WAV...): ffmpeg decodes it where the server has one.
 */
export class WavEncodingError extends WavError {}

const SUPPORTED = 'supported: PCM 8/16/24/32-bit and IEEE float 32/64-bit';
const FORMAT_PCM = 0x0001;
const FORMAT_FLOAT = 0x0003;
const FORMAT_EXTENSIBLE = 0xfffe;
const PCM_BITS = [8, 16, 24, 32];
const FLOAT_BITS = [32, 64];
/**
 * Rates outside this range are corrupt or hostile headers: resampling a 1 Hz file to 16 kHz makes
 * 16,000 samples of every byte. Real audio lies between 8 kHz telephony and 384 kHz studio files.
 */
export const MIN_SAMPLE_RATE = 1000;
export const MAX_SAMPLE_RATE = 384_000;
/**
 * How far into a file its fmt and data chunks must start. A file is parsed from this much of its
 * head, so a server file or a spooled upload is never read whole before its header is checked.
 */
export const HEADER_WINDOW = 1 << 20;

/** Names of formats people actually send, so the error says "MP3" rather than only a number. */
const FORMAT_NAMES = new Map<number, string>([
  [0x0002, 'Microsoft ADPCM'],
  [0x0006, 'A-law'],
  [0x0007, 'mu-law'],
  [0x0011, 'IMA ADPCM'],
  [0x0031, 'GSM 6.10'],
  [0x0050, 'MPEG'],
  [0x0055, 'MP3'],
  [0x00ff, 'AAC'],
  [0x1610, 'HE-AAC'],
  [0x6771, 'Vorbis'],
  [0xf1ac, 'FLAC'],
  [FORMAT_EXTENSIBLE, 'WAVE_FORMAT_EXTENSIBLE'],
]);

/**
 * The last 12 bytes of the KSDATAFORMAT_SUBTYPE_* GUIDs: an extensible subformat whose GUID ends this way
 * carries a classic format code in its first 4 bytes (1 = PCM, 3 = IEEE float).
 */
const SUBFORMAT_GUID_TAIL = [0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71];

export interface WavFormat {
  float: boolean;
  channels: number;
  sampleRate: number;
  /** Container size of one sample in bits (for extensible files the valid bits may be fewer). */
  bits: number;
}

/** Where a WAV file's samples are and how they are encoded, read from its head. */
export interface WavLayout {
  format: WavFormat;
  /** Offset of the first sample byte in the file. */
  dataStart: number;
  /** Sample bytes present: the declared data size, cut to what the file holds, whole frames only. */
  dataBytes: number;
  frames: number;
}

/**
 * Decodes a RIFF/WAVE file to float samples in [-1, 1]. Accepts PCM (8/16/24/32-bit), IEEE float (32/64-bit)
 * and WAVE_FORMAT_EXTENSIBLE with either subformat. Any other input throws WavError, never anything else:
 * every read below is bounds-checked against the bytes actually present.
 */
export function decodeWav(bytes: Buffer | Uint8Array, owned = false): Audio {
  const layout = parseWavLayout(bytes, bytes.byteLength);
  const data = bytes.subarray(layout.dataStart, layout.dataStart + layout.dataBytes);
  return decodeData(data, layout.format, owned);
}

/**
 * Sample bytes (whole frames) as audio. 16-bit PCM, what nearly every upload is, stays PCM16 (a
 * copy of the bytes, pcm16-audio.ts): the floats are made only where something reads them, on a
 * runner or a worker thread rather than on the server's main thread (issue 27). Other encodings
 * are decoded to floats.
 */
export function decodeData(data: Uint8Array, format: WavFormat, owned = false): Audio {
  if (!isPcm16(format))
    return { samples: decodePcm(data, format), sampleRate: format.sampleRate, channels: format.channels };
  // `owned`: bytes nobody else holds (made for this request: a decoded base64 payload, an upload), read in place.
  if (owned && data.byteOffset % 2 === 0)
    return pcm16Audio(
      new Int16Array(data.buffer, data.byteOffset, data.byteLength >> 1),
      format.sampleRate,
      format.channels,
    );
  const pcm16 = new Int16Array(Math.floor(data.byteLength / (2 * format.channels)) * format.channels);
  new Uint8Array(pcm16.buffer).set(data.subarray(0, pcm16.byteLength));
  return pcm16Audio(pcm16, format.sampleRate, format.channels);
}

/** Whether samples of `format` can be read as they are into an Int16Array on this machine. */
export const isPcm16 = (format: WavFormat) => !format.float && format.bits === 16 && HOST_LITTLE_ENDIAN;

/**
 * A 16-bit PCM WAV's samples as they are (an engine's own output): a copy of the data chunk as an
 * Int16Array of its own. Any other encoding is decoded to floats and converted, with the same
 * values encodeWav would write.
 */
export function readPcm16Wav(bytes: Buffer | Uint8Array): {
  pcm16: Int16Array;
  sampleRate: number;
  channels: number;
} {
  const audio = decodeWav(bytes);
  const { sampleRate, channels } = audio;
  const pcm16 = audio.kind === 'pcm16' ? audio.pcm16 : Int16Array.from(audio.samples, floatToPcm16);
  return { pcm16, sampleRate, channels };
}

/**
 * Reads the layout of a WAV file of `size` bytes from its first bytes, `head` (all of them, or at
 * least HEADER_WINDOW). Messages never quote the file's bytes: a server file's content is not the
 * client's to read, only whether it is audio.
 */
export function parseWavLayout(head: Uint8Array, size: number): WavLayout {
  const len = head.byteLength;
  checkRiffHeader(head);
  const view = new DataView(head.buffer, head.byteOffset, len);

  let format: WavFormat | undefined;
  let dataStart = -1;
  let declared = 0;
  // The RIFF size field is ignored: streaming writers leave it 0 or 0xFFFFFFFF, so walk what is present.
  let pos = 12;
  for (; pos + 8 <= len; ) {
    const id = fourcc(head, pos);
    const chunkSize = view.getUint32(pos + 4, true);
    const body = pos + 8;
    if (id === 'fmt ' && !format) format = parseFmt(view, body, Math.min(chunkSize, len - body));
    else if (id === 'data' && dataStart < 0) {
      dataStart = body;
      declared = chunkSize; // a streamed WAV declares 0xFFFFFFFF: what arrived counts
    }
    if ((format && dataStart >= 0) || chunkSize > size - body) break;
    pos = body + chunkSize + (chunkSize & 1); // chunks are padded to an even size
  }

  if (len < size && pos + 8 > len && !(format && dataStart >= 0))
    throw new WavError(`unsupported WAV: no fmt and data chunks in the first ${HEADER_WINDOW} bytes`);
  if (!format) throw new WavError('WAV has no fmt chunk');
  if (dataStart < 0) throw new WavError('WAV has no data chunk');
  const frameBytes = (format.bits / 8) * format.channels;
  const frames = Math.floor(Math.min(declared, Math.max(0, size - dataStart)) / frameBytes); // a partial trailing frame is dropped
  return { format, dataStart, dataBytes: frames * frameBytes, frames };
}

/** What a file that is not WAV seems to be, from its first bytes, so the client learns what it sent. */
function sniffFormat(bytes: Uint8Array): string | undefined {
  const at = (i: number, text: string) => latin1(bytes, i, text.length) === text;
  if (at(0, 'ID3') || (bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0)) return 'MP3 or AAC';
  if (at(0, 'OggS')) return 'Ogg (Vorbis or Opus)';
  if (at(0, 'fLaC')) return 'FLAC';
  if (at(4, 'ftyp')) return 'MP4/M4A';
  if (bytes[0] === 0x1a && bytes[1] === 0x45 && bytes[2] === 0xdf && bytes[3] === 0xa3)
    return 'WebM/Matroska';
  return undefined;
}

function checkRiffHeader(bytes: Uint8Array): void {
  const magic = latin1(bytes, 0, 4);
  if (magic === 'RF64') throw new WavError('unsupported WAV: RF64 (64-bit RIFF) files are not supported');
  if (magic !== 'RIFF') {
    if (bytes.byteLength === 0) throw new WavError('not a WAV file: it is empty');
    const kind = sniffFormat(bytes);
    throw new WavError(
      kind
        ? `not a WAV file: it looks like ${kind}; only WAV audio is supported`
        : 'not a WAV file: no "RIFF" header',
    );
  }
  if (bytes.byteLength < 12) {
    throw new WavError(`truncated WAV header: got ${bytes.byteLength} bytes, need at least 12`);
  }
  if (latin1(bytes, 8, 4) !== 'WAVE') {
    throw new WavError('not a WAV file: a RIFF file whose form type is not "WAVE"');
  }
}

function parseFmt(view: DataView, at: number, size: number): WavFormat {
  if (size < 16) throw new WavError(`truncated WAV fmt chunk: ${size} bytes, need at least 16`);
  let code = view.getUint16(at, true);
  const channels = view.getUint16(at + 2, true);
  const sampleRate = view.getUint32(at + 4, true);
  // Byte rate and block align (at + 8, at + 12) are derived values that some writers get wrong; the frame
  // size is recomputed from channels and bits instead.
  const bits = view.getUint16(at + 14, true);
  let label = formatLabel(code);

  if (code === FORMAT_EXTENSIBLE) {
    if (size < 40) {
      throw new WavError(`truncated WAV fmt chunk: WAVE_FORMAT_EXTENSIBLE needs 40 bytes, got ${size}`);
    }
    const guid = at + 24;
    const known = SUBFORMAT_GUID_TAIL.every((b, i) => view.getUint8(guid + 4 + i) === b);
    const sub = view.getUint32(guid, true);
    if (!known || sub > 0xffff) {
      throw new WavEncodingError(
        `unsupported WAV encoding: extensible subformat {${formatGuid(view, guid)}}; ${SUPPORTED}`,
      );
    }
    code = sub;
    label = `${formatLabel(sub)} in WAVE_FORMAT_EXTENSIBLE`;
  }

  if (code !== FORMAT_PCM && code !== FORMAT_FLOAT) {
    throw new WavEncodingError(`unsupported WAV encoding: ${label}; ${SUPPORTED}`);
  }
  if (channels === 0) throw new WavError('WAV fmt chunk declares 0 channels');
  if (sampleRate < MIN_SAMPLE_RATE || sampleRate > MAX_SAMPLE_RATE) {
    throw new WavError(
      `unsupported WAV: sample rate ${sampleRate} Hz; expected ${MIN_SAMPLE_RATE}..${MAX_SAMPLE_RATE} Hz`,
    );
  }
  const float = code === FORMAT_FLOAT;
  if (!(float ? FLOAT_BITS : PCM_BITS).includes(bits)) {
    const kind = float ? 'IEEE float' : 'PCM';
    throw new WavError(`unsupported WAV: ${bits} bits per sample (${kind}); ${SUPPORTED}`);
  }
  return { float, channels, sampleRate, bits };
}

function formatLabel(code: number): string {
  const hex = `0x${code.toString(16).toUpperCase().padStart(4, '0')}`;
  const name = FORMAT_NAMES.get(code);
  return name ? `format ${hex} (${name})` : `format ${hex}`;
}

function formatGuid(view: DataView, at: number): string {
  const hex = (offset: number, count: number) => {
    let s = '';
    for (let i = 0; i < count; i++)
      s += view
        .getUint8(at + offset + i)
        .toString(16)
        .padStart(2, '0');
    return s;
  };
  const d1 = view.getUint32(at, true).toString(16).padStart(8, '0');
  const d2 = view
    .getUint16(at + 4, true)
    .toString(16)
    .padStart(4, '0');
  const d3 = view
    .getUint16(at + 6, true)
    .toString(16)
    .padStart(4, '0');
  return `${d1}-${d2}-${d3}-${hex(8, 2)}-${hex(10, 6)}`;
}

function fourcc(bytes: Uint8Array, at: number): string {
  return String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);
}

function latin1(bytes: Uint8Array, at: number, count: number): string {
  let s = '';
  for (let i = at; i < Math.min(at + count, bytes.byteLength); i++) s += String.fromCharCode(bytes[i]!);
  return s;
}
