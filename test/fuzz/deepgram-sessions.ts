/**
 * The fuzzer's session faults on Deepgram's two sockets (docs/deepgram.md), real clients over the
 * `ws` package mixed into sessions.ts's cases. `/v1/listen`: speech at real pace on the live
 * engine (pocketsphinx, or a fixture), with silence, trickles, `KeepAlive`, `Finalize`, a huge
 * frame or a junk message between, under random `interim_results`, `vad_events`, `endpointing`
 * and `utterance_end_ms`; then the client sends `CloseStream`, closes, terminates, goes silent, or
 * stays with `KeepAlive` alone. `/v1/speak`: text word by word (half words too) at a language
 * model's pace, `Flush`, `Clear` mid-sentence, a client that stops reading, a huge `Speak`, junk;
 * then `Close`, a close, a drop, silence, or a client that never reads again.
 *
 * A case fails on what says the server failed: an `internal_error`/`server_error` in a message, or
 * a close with 1011 other than Deepgram's idle timeout (`NET-0001`) or a refusal the contract
 * allows (ALLOWED_1011). What it leaves running is
 * judged at the batch check as sessions.ts's are: silent clients must be closed by the server
 * (deepgram_idle_timeout_ms), and every slot must be free while the others are still connected.
 */
import WebSocket from 'ws';
import type { Rng } from './fuzz.js';
import {
  BYTES_PER_MS,
  keepUntilClosed,
  leaveRunning,
  opened,
  RATE,
  type Run,
  SESSION_MODELS,
  type SessionOutcome,
  wsBase,
} from './session-run.js';

// ---------------------------------------------------------------- plans

type ListenStep =
  | { do: 'speak'; ms: number; chunkMs: number }
  | { do: 'silence'; ms: number; chunkMs: number }
  /** 10 ms of speech every `everyMs`. */
  | { do: 'trickle'; ms: number; everyMs: number }
  | { do: 'keepalive' }
  | { do: 'finalize' }
  /** One binary frame of `seconds` of speech. */
  | { do: 'huge'; seconds: number }
  /** A text frame that is no control message Deepgram knows, or no JSON. */
  | { do: 'junk'; text: string };

export interface ListenPlan {
  protocol: 'listen';
  query: string;
  offsetMs: number;
  steps: ListenStep[];
  lingerMs: number;
  leave: 'close-stream' | 'close' | 'terminate' | 'silent' | 'keepalive';
}

type SpeakStep =
  /** `words` of the text sent one Speak each, `everyMs` apart (some cut in two). */
  | { do: 'words'; words: number; everyMs: number; halves: boolean }
  | { do: 'flush' }
  | { do: 'clear' }
  /** The client stops reading for `ms`, then reads again. */
  | { do: 'pause'; ms: number }
  /** One Speak of `chars` characters. */
  | { do: 'huge'; chars: number }
  | { do: 'junk'; text: string };

export interface SpeakPlan {
  protocol: 'speak';
  query: string;
  steps: SpeakStep[];
  lingerMs: number;
  leave: 'close' | 'ws-close' | 'terminate' | 'silent' | 'paused' | 'finish';
}

const WORDS = 'Please call me tomorrow morning, the weather is nice today. I will bring the report we wrote. '
  .trim()
  .split(' ');

const JUNK = [
  'not json',
  '{"type":"Nope"}',
  '{"type":42}',
  '{"type":"Speak","text":7}',
  '{"type":"Speak"}',
  '[]',
  '{"type":"Finalize","extra":{"deep":[1,2,3]}}',
  '{"type":"KeepAlive"',
];

function listenQuery(rng: Rng): string {
  const q = new URLSearchParams();
  const model = rng.pick([SESSION_MODELS.live, SESSION_MODELS.live, 'nova-3', 'fz-asr-live', 'fz-asr']);
  q.set('model', model);
  q.set('encoding', 'linear16');
  q.set('sample_rate', String(RATE));
  if (rng.chance(0.5)) q.set('channels', '1');
  if (rng.chance(0.6)) q.set('interim_results', String(rng.chance(0.8)));
  if (rng.chance(0.5)) q.set('vad_events', String(rng.chance(0.8)));
  if (rng.chance(0.5)) q.set('endpointing', rng.pick(['false', '10', '300', '500']));
  if (rng.chance(0.3)) q.set('utterance_end_ms', rng.pick(['1000', '1500']));
  if (rng.chance(0.3)) q.set('smart_format', 'true');
  if (rng.chance(0.2)) q.set('punctuate', 'true');
  return q.toString();
}

