// Plays PCM16 chunks as they arrive, back to back on one AudioContext, and keeps them for a WAV.

/** How far ahead of "now" the first chunk starts, so its first samples are not cut. */
const LEAD_S = 0.05;

export class PcmPlayer {
  /** `onChange` hears of every scheduled and every finished chunk. */
  constructor(sampleRate, channels, onChange) {
    this.sampleRate = sampleRate;
    this.channels = channels;
    this.onChange = onChange;
    this.context = new AudioContext({ sampleRate });
    this.nextStart = 0;
    this.scheduled = 0;
    this.played = 0;
    this.chunks = [];
    this.carry = null;
    this.sources = new Set();
  }

  /** Schedules one chunk right after the previous one (or now, after an underrun). */
  push(bytes) {
    const samples = this.#samples(bytes);
    if (samples.length < this.channels) return;
    this.chunks.push(samples);
    const source = this.context.createBufferSource();
    source.buffer = this.#buffer(samples);
    source.connect(this.context.destination);
    const start = Math.max(this.nextStart, this.context.currentTime + LEAD_S);
    source.start(start);
    this.nextStart = start + source.buffer.duration;
    this.sources.add(source);
    source.addEventListener('ended', () => {
      this.sources.delete(source);
      this.played++;
      this.onChange();
    });
    this.scheduled++;
    this.onChange();
  }

  /** Whole frames of PCM16 little-endian; an odd byte waits for the next chunk. */
  #samples(bytes) {
    let all = bytes;
    if (this.carry) {
      all = new Uint8Array(this.carry.length + bytes.length);
      all.set(this.carry);
      all.set(bytes, this.carry.length);
    }
    const frameBytes = 2 * this.channels;
    const whole = all.length - (all.length % frameBytes);
    this.carry = whole < all.length ? all.slice(whole) : null;
    return new Int16Array(all.slice(0, whole).buffer);
  }

  #buffer(samples) {
    const frames = samples.length / this.channels;
    const buffer = this.context.createBuffer(this.channels, frames, this.sampleRate);
    for (let c = 0; c < this.channels; c++) {
      const out = buffer.getChannelData(c);
      for (let i = 0; i < frames; i++) out[i] = samples[i * this.channels + c] / 32768;
    }
    return buffer;
  }

  /** Stops what is playing or scheduled (a new request, or Stop). */
  stop() {
    for (const source of this.sources) source.stop();
    this.sources.clear();
    this.context.close().catch(() => undefined);
  }

  /** Every chunk so far as one WAV file. */
  wav() {
    return wavBlob(this.chunks, this.sampleRate, this.channels);
  }
}

/** A PCM16 WAV: the 44-byte RIFF header, then the samples as they came. */
export function wavBlob(chunks, sampleRate, channels) {
  const dataBytes = chunks.reduce((sum, c) => sum + c.byteLength, 0);
  const header = new DataView(new ArrayBuffer(44));
  const text = (at, s) => {
    for (let i = 0; i < s.length; i++) header.setUint8(at + i, s.charCodeAt(i));
  };
  text(0, 'RIFF');
  header.setUint32(4, 36 + dataBytes, true);
  text(8, 'WAVE');
  text(12, 'fmt ');
  header.setUint32(16, 16, true);
  header.setUint16(20, 1, true);
  header.setUint16(22, channels, true);
  header.setUint32(24, sampleRate, true);
  header.setUint32(28, sampleRate * channels * 2, true);
  header.setUint16(32, channels * 2, true);
  header.setUint16(34, 16, true);
  text(36, 'data');
  header.setUint32(40, dataBytes, true);
  return new Blob([header, ...chunks], { type: 'audio/wav' });
}
