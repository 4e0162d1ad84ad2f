// The Live tab's microphone tap (an AudioWorklet): hands the page the microphone's samples in
// pieces of about 100 ms, at the audio context's rate, mono (the first channel).

class Capture extends AudioWorkletProcessor {
  #piece = new Float32Array(Math.round(sampleRate / 10));
  #filled = 0;

  process(inputs) {
    const channel = inputs[0]?.[0];
    if (!channel) return true;
    let at = 0;
    while (at < channel.length) {
      const n = Math.min(channel.length - at, this.#piece.length - this.#filled);
      this.#piece.set(channel.subarray(at, at + n), this.#filled);
      this.#filled += n;
      at += n;
      if (this.#filled === this.#piece.length) {
        this.port.postMessage(this.#piece);
        this.#piece = new Float32Array(this.#piece.length);
        this.#filled = 0;
      }
    }
    return true;
  }
}

registerProcessor('voxd-capture', Capture);
