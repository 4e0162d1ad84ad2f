// The transcript as one span per word, and the word being heard highlighted while the audio plays.

/**
 * Word times for an engine that times only segments (Whisper, Canary): each segment's span shared
 * among its words by their length, since a longer word mostly takes longer to say. Only a guess,
 * which the page says so.
 */
export function estimateWords(segments) {
  return segments.flatMap((segment) => {
    const words = segment.text.split(/\s+/).filter(Boolean);
    const weights = words.map((w) => w.length + 1);
    const total = weights.reduce((a, b) => a + b, 0);
    let at = segment.start;
    return words.map((word, i) => {
      const start = at;
      at += ((segment.end - segment.start) * weights[i]) / total;
      return { word, start, end: at };
    });
  });
}

/** Fills `box` with a span per word; clicking one (or Enter or Space on it) plays from there. */
export function showWords(box, words, audio) {
  box.replaceChildren();
  for (const [i, w] of words.entries()) {
    if (i > 0) box.append(' ');
    const span = document.createElement('span');
    span.className = 'word';
    span.textContent = w.word.trim();
    span.dataset.start = String(w.start);
    span.dataset.end = String(w.end);
    span.title = `${w.start.toFixed(2)}–${w.end.toFixed(2)} s`;
    // A button for the keyboard too, without a button's look in running text.
    span.tabIndex = 0;
    span.setAttribute('role', 'button');
    const playFromHere = () => {
      audio.currentTime = w.start;
      audio.play().catch(() => undefined);
    };
    span.addEventListener('click', playFromHere);
    span.addEventListener('keydown', (event) => {
      if (event.key !== 'Enter' && event.key !== ' ') return;
      event.preventDefault();
      playFromHere();
    });
    box.append(span);
  }
}

/** Marks the word whose [start, end) holds `time`, and unmarks the one before. */
export function highlightWord(box, time) {
  let current = null;
  for (const span of box.querySelectorAll('span.word')) {
    if (Number(span.dataset.start) <= time && time < Number(span.dataset.end)) current = span;
  }
  const previous = box.querySelector('span.word.current');
  if (previous === current) return;
  previous?.classList.remove('current');
  current?.classList.add('current');
}

/**
 * Calls `update(currentTime)` as the audio plays: every animation frame while playing (timeupdate
 * alone fires only about four times a second, too coarse for short words), and on seeks and pauses.
 */
export function followPlayback(audio, update) {
  let frame = 0;
  const tick = () => {
    update(audio.currentTime);
    frame = audio.paused ? 0 : requestAnimationFrame(tick);
  };
  const kick = () => {
    if (!frame) tick();
    else update(audio.currentTime);
  };
  for (const event of ['play', 'timeupdate', 'seeked', 'pause', 'ended']) audio.addEventListener(event, kick);
}
