/**
 * The fuzzer's session-fault category: real clients on the streaming protocols (realtime and
 * the bridge over the `ws` package, Wyoming over node:net) that mix, over time, the faults of the
 * December 2026 probe (shared/reference/probe-2026-12.md): speech appended at real pace to a live
 * engine (pocketsphinx) under server VAD and then the client closing, terminating, clearing
 * mid-speech, switching the VAD off, or just going silent; commit floods and huge appends; a
 * Wyoming transcription at speaking pace followed by a second `audio-start`, pings only, silence or
 * a leave; a header trickled a byte at a time; a synthesis whose client stops reading; a bridge
 * socket with a slow request running and frames waiting behind it when its client leaves or stops
 * reading; idle sockets. Deepgram's two sockets (`/v1/listen`, `/v1/speak`) are drawn here too; their
 * plans and clients are deepgram-sessions.ts.
 *
 * A case's plan is drawn from its PRNG when it is generated (so `--case K` replays it); its run
 * follows the plan on the wall clock, since pace is what makes a turn live. A case fails on an event
 * that says the server failed (`server_error`, `internal_error`, a 5xx other than 503, close code
 * 1011) or on a hang. What the server must do after the client's part is over is judged at the
 * batch check: some clients do not leave when their case ends but go on in the background (silent,
 * pinging, trickling, not reading), as a peer that vanished or misbehaves would; the server must
 * close the silent and trickling ones on its own timeouts (`leftoverProblems`), and every model's
 * slot must be back to 0 while the pinging and non-reading ones are still connected (the batch
 * check's `active_slots`). Only then does the fuzzer end them (`endLeftovers`).
 */
import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';
import { frameOf } from '../helpers/wyoming.js';
import { deepgramClient, deepgramPlan, type ListenPlan, type SpeakPlan } from './deepgram-sessions.js';
import type { Rng } from './fuzz.js';
import {
  BYTES_PER_MS,
  keepUntilClosed,
  leaveRunning,
  opened,
  RATE,
  Run,
  SESSION_MODELS,
  type SessionOutcome,
  type SessionTarget,
  wsBase,
} from './session-run.js';

export {
  endLeftovers,
  lateProblems,
  leftoverCount,
  leftoverProblems,
  SESSION_MODELS,
  type SessionOutcome,
  type SessionTarget,
} from './session-run.js';

const FORMAT = { rate: RATE, width: 2, channels: 1 };
const SENTENCE = 'Please call me tomorrow morning, the weather is nice today. ';

// ---------------------------------------------------------------- plans

type RealtimeStep =
  /** Speech appended at real pace, `chunkMs` at a time. */
  | { do: 'speak'; ms: number; chunkMs: number }
  /** Silence at real pace: server VAD ends the speech, and its turn is committed. */
  | { do: 'silence'; ms: number; chunkMs: number }
  /** 10 ms of speech every `everyMs`: a feed slower than any idle timer, which only a turn's own deadline ends. */
  | { do: 'trickle'; ms: number; everyMs: number }
  | { do: 'clear' }
  | { do: 'commit' }
  /** `n` commits sent at once, each after `ms` of speech appended at once (no VAD). */
  | { do: 'flood'; n: number; ms: number }
  /** One append of `seconds` of audio. */
  | { do: 'huge'; seconds: number }
  /** Turn detection switched mid-session (a live turn may be open). */
  | { do: 'vad'; on: boolean };

type RealtimeLeave =
  | 'close'
  | 'terminate'
  /** Keeps the socket and sends nothing more: the server's timeouts must close it. */
  | 'silent'
  /** Silence until the turn completes (or 2.5 s), then a close: the path that works, mixed in. */
  | 'finish';

interface RealtimePlan {
  protocol: 'realtime';
  model: string;
  vad: boolean;
  silenceMs: number;
  offsetMs: number;
  steps: RealtimeStep[];
  /** Nothing sent for this long before the leave: a client leaves at any moment, not only right after an append. */
  lingerMs: number;
  leave: RealtimeLeave;
}

