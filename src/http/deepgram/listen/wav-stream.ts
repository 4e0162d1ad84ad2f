/**
 * A `/v1/listen` socket opened without `encoding`: Deepgram then reads the audio's container from
 * its first bytes. voxd takes one container there, a WAV stream (what `arecord`, `sox` and
 * `ffmpeg -f wav -` write to a pipe): its header is read as it arrives, then its data is raw PCM16.
 * Any other container, or a WAV of another encoding or with more than one channel, is bad audio
 * (Deepgram's DATA-0000); compressed audio goes to `POST /v1/listen`, which decodes any format.
 */
import { isPcm16, parseWavLayout, WavError } from '../../../audio/wav-decode.js';
import { VoxdError } from '../../../errors.js';

/** How much of a stream's head may pass before its WAV header must be whole. */
const HEAD_BYTES = 64 << 10;

export interface WavStart {
  sampleRate: number;
  /** The first data bytes, after the header. */
  data: Buffer;
}

export class WavStream {
  #head = Buffer.alloc(0);

  /**
   * Takes the stream's next bytes: the format and the first data bytes once the header is whole,
   * undefined while it is not; throws E_INVALID_AUDIO-style VoxdError (bad audio) for anything else.
   */
  push(bytes: Buffer): WavStart | undefined {
    this.#head = Buffer.concat([this.#head, bytes]);
    const head = this.#head;
    if (head.length < 12) return undefined;
    let layout: ReturnType<typeof parseWavLayout>;
    try {
      layout = parseWavLayout(head, head.length);
    } catch (err) {
      const waiting =
        err instanceof WavError &&
        head.length < HEAD_BYTES &&
        head.toString('latin1', 0, 4) === 'RIFF' &&
        head.toString('latin1', 8, 12) === 'WAVE' &&
        /no (fmt|data) chunk|truncated WAV fmt/.test(err.message);
      if (waiting) return undefined;
      throw badAudio(err instanceof Error ? err.message : String(err));
    }
    const { format, dataStart } = layout;
    if (!isPcm16(format) || format.channels !== 1)
      throw badAudio(
        `a WAV stream of ${format.channels} channel(s), ${format.bits}-bit ${format.float ? 'float' : 'PCM'}; voxd's socket takes mono 16-bit PCM WAV, or raw audio named by encoding`,
      );
    this.#head = Buffer.alloc(0);
    return { sampleRate: format.sampleRate, data: head.subarray(dataStart) };
  }
}

function badAudio(message: string): VoxdError {
  return new VoxdError('E_INVALID_REQUEST', `audio: ${message}`, { param: 'encoding' });
}