function listenPlan(rng: Rng): ListenPlan {
  const steps: ListenStep[] = [];
  const chunkMs = () => rng.pick([20, 50, 100, 100, 200]);
  let budgetMs = rng.range(400, 1800);
  if (rng.chance(0.75)) {
    const ms = rng.range(400, 1300);
    steps.push({ do: 'speak', ms, chunkMs: chunkMs() });
    budgetMs -= ms;
  }
  while (budgetMs > 0 && steps.length < 5) {
    const roll = rng.int(100);
    if (roll < 45) {
      const ms = Math.min(budgetMs, rng.range(300, 1200));
      steps.push({ do: 'speak', ms, chunkMs: chunkMs() });
      budgetMs -= ms;
    } else if (roll < 58) {
      const ms = rng.range(200, 800);
      steps.push({ do: 'silence', ms, chunkMs: chunkMs() });
      budgetMs -= ms;
    } else if (roll < 64) {
      const ms = rng.range(400, 1000);
      steps.push({ do: 'trickle', ms, everyMs: rng.pick([150, 300]) });
      budgetMs -= ms;
    } else if (roll < 72) steps.push({ do: 'keepalive' });
    else if (roll < 84) steps.push({ do: 'finalize' });
    else if (roll < 90) steps.push({ do: 'huge', seconds: rng.pick([4, 10]) });
    else steps.push({ do: 'junk', text: rng.pick(JUNK) });
  }
  return {
    protocol: 'listen',
    query: listenQuery(rng),
    offsetMs: rng.int(3000),
    steps,
    lingerMs: rng.pick([0, 0, 100, 300, 600]),
    leave: rng.pick(['close-stream', 'close-stream', 'close', 'terminate', 'silent', 'keepalive']),
  };
}

function speakQuery(rng: Rng): string {
  const q = new URLSearchParams();
  q.set(
    'model',
    rng.pick([SESSION_MODELS.tts, SESSION_MODELS.tts, 'aura-2-thalia-en', 'fz-tts', 'fz-tts-live']),
  );
  const encoding = rng.pick(['linear16', 'linear16', 'mulaw', 'alaw', undefined]);
  if (encoding) q.set('encoding', encoding);
  if (rng.chance(0.7)) q.set('sample_rate', rng.pick(['8000', '16000', '24000', '48000']));
  return q.toString();
}

function speakPlan(rng: Rng): SpeakPlan {
  const steps: SpeakStep[] = [];
  for (let n = rng.range(1, 6); n > 0; n--) {
    const roll = rng.int(100);
    if (roll < 45)
      steps.push({
        do: 'words',
        words: rng.range(2, 16),
        everyMs: rng.pick([0, 20, 50, 80]),
        halves: rng.chance(0.3),
      });
    else if (roll < 65) steps.push({ do: 'flush' });
    else if (roll < 78) steps.push({ do: 'clear' });
    else if (roll < 86) steps.push({ do: 'pause', ms: rng.range(100, 800) });
    // Past max_input_chars (2000 on the target) too: a refusal, not a fault.
    else if (roll < 92) steps.push({ do: 'huge', chars: rng.pick([500, 1500, 2500]) });
    else steps.push({ do: 'junk', text: rng.pick(JUNK) });
  }
  return {
    protocol: 'speak',
    query: speakQuery(rng),
    steps,
    lingerMs: rng.pick([0, 0, 100, 300, 600]),
    leave: rng.pick(['close', 'close', 'ws-close', 'terminate', 'silent', 'paused', 'finish']),
  };
}

export function deepgramPlan(rng: Rng, protocol: 'listen' | 'speak'): ListenPlan | SpeakPlan {
  return protocol === 'listen' ? listenPlan(rng) : speakPlan(rng);
}

// ---------------------------------------------------------------- running

/** The problem a text message of either socket shows, if any. */
function messageProblem(text: string): string | undefined {
  if (text.includes('"internal_error"') || text.includes('"server_error"'))
    return `a server error message: ${text.slice(0, 300)}`;
  return undefined;
}