type WyomingPlan =
  | {
      protocol: 'wyoming';
      kind: 'transcribe';
      model: string;
      offsetMs: number;
      speakMs: number;
      chunkMs: number;
      /** A second audio-start without audio-stop, then more speech. */
      again?: { speakMs: number };
      /** audio-stop and the transcript awaited, the path that works. */
      stop: boolean;
      lingerMs: number;
      leave: 'destroy' | 'end' | 'silent' | 'pings';
    }
  | {
      protocol: 'wyoming';
      kind: 'trickle';
      /** The event whose bytes are trickled. */
      event: 'describe' | 'transcribe' | 'synthesize';
      byteMs: number;
      bytes: number;
      /** Leave, write the rest at once, or trickle on in the background (the event deadline must end it). */
      leave: 'destroy' | 'rest' | 'trickle';
    }
  | {
      protocol: 'wyoming';
      kind: 'synthesize';
      repeats: number;
      /** Reads nothing from the start, or from the first audio on. */
      pauseAt: 'start' | 'audio';
      holdMs: number;
      /** Leave, or stay connected and never read (the send timeout must free the slot). */
      leave: 'destroy' | 'paused';
    };

interface BridgePlan {
  protocol: 'bridge';
  /** A slow request (long text; streamed or whole), or no request at all (an idle socket). */
  slow: { repeats: number; stream: boolean } | undefined;
  /** Frames sent behind the slow one, waiting for it. */
  waiting: number;
  /** The client stops reading (the socket is paused). */
  pause: boolean;
  holdMs: number;
  leave: 'close' | 'terminate' | 'silent' | 'paused';
}

type Plan = RealtimePlan | WyomingPlan | BridgePlan | ListenPlan | SpeakPlan;

function realtimePlan(rng: Rng): RealtimePlan {
  const model = rng.chance(0.8) ? SESSION_MODELS.live : rng.pick(['fz-asr-live', 'fz-asr']);
  const vad = rng.chance(0.8);
  const steps: RealtimeStep[] = [];
  const chunkMs = () => rng.pick([20, 50, 100, 100, 100, 200]);
  // Most sessions start speaking, which under server VAD opens a live turn (the Live tab's flow);
  // the faults then come one after the other on the same session, cutting into it.
  let budgetMs = rng.range(400, 1600);
  if (rng.chance(0.7)) {
    const ms = rng.range(400, 1200);
    steps.push({ do: 'speak', ms, chunkMs: chunkMs() });
    budgetMs -= ms;
  }
  while (budgetMs > 0 && steps.length < 4) {
    const roll = rng.int(100);
    if (roll < 50) {
      const ms = Math.min(budgetMs, rng.range(300, 1500));
      steps.push({ do: 'speak', ms, chunkMs: chunkMs() });
      budgetMs -= ms;
    } else if (roll < 58) {
      const ms = rng.range(200, 700);
      steps.push({ do: 'silence', ms, chunkMs: chunkMs() });
      budgetMs -= ms;
    } else if (roll < 64) {
      const ms = rng.range(500, 1200);
      steps.push({ do: 'trickle', ms, everyMs: rng.pick([150, 300]) });
      budgetMs -= ms;
    } else if (roll < 74) steps.push({ do: 'clear' });
    else if (roll < 80) steps.push({ do: 'commit' });
    else if (roll < 88) steps.push({ do: 'flood', n: rng.range(3, 20), ms: rng.pick([20, 100, 250]) });
    // Sizes past what any pace sends, kept to seconds: a turn of minutes is minutes of decoding
    // (legitimately), which would hold the model past the deadline of the cases beside it.
    else if (roll < 94) steps.push({ do: 'huge', seconds: rng.pick([4, 10]) });
    else steps.push({ do: 'vad', on: rng.chance(0.5) });
  }
  return {
    protocol: 'realtime',
    model,
    vad,
    silenceMs: rng.pick([200, 500]),
    offsetMs: rng.int(3000),
    steps,
    lingerMs: rng.pick([0, 0, 100, 300, 600]),
    leave: rng.pick(['close', 'close', 'terminate', 'terminate', 'silent', 'finish']),
  };
}

