// The listening form's microphone: records with MediaRecorder until stopped, then hands the
// recording over as a File, as if it had been uploaded.

const TICK_MS = 100;

export class Recorder {
  #recorder;
  #stream;
  #chunks = [];
  #timer;
  #started = 0;

  /**
   * @param {(seconds: number) => void} onTick called while recording, with the seconds so far
   * @param {(file: File) => void} onDone called with the recording once stopped
   */
  constructor(onTick, onDone) {
    this.onTick = onTick;
    this.onDone = onDone;
  }

  get recording() {
    return this.#recorder?.state === 'recording';
  }

  /** Bytes delivered so far: the recorder hands data over every second, not only at the end. */
  get bytes() {
    return this.#chunks.reduce((n, chunk) => n + chunk.size, 0);
  }

  async start() {
    if (!navigator.mediaDevices?.getUserMedia) {
      throw new Error('this browser gives the page no microphone (it needs https or localhost)');
    }
    this.#stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    this.#chunks = [];
    try {
      this.#recorder = new MediaRecorder(this.#stream);
    } catch (err) {
      // Else the browser keeps the microphone open (and its indicator on) with nobody recording.
      this.#release();
      throw err;
    }
    this.#recorder.addEventListener('dataavailable', (e) => {
      if (e.data.size > 0) this.#chunks.push(e.data);
    });
    this.#recorder.addEventListener('stop', () => this.#finish());
    this.#recorder.start(1000);
    this.#started = performance.now();
    this.#timer = setInterval(() => this.onTick((performance.now() - this.#started) / 1000), TICK_MS);
  }

  stop() {
    if (this.recording) this.#recorder.stop();
  }

  #release() {
    for (const track of this.#stream.getTracks()) track.stop();
  }

  #finish() {
    clearInterval(this.#timer);
    this.#release();
    const type = this.#recorder.mimeType || 'audio/webm';
    const extension = type.includes('ogg') ? 'ogg' : type.includes('mp4') ? 'm4a' : 'webm';
    this.onDone(new File(this.#chunks, `recording.${extension}`, { type }));
  }
}
