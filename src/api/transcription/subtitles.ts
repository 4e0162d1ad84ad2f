/** SubRip and WebVTT text from timed segments, as OpenAI's `srt` and `vtt` response formats. */

export interface Cue {
  /** Seconds from the start of the audio. */
  start: number;
  end: number;
  text: string;
}

/**
 * `HH:MM:SS,mmm` (SubRip) or `HH:MM:SS.mmm` (WebVTT). Whole milliseconds are counted first, so
 * 59.9996 s carries into the next minute instead of printing 1000 ms; hours grow past two digits.
 */
export function subtitleTime(seconds: number, separator: ',' | '.'): string {
  const total = Math.max(0, Math.round(seconds * 1000));
  const ms = total % 1000;
  const s = Math.floor(total / 1000) % 60;
  const m = Math.floor(total / 60_000) % 60;
  const h = Math.floor(total / 3_600_000);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(h)}:${two(m)}:${two(s)}${separator}${String(ms).padStart(3, '0')}`;
}

/** A blank line ends a cue in both formats, so one inside the text is closed up. */
const cueText = (text: string) => text.trim().replace(/\n\s*\n/g, '\n');

/** Cues with no words say nothing on screen, so they are left out (numbering stays gapless). */
const spoken = (cues: readonly Cue[]) => cues.filter((cue) => cue.text.trim() !== '');

export function toSrt(cues: readonly Cue[]): string {
  return spoken(cues)
    .map(
      (cue, i) =>
        `${i + 1}\n${subtitleTime(cue.start, ',')} --> ${subtitleTime(cue.end, ',')}\n${cueText(cue.text)}\n\n`,
    )
    .join('');
}

export function toVtt(cues: readonly Cue[]): string {
  const body = spoken(cues)
    .map(
      (cue) => `${subtitleTime(cue.start, '.')} --> ${subtitleTime(cue.end, '.')}\n${cueText(cue.text)}\n\n`,
    )
    .join('');
  return `WEBVTT\n\n${body}`;
}