function wyomingPlan(rng: Rng): WyomingPlan {
  const roll = rng.int(100);
  if (roll < 60)
    return {
      protocol: 'wyoming',
      kind: 'transcribe',
      model: rng.chance(0.85) ? SESSION_MODELS.live : rng.pick(['fz-asr-live', 'fz-asr']),
      offsetMs: rng.int(3000),
      // An utterance goes live once its first second came at speaking pace: most are longer.
      speakMs: rng.chance(0.75) ? rng.range(1100, 1700) : rng.range(200, 1000),
      chunkMs: rng.pick([20, 100, 100, 200]),
      ...(rng.chance(0.35) ? { again: { speakMs: rng.range(0, 600) } } : {}),
      stop: rng.chance(0.2),
      lingerMs: rng.pick([0, 0, 100, 300, 600]),
      leave: rng.pick(['destroy', 'end', 'silent', 'pings']),
    };
  if (roll < 75)
    return {
      protocol: 'wyoming',
      kind: 'trickle',
      event: rng.pick(['describe', 'transcribe', 'synthesize']),
      byteMs: rng.pick([50, 200, 400]),
      bytes: rng.range(2, 8),
      leave: rng.pick(['destroy', 'rest', 'trickle']),
    };
  return {
    protocol: 'wyoming',
    kind: 'synthesize',
    // 4-12 sentences: 15-50 s of speech, a second or two of synthesis. Longer is legitimately
    // longer work on flite's one slot, which an unload-all beside it must wait for past its deadline.
    repeats: rng.range(4, 12),
    pauseAt: rng.pick(['start', 'audio']),
    holdMs: rng.range(100, 1200),
    leave: rng.pick(['destroy', 'paused']),
  };
}

function bridgePlan(rng: Rng): BridgePlan {
  const idle = rng.chance(0.25);
  return {
    protocol: 'bridge',
    // As long as a synthesis case's text (wyomingPlan), for the same reason.
    slow: idle ? undefined : { repeats: rng.range(4, 12), stream: rng.chance(0.5) },
    waiting: idle ? 0 : rng.range(0, 4),
    pause: !idle && rng.chance(0.5),
    holdMs: rng.range(100, 1200),
    leave: rng.pick(idle ? ['close', 'silent'] : ['close', 'terminate', 'paused']),
  };
}

function planOf(rng: Rng, protocol: Plan['protocol']): Plan {
  if (protocol === 'realtime') return realtimePlan(rng);
  if (protocol === 'wyoming') return wyomingPlan(rng);
  if (protocol === 'bridge') return bridgePlan(rng);
  return deepgramPlan(rng, protocol);
}

/**
 * A session case: one client, or (a quarter of them) two on different protocols at once, whose
 * turns then meet in the same models' queues.
 */
export function sessionCase(
  rng: Rng,
  label: string,
): {
  category: string;
  plans: Plan[];
  run: (target: SessionTarget, deadlineMs: number) => Promise<SessionOutcome>;
} {
  const protocols: Plan['protocol'][] = ['realtime', 'wyoming', 'bridge', 'listen', 'speak'];
  const first = rng.pick([
    'realtime',
    'realtime',
    'wyoming',
    'wyoming',
    'bridge',
    'listen',
    'listen',
    'speak',
    'speak',
  ] as const);
  const plans: Plan[] = [planOf(rng, first)];
  if (rng.chance(0.25)) plans.push(planOf(rng, rng.pick(protocols.filter((p) => p !== first))));
  return {
    category: `session ${plans.map((p) => p.protocol).join('+')}`,
    plans,
    run: (target, deadlineMs) => runPlans(plans, target, label, deadlineMs),
  };
}