/**
 * What a 1011 may stand for without a fault: Deepgram's idle timeout (`NET-0001`), or an error the
 * contract allows, which Deepgram's shapes carry as text only (listen's `NET-0000 <message>` close
 * payload, speak's `SESSION_ENDING` Warning before its close): a busy, full or closing server, or
 * a runner lost under another request (retried). Anything else (an engine failure, an internal
 * error) is a finding.
 */
export const ALLOWED_1011 =
  /NET-0001|is busy|every loaded model is busy|shutting down|can be retried|max_inflight_body_bytes|max_queued_requests/;

/** A socket of either kind, watched for what says the server failed. */
function watched(run: Run, path: string, query: string) {
  const ws = new WebSocket(`${wsBase(run.target.url)}${path}?${query}`);
  ws.on('error', () => {});
  const state = { closed: false, flushed: 0, cleared: 0, audio: 0, ending: '' };
  ws.on('message', (data, isBinary) => {
    if (isBinary) {
      state.audio++;
      return;
    }
    const text = data.toString();
    const problem = messageProblem(text);
    if (problem) run.problems.push(`${path}: ${problem}`);
    if (text.includes('"type":"Flushed"')) state.flushed++;
    if (text.includes('"type":"Cleared"')) state.cleared++;
    if (text.includes('"code":"SESSION_ENDING"')) state.ending = text;
  });
  ws.on('close', (code, reason) => {
    state.closed = true;
    const why = `${reason.toString()} ${state.ending}`;
    if (code === 1011 && !ALLOWED_1011.test(why))
      run.problems.push(`${path}: the server closed with 1011 (${why.slice(0, 300)})`);
  });
  return { ws, state };
}

export function deepgramClient(plan: ListenPlan | SpeakPlan, run: Run): Promise<SessionOutcome['status']> {
  return plan.protocol === 'listen' ? listen(plan, run) : speak(plan, run);
}

async function listen(plan: ListenPlan, run: Run): Promise<SessionOutcome['status']> {
  const { ws, state } = watched(run, '/v1/listen', plan.query);
  const forget = run.onStop(() => ws.terminate());
  const status = await opened(ws);
  if (status !== 'open') {
    forget();
    return status;
  }
  const send = (data: Buffer | string) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(data, { binary: typeof data !== 'string' });
  };
  let at = plan.offsetMs;
  const paced = (ms: number, chunkMs: number, silent: boolean) =>
    run.paced(
      ms,
      chunkMs,
      (piece) => {
        send(silent ? Buffer.alloc(piece * BYTES_PER_MS) : run.speech(at, piece));
        at += piece;
      },
      () => state.closed,
    );
  for (const step of plan.steps) {
    if (state.closed || run.stopped) break;
    switch (step.do) {
      case 'speak':
        await paced(step.ms, step.chunkMs, false);
        break;
      case 'silence':
        await paced(step.ms, step.chunkMs, true);
        break;
      case 'trickle': {
        const start = performance.now();
        while (performance.now() - start < step.ms && !state.closed && !run.stopped) {
          send(run.speech(at, 10));
          at += 10;
          await run.wait(step.everyMs);
        }
        break;
      }
      case 'keepalive':
        send('{"type":"KeepAlive"}');
        break;
      case 'finalize':
        send('{"type":"Finalize"}');
        break;
      case 'huge':
        send(run.speech(at, step.seconds * 1000));
        at += step.seconds * 1000;
        break;
      case 'junk':
        send(step.text);
        break;
    }
  }
  await run.wait(plan.lingerMs);
  forget();
  if (state.closed || run.stopped) return state.closed ? 'closed' : 'client-closed';
  const isClosed = () => state.closed;
  switch (plan.leave) {
    case 'close-stream':
      // Deepgram's way out: the server finishes what it heard, sends Metadata and closes.
      send('{"type":"CloseStream"}');
      keepUntilClosed(run, ws, 'a /v1/listen socket after CloseStream', isClosed);
      break;
    case 'close':
      ws.close(1000);
      keepUntilClosed(run, ws, 'a /v1/listen socket whose client closed mid-utterance', isClosed);
      break;
    case 'terminate':
      ws.terminate();
      break;
    case 'silent':
      keepUntilClosed(run, ws, 'a /v1/listen socket whose client went silent mid-utterance', isClosed);
      break;
    case 'keepalive': {
      // KeepAlive keeps the socket, not the utterance: its slot must still come back.
      const timer = setInterval(() => send('{"type":"KeepAlive"}'), 400).unref();
      const { closed } = leaveRunning(run, 'a /v1/listen socket kept alive with no audio', false, () => {
        clearInterval(timer);
        ws.terminate();
      });
      ws.once('close', () => {
        clearInterval(timer);
        closed();
      });
      break;
    }
  }
  return 'client-closed';
}

