// The listening form's picture of the audio: a waveform on a canvas, with bands and a playhead laid
// over it as positioned elements (elements, not canvas pixels, so they can be labelled and tested).

const WAVE_COLOUR = '#2a5d9f';
const AXIS_COLOUR = '#bbb';

/**
 * Decodes audio bytes in the page (which takes `bytes` over: pass a copy you keep no use for); null
 * when the browser cannot decode them, which the server, with ffmpeg, may still do.
 */
export async function decodeAudio(bytes) {
  const context = new AudioContext();
  try {
    return await context.decodeAudioData(bytes);
  } catch {
    return null;
  } finally {
    context.close();
  }
}

/** The channels' mean, so a stereo file draws as one wave. */
function mono(buffer) {
  const out = new Float32Array(buffer.length);
  for (let c = 0; c < buffer.numberOfChannels; c++) {
    const data = buffer.getChannelData(c);
    for (let i = 0; i < data.length; i++) out[i] += data[i] / buffer.numberOfChannels;
  }
  return out;
}

/** Min and max of each pixel column's samples: a column per pixel keeps short clicks visible. */
function columnPeaks(samples, columns) {
  const peaks = [];
  const step = samples.length / columns;
  for (let x = 0; x < columns; x++) {
    let lo = 0;
    let hi = 0;
    const end = Math.min(samples.length, Math.floor((x + 1) * step));
    for (let i = Math.floor(x * step); i < end; i++) {
      if (samples[i] < lo) lo = samples[i];
      if (samples[i] > hi) hi = samples[i];
    }
    peaks.push([lo, hi]);
  }
  return peaks;
}

/** Draws `buffer` (an AudioBuffer, or null for an empty axis) at the canvas's displayed size. */
export function drawWaveform(canvas, buffer) {
  const scale = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.round(canvas.clientWidth * scale));
  canvas.height = Math.max(1, Math.round(canvas.clientHeight * scale));
  const g = canvas.getContext('2d');
  const mid = canvas.height / 2;
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.fillStyle = AXIS_COLOUR;
  g.fillRect(0, Math.floor(mid), canvas.width, 1);
  if (!buffer) return;
  g.fillStyle = WAVE_COLOUR;
  for (const [x, [lo, hi]] of columnPeaks(mono(buffer), canvas.width).entries()) {
    const top = mid - hi * mid;
    g.fillRect(x, top, 1, Math.max(1, (hi - lo) * mid));
  }
}

/** Places `el` over the span [start, end) seconds of `duration`, in percent so it follows resizes. */
export function placeSpan(el, start, end, duration) {
  const left = Math.max(0, Math.min(1, start / duration));
  const right = Math.max(left, Math.min(1, end / duration));
  el.style.left = `${left * 100}%`;
  el.style.width = `${(right - left) * 100}%`;
}

/** Moves the playhead element to `time` seconds of `duration`. */
export function placePlayhead(el, time, duration) {
  el.style.left = `${Math.max(0, Math.min(1, time / duration)) * 100}%`;
}