// ---------------------------------------------------------------- running

async function runPlans(
  plans: Plan[],
  target: SessionTarget,
  label: string,
  deadlineMs: number,
): Promise<SessionOutcome> {
  const run = new Run(target, label);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'hang'>((resolve) => {
    timer = setTimeout(() => resolve('hang'), deadlineMs);
  });
  const clients = Promise.all(plans.map((plan) => client(plan, run)));
  const ended = await Promise.race([clients, late]);
  clearTimeout(timer);
  if (ended === 'hang') {
    run.stop();
    return { status: 'hang', problems: run.problems };
  }
  const refused = ended.find((s) => typeof s === 'number');
  return {
    status: refused ?? (ended.includes('closed') ? 'closed' : 'client-closed'),
    problems: run.problems,
  };
}

function client(plan: Plan, run: Run): Promise<SessionOutcome['status']> {
  if (plan.protocol === 'realtime') return realtime(plan, run);
  if (plan.protocol === 'wyoming') return wyoming(plan, run);
  if (plan.protocol === 'bridge') return bridge(plan, run);
  return deepgramClient(plan, run);
}

// ---------------------------------------------------------------- realtime

/** The problem an event of the server shows, if any. */
function realtimeProblem(text: string): string | undefined {
  if (text.includes('"type":"server_error"') || text.includes('"code":"internal_error"'))
    return `a server error event: ${text.slice(0, 300)}`;
  return undefined;
}