/** The words of a `words` step from `from` on, as the Speak texts a language model's tokens make. */
function pieces(from: number, n: number, halves: boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const word = `${WORDS[(from + i) % WORDS.length]!} `;
    if (halves && word.length > 4) {
      const cut = Math.floor(word.length / 2);
      out.push(word.slice(0, cut), word.slice(cut));
    } else out.push(word);
  }
  return out;
}

async function speak(plan: SpeakPlan, run: Run): Promise<SessionOutcome['status']> {
  const { ws, state } = watched(run, '/v1/speak', plan.query);
  const forget = run.onStop(() => ws.terminate());
  const status = await opened(ws);
  if (status !== 'open') {
    forget();
    return status;
  }
  const send = (message: string) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(message);
  };
  const speakText = (text: string) => send(JSON.stringify({ type: 'Speak', text }));
  let word = 0;
  for (const step of plan.steps) {
    if (state.closed || run.stopped) break;
    switch (step.do) {
      case 'words':
        for (const piece of pieces(word, step.words, step.halves)) {
          if (state.closed || run.stopped) break;
          speakText(piece);
          if (step.everyMs > 0) await run.wait(step.everyMs);
        }
        word += step.words;
        break;
      case 'flush':
        send('{"type":"Flush"}');
        break;
      case 'clear':
        send('{"type":"Clear"}');
        break;
      case 'pause':
        ws.pause();
        await run.wait(step.ms);
        ws.resume();
        break;
      case 'huge':
        speakText('The weather is nice today. '.repeat(Math.ceil(step.chars / 27)).slice(0, step.chars));
        break;
      case 'junk':
        send(step.text);
        break;
    }
  }
  await run.wait(plan.lingerMs);
  forget();
  if (state.closed || run.stopped) return state.closed ? 'closed' : 'client-closed';
  await speakLeave(plan, run, ws, state);
  return 'client-closed';
}

async function speakLeave(
  plan: SpeakPlan,
  run: Run,
  ws: WebSocket,
  state: { closed: boolean; flushed: number },
): Promise<void> {
  const isClosed = () => state.closed;
  const send = (message: string) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(message);
  };
  switch (plan.leave) {
    case 'close':
      send('{"type":"Close"}');
      keepUntilClosed(run, ws, 'a /v1/speak socket after Close', isClosed);
      break;
    case 'ws-close':
      ws.close(1000);
      keepUntilClosed(run, ws, 'a /v1/speak socket whose client closed mid-synthesis', isClosed);
      break;
    case 'terminate':
      ws.terminate();
      break;
    case 'silent':
      keepUntilClosed(run, ws, 'a /v1/speak socket whose client went silent', isClosed);
      break;
    case 'paused': {
      // Text flushed and never read: the send timeout must free the slot.
      send(JSON.stringify({ type: 'Speak', text: 'The weather is nice today. '.repeat(20) }));
      send('{"type":"Flush"}');
      ws.pause();
      const { closed } = leaveRunning(run, 'a /v1/speak socket whose client stopped reading', false, () =>
        ws.terminate(),
      );
      ws.once('close', closed);
      break;
    }
    case 'finish': {
      // The path that works: Flush, its Flushed, then Close.
      const before = state.flushed;
      send('{"type":"Flush"}');
      const start = performance.now();
      while (performance.now() - start < 3000 && state.flushed === before && !state.closed && !run.stopped)
        await run.wait(50);
      send('{"type":"Close"}');
      keepUntilClosed(run, ws, 'a /v1/speak socket closed after its Flushed', isClosed);
      break;
    }
  }
}