async function realtime(plan: RealtimePlan, run: Run): Promise<SessionOutcome['status']> {
  const ws = new WebSocket(`${wsBase(run.target.url)}/v1/realtime?model=${plan.model}`);
  ws.on('error', () => {});
  let closed = false;
  let turnsEnded = 0;
  const forget = run.onStop(() => ws.terminate());
  ws.on('message', (data) => {
    const text = data.toString();
    const problem = realtimeProblem(text);
    if (problem) run.problems.push(`realtime: ${problem}`);
    if (/"type":"conversation\.item\.input_audio_transcription\.(completed|failed)"/.test(text)) turnsEnded++;
  });
  ws.on('close', (code) => {
    closed = true;
    if (code === 1011) run.problems.push('realtime: the server closed with 1011 (internal error)');
  });
  const state = await opened(ws);
  if (state !== 'open') {
    forget();
    return state;
  }
  const send = (event: Record<string, unknown>) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(event));
  };
  const append = (pcm: Buffer) => send({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') });
  const turnDetection = (on: boolean) =>
    on ? { type: 'server_vad', silence_duration_ms: plan.silenceMs } : null;
  send({
    type: 'session.update',
    session: {
      type: 'transcription',
      audio: {
        input: { format: { type: 'audio/pcm', rate: RATE }, turn_detection: turnDetection(plan.vad) },
      },
    },
  });
  let at = plan.offsetMs;
  const paced = (ms: number, chunkMs: number, silent: boolean) =>
    run.paced(
      ms,
      chunkMs,
      (piece) => {
        append(silent ? Buffer.alloc(piece * BYTES_PER_MS) : run.speech(at, piece));
        at += piece;
      },
      () => closed,
    );
  for (const step of plan.steps) {
    if (closed || run.stopped) break;
    switch (step.do) {
      case 'speak':
        await paced(step.ms, step.chunkMs, false);
        break;
      case 'silence':
        await paced(step.ms, step.chunkMs, true);
        break;
      case 'trickle': {
        const start = performance.now();
        while (performance.now() - start < step.ms && !closed && !run.stopped) {
          append(run.speech(at, 10));
          at += 10;
          await run.wait(step.everyMs);
        }
        break;
      }
      case 'clear':
        send({ type: 'input_audio_buffer.clear' });
        break;
      case 'commit':
        send({ type: 'input_audio_buffer.commit' });
        break;
      case 'flood':
        for (let i = 0; i < step.n; i++) {
          append(run.speech(at, step.ms));
          at += step.ms;
          send({ type: 'input_audio_buffer.commit' });
        }
        break;
      case 'huge':
        append(run.speech(at, step.seconds * 1000));
        at += step.seconds * 1000;
        break;
      case 'vad':
        send({
          type: 'session.update',
          session: { audio: { input: { turn_detection: turnDetection(step.on) } } },
        });
        break;
    }
  }
  await run.wait(plan.lingerMs);
  forget();
  if (closed || run.stopped) return closed ? 'closed' : 'client-closed';
  switch (plan.leave) {
    case 'close':
      ws.close(1000);
      // The server must answer the close: until then the client is left running, and must be closed.
      keepUntilClosed(run, ws, 'a realtime session whose client closed mid-turn', () => closed);
      break;
    case 'terminate':
      ws.terminate();
      break;
    case 'silent':
      keepUntilClosed(run, ws, 'a realtime session whose client went silent mid-turn', () => closed);
      break;
    case 'finish': {
      const before = turnsEnded;
      if (plan.vad) await paced(plan.silenceMs + 400, 100, true);
      else send({ type: 'input_audio_buffer.commit' });
      const start = performance.now();
      while (performance.now() - start < 2000 && turnsEnded === before && !closed && !run.stopped)
        await run.wait(50);
      ws.close(1000);
      keepUntilClosed(run, ws, 'a realtime session closed after its turn', () => closed);
      break;
    }
  }
  return 'client-closed';
}

// ---------------------------------------------------------------- Wyoming

/**
 * Reads Wyoming events off `socket`, passing each header and data to `onEvent`; bytes that are no
 * event go to `onGarbage` once, and nothing after them is read.
 */
function readEvents(
  socket: Socket,
  onEvent: (type: string, data: Record<string, unknown>) => void,
  onGarbage: (what: string) => void,
): void {
  let buffer: Buffer = Buffer.alloc(0);
  let lost = false;
  socket.on('data', (chunk: Buffer) => {
    if (lost) return;
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    try {
      for (;;) {
        const newline = buffer.indexOf(0x0a);
        if (newline < 0) return;
        const header = JSON.parse(buffer.subarray(0, newline).toString('utf8')) as {
          type: string;
          data?: Record<string, unknown>;
          data_length?: number;
          payload_length?: number;
        };
        const dataLength = header.data_length ?? 0;
        const end = newline + 1 + dataLength + (header.payload_length ?? 0);
        if (buffer.length < end) return;
        const data = { ...(header.data ?? {}) };
        if (dataLength > 0)
          Object.assign(
            data,
            JSON.parse(buffer.subarray(newline + 1, newline + 1 + dataLength).toString('utf8')),
          );
        buffer = buffer.subarray(end);
        onEvent(header.type, data);
      }
    } catch (err) {
      lost = true;
      onGarbage(`${(err as Error).message}: ${JSON.stringify(buffer.subarray(0, 200).toString('latin1'))}`);
    }
  });
}

async function wyoming(plan: WyomingPlan, run: Run): Promise<SessionOutcome['status']> {
  const socket = connect(run.target.wyomingPort, '127.0.0.1');
  socket.setNoDelay(true);
  socket.on('error', () => {});
  let closed = false;
  const seen: string[] = [];
  const forget = run.onStop(() => socket.destroy());
  socket.on('close', () => {
    closed = true;
  });
  readEvents(
    socket,
    (type, data) => {
      seen.push(type);
      if (type === 'error' && (data['code'] === 'internal_error' || data['code'] === 'engine_error'))
        run.problems.push(`wyoming: an error event ${JSON.stringify(data).slice(0, 300)}`);
    },
    (what) => run.problems.push(`wyoming: the server sent bytes that are no event: ${what}`),
  );
  const ready = await new Promise<boolean>((resolve) => {
    socket.once('connect', () => resolve(true));
    socket.once('close', () => resolve(false));
  });
  if (!ready) {
    forget();
    return 'closed';
  }
  const write = (bytes: Buffer) => {
    if (!socket.destroyed) socket.write(bytes);
  };
  const waitFor = async (type: string, ms: number) => {
    const start = performance.now();
    while (performance.now() - start < ms && !seen.includes(type) && !closed && !run.stopped)
      await run.wait(50);
  };
  if (plan.kind === 'transcribe') {
    let at = plan.offsetMs;
    const speak = (ms: number) =>
      run.paced(
        ms,
        plan.chunkMs,
        (piece) => {
          write(frameOf('audio-chunk', FORMAT, run.speech(at, piece)));
          at += piece;
        },
        () => closed,
      );
    write(
      Buffer.concat([
        frameOf('transcribe', { name: plan.model, language: 'en' }),
        frameOf('audio-start', FORMAT),
      ]),
    );
    await speak(plan.speakMs);
    if (plan.again) {
      write(frameOf('audio-start', FORMAT));
      await speak(plan.again.speakMs);
    }
    if (plan.stop) {
      write(frameOf('audio-stop'));
      await waitFor('transcript', 2000);
    }
    await run.wait(plan.lingerMs);
    forget();
    if (closed || run.stopped) return closed ? 'closed' : 'client-closed';
    leaveWyoming(run, socket, plan.leave, () => closed);
    return 'client-closed';
  }
  if (plan.kind === 'trickle') {
    const event =
      plan.event === 'describe'
        ? frameOf('describe')
        : plan.event === 'transcribe'
          ? frameOf('transcribe', { name: SESSION_MODELS.live })
          : frameOf('synthesize', { text: 'Hello.', voice: { name: SESSION_MODELS.tts } });
    let sent = 0;
    for (; sent < Math.min(plan.bytes, event.length) && !closed && !run.stopped; sent++) {
      write(event.subarray(sent, sent + 1));
      await run.wait(plan.byteMs);
    }
    forget();
    if (closed || run.stopped) return closed ? 'closed' : 'client-closed';
    if (plan.leave === 'destroy') socket.destroy();
    else if (plan.leave === 'rest') {
      write(event.subarray(sent));
      const answer = { describe: 'info', transcribe: 'ping', synthesize: 'audio-stop' }[plan.event];
      if (answer !== 'ping') await waitFor(answer, 2000);
      socket.destroy();
    } else {
      // A header that never ends, one byte at a time under the idle timeout: the event's own
      // deadline must end it. Bytes that cannot end a JSON string, so the line stays open.
      // Unref'd, as the pinger's: a client left running never keeps the process alive by itself.
      const timer = setInterval(() => write(Buffer.from('a')), 400).unref();
      const { closed: gone } = leaveRunning(run, 'a Wyoming header trickled a byte at a time', true, () => {
        clearInterval(timer);
        socket.destroy();
      });
      write(Buffer.from('"x":"'));
      socket.once('close', () => {
        clearInterval(timer);
        gone();
      });
    }
    return 'client-closed';
  }
  // A synthesis whose client stops reading: the server's writes back up and its slot is held until
  // the client leaves or the send timeout gives up on it.
  const text = SENTENCE.repeat(plan.repeats);
  if (plan.pauseAt === 'start') socket.pause();
  write(frameOf('synthesize', { text, voice: { name: SESSION_MODELS.tts } }));
  if (plan.pauseAt === 'audio') {
    await waitFor('audio-start', 2000);
    socket.pause();
  }
  await run.wait(plan.holdMs);
  forget();
  if (closed || run.stopped) return closed ? 'closed' : 'client-closed';
  if (plan.leave === 'destroy') socket.destroy();
  else {
    const { closed: gone } = leaveRunning(
      run,
      'a Wyoming synthesis whose client stopped reading',
      false,
      () => socket.destroy(),
    );
    socket.once('close', gone);
  }
  return 'client-closed';
}

function leaveWyoming(
  run: Run,
  socket: Socket,
  leave: 'destroy' | 'end' | 'silent' | 'pings',
  isClosed: () => boolean,
): void {
  if (leave === 'destroy') {
    socket.destroy();
    return;
  }
  if (leave === 'end') {
    // A half-close: the client says it is done and waits for the server to close its side.
    socket.end();
    const { closed } = leaveRunning(run, 'a Wyoming connection the client ended mid-utterance', true, () =>
      socket.destroy(),
    );
    socket.once('close', closed);
    return;
  }
  if (leave === 'silent') {
    const { closed } = leaveRunning(run, 'a Wyoming connection silent mid-utterance', true, () =>
      socket.destroy(),
    );
    socket.once('close', closed);
    return;
  }
  // Pings keep the connection (they are events), not the utterance: its slot must still come back.
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(frameOf('ping'));
  }, 400).unref();
  const { closed } = leaveRunning(run, 'a Wyoming connection pinging mid-utterance', false, () => {
    clearInterval(timer);
    socket.destroy();
  });
  socket.once('close', () => {
    clearInterval(timer);
    closed();
  });
  if (isClosed()) {
    clearInterval(timer);
    closed();
  }
}

// ---------------------------------------------------------------- bridge

async function bridge(plan: BridgePlan, run: Run): Promise<SessionOutcome['status']> {
  const ws = new WebSocket(`${wsBase(run.target.url)}/v1/audio/speech`);
  ws.on('error', () => {});
  let closed = false;
  const forget = run.onStop(() => ws.terminate());
  ws.on('message', (data) => {
    const text = data.toString();
    const status = /"status":(\d+)/.exec(text.slice(0, 200))?.[1];
    if (status && Number(status) >= 500 && Number(status) !== 503)
      run.problems.push(`bridge: a ${status} response: ${text.slice(0, 300)}`);
    if (text.includes('"code":"internal_error"')) run.problems.push(`bridge: ${text.slice(0, 300)}`);
  });
  ws.on('close', (code) => {
    closed = true;
    if (code === 1011) run.problems.push('bridge: the server closed with 1011 (internal error)');
  });
  const state = await opened(ws);
  if (state !== 'open') {
    forget();
    return state;
  }
  if (plan.slow) {
    const { repeats, stream } = plan.slow;
    ws.send(
      JSON.stringify({
        id: 'slow',
        body_json: {
          model: SESSION_MODELS.tts,
          input: SENTENCE.repeat(repeats),
          response_format: 'pcm',
          ...(stream ? { stream: true } : {}),
        },
      }),
    );
    for (let i = 0; i < plan.waiting; i++)
      ws.send(JSON.stringify({ id: `waiting-${i}`, body_json: { model: 'fz-tts', input: 'hello' } }));
  }
  if (plan.pause) ws.pause();
  await run.wait(plan.holdMs);
  forget();
  if (closed || run.stopped) return closed ? 'closed' : 'client-closed';
  switch (plan.leave) {
    case 'close':
      ws.close(1000);
      if (!plan.pause)
        keepUntilClosed(run, ws, 'a bridge socket closed with a request running', () => closed);
      // A paused client does not read the server's close frame: it cannot see the close, so it leaves.
      else ws.terminate();
      break;
    case 'terminate':
      ws.terminate();
      break;
    case 'silent':
      keepUntilClosed(run, ws, 'an idle bridge socket', () => closed);
      break;
    case 'paused': {
      ws.pause();
      const { closed: gone } = leaveRunning(run, 'a bridge socket whose client stopped reading', false, () =>
        ws.terminate(),
      );
      ws.once('close', gone);
      break;
    }
  }
  return 'client-closed';
}
