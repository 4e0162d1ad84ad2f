/**
 * The fuzzer's WebSocket category: an upgrade to /v1/realtime, to a route of audio.cpp's WebSocket
 * bridge, or to Deepgram's `/v1/listen` or `/v1/speak` with a query valid or not (sometimes a broken
 * upgrade), then client frames built from valid realtime events, bridge requests (raw bodies and
 * `{id, method, body_json | body}` envelopes) or Deepgram's messages (`Speak`, `Flush`, `Clear`,
 * `Close`; `KeepAlive`, `Finalize`, `CloseStream`; binary audio) and mutated at both levels:
 * the JSON (fields of the wrong type, junk, invalid UTF-8) and the framing (unmasked frames,
 * reserved bits and opcodes, fragments, oversized control frames, lengths past the event limit,
 * binary frames). Every case ends with a close frame (sent 50 ms after the events, so that they are
 * answered) or by dropping the connection, so a session that is still open at the end is a hang.
 * The answer must be a refusal (4xx/503) or a 101 whose messages hold no server_error or
 * internal_error, whose bridge responses no 500, and whose close (if the server closed) is no 1011.
 */
import { ALLOWED_1011 } from './deepgram-sessions.js';
import type { Rng } from './fuzz.js';

/** Client frames are masked (RFC 6455 5.3); `mask: false` is one of the mutations. */
function frame(
  rng: Rng,
  opcode: number,
  payload: Buffer,
  {
    fin = true,
    mask = true,
    rsv = 0,
    declared,
  }: { fin?: boolean; mask?: boolean; rsv?: number; declared?: bigint } = {},
): Buffer {
  const length = declared ?? BigInt(payload.length);
  const head: number[] = [(fin ? 0x80 : 0) | (rsv << 4) | opcode];
  const maskBit = mask ? 0x80 : 0;
  let extended = Buffer.alloc(0);
  if (length < 126n) head.push(maskBit | Number(length));
  else if (length < 65536n) {
    head.push(maskBit | 126);
    extended = Buffer.alloc(2);
    extended.writeUInt16BE(Number(length));
  } else {
    head.push(maskBit | 127);
    extended = Buffer.alloc(8);
    extended.writeBigUInt64BE(length);
  }
  if (!mask) return Buffer.concat([Buffer.from(head), extended, payload]);
  const key = rng.bytes(4);
  const masked = Buffer.from(payload);
  for (let i = 0; i < masked.length; i++) masked[i]! ^= key[i % 4]!;
  return Buffer.concat([Buffer.from(head), extended, key, masked]);
}

const CLOSE = (rng: Rng) => frame(rng, 8, Buffer.from([0x03, 0xe8]));

/** A realtime event of every kind voxd takes, and some it does not. */
function event(
  rng: Rng,
  mutate: (o: Record<string, unknown>) => Record<string, unknown>,
): Record<string, unknown> {
  const audio = () => rng.bytes(rng.pick([0, 1, 2, 3, 160, 4800])).toString('base64');
  // Off, server VAD with knobs in and out of range, or semantic VAD by eagerness.
  const turnDetection = () =>
    rng.pick([
      null,
      { type: 'server_vad' },
      {
        type: 'server_vad',
        threshold: rng.pick([0, 0.5, 1, -1, 2, '0.5']),
        prefix_padding_ms: rng.pick([0, 300, 10_000, 10_001, -5, 1.5]),
        silence_duration_ms: rng.pick([0, 200, 500, 10_000, 1e9]),
        idle_timeout_ms: rng.pick([null, 0, 1000, 5000, 3_600_001]),
      },
      { type: 'semantic_vad', eagerness: rng.pick(['low', 'medium', 'high', 'auto', 'eager', 7]) },
      { type: rng.pick(['none', '', 'server_vad ']) },
    ]);
  const events: (() => Record<string, unknown>)[] = [
    () => ({ type: 'input_audio_buffer.append', audio: audio() }),
    () => ({ type: 'input_audio_buffer.commit' }),
    () => ({ type: 'input_audio_buffer.clear' }),
    () => ({
      type: 'session.update',
      session: {
        type: 'transcription',
        audio: {
          input: {
            format: rng.pick([
              { type: 'audio/pcm', rate: 24000 },
              { type: 'audio/pcmu' },
              { type: 'audio/pcma' },
            ]),
            transcription: { model: rng.pick(['fz-asr', 'fz-asr-live', 'fz-tts', 'nope']), language: 'en' },
            turn_detection: turnDetection(),
          },
        },
      },
    }),
    () => ({
      type: 'transcription_session.update',
      session: {
        input_audio_format: rng.pick(['pcm16', 'g711_ulaw', 'g711_alaw']),
        turn_detection: turnDetection(),
      },
    }),
    () => ({ type: rng.pick(['response.create', 'conversation.item.create', '', 'x'.repeat(200)]) }),
  ];
  const base = rng.pick(events)();
  return rng.chance(0.3) ? mutate(base) : base;
}

/** A bridge frame: a request body as audio.cpp's frontend takes it, raw or in an envelope. */
function bridgeRequest(rng: Rng, mutate: (o: Record<string, unknown>) => Record<string, unknown>): unknown {
  const bodies: Record<string, unknown>[] = [
    { model: 'fz-tts', input: 'hello', response_format: rng.pick(['wav', 'pcm']) },
    { model: 'fz-tts-live', input: 'hi', stream: true },
    { model: 'fz-asr', text: 'x' },
    { model: rng.pick(['nope', 'fz-vad', 'fz-diar']), input: 'x' },
  ];
  const body = rng.chance(0.3) ? mutate(rng.pick(bodies)) : rng.pick(bodies);
  switch (rng.int(4)) {
    case 0:
      return body;
    case 1:
      return { id: rng.pick([1, 'a', null, {}, -1]), body_json: body };
    case 2:
      return { id: 'b', method: rng.pick(['POST', 'GET', 'DELETE', 'post', '']), body: JSON.stringify(body) };
    default:
      return mutate({ id: 7, body_json: body, body: rng.pick(['x', '', 'aGk=']), body_encoding: 'base64' });
  }
}

/** A frame's payload on one of Deepgram's sockets: a control message, mutated at times, or audio. */
function deepgramMessage(
  rng: Rng,
  listen: boolean,
  mutate: (o: Record<string, unknown>) => Record<string, unknown>,
): { payload: Buffer; binary: boolean } {
  if (listen && rng.chance(0.5))
    return { payload: rng.bytes(rng.pick([0, 1, 3, 320, 3200, 32000])), binary: true };
  const messages: Record<string, unknown>[] = listen
    ? [{ type: 'KeepAlive' }, { type: 'Finalize' }, { type: 'CloseStream' }, { type: 'Nope' }]
    : [
        {
          type: 'Speak',
          text: rng.pick(['Hello', ' there.', '', 'x'.repeat(2500), 'A sentence. And another one.']),
        },
        { type: 'Flush' },
        { type: 'Clear' },
        { type: 'Close' },
        { type: rng.pick(['speak', 'Nope', '']) },
      ];
  const base = rng.pick(messages);
  const message = rng.chance(0.3) ? mutate(base) : base;
  // A text frame on the speak socket that is binary instead: audio the client has no business sending.
  return { payload: Buffer.from(JSON.stringify(message), 'utf8'), binary: !listen && rng.chance(0.05) };
}

/** A query of one of Deepgram's sockets, valid or not in its model, encoding, rate and options. */
function deepgramTarget(rng: Rng): string {
  const listen = rng.chance(0.5);
  const q = new URLSearchParams();
  if (rng.chance(0.9))
    q.set(
      'model',
      listen
        ? rng.pick(['fz-asr', 'fz-asr-live', 'nova-3', 'nova-2-general', 'fz-tts', 'nope', ''])
        : rng.pick(['fz-tts', 'fz-tts-live', 'aura-2-thalia-en', 'fz-asr', 'nope', '']),
    );
  if (rng.chance(0.8))
    q.set(
      'encoding',
      rng.pick(['linear16', 'mulaw', 'alaw', 'opus', 'flac', 'LINEAR16', '', 'x'.repeat(300)]),
    );
  if (rng.chance(0.8))
    q.set('sample_rate', rng.pick(['16000', '8000', '48000', '0', '-1', '1e9', '16000.5', 'abc']));
  if (listen) {
    if (rng.chance(0.4)) q.set('channels', rng.pick(['1', '2', '0', '9', 'x']));
    for (const [name, values] of [
      ['interim_results', ['true', 'false', 'yes']],
      ['vad_events', ['true', 'false', '1']],
      ['endpointing', ['false', '10', '0', '-5', '100000', 'x']],
      ['utterance_end_ms', ['1000', '999', '5000', '0', 'x']],
      ['punctuate', ['true', 'false']],
      ['smart_format', ['true']],
      ['diarize', ['true']],
      ['language', ['en', 'en-US', 'xx']],
    ] as const)
      if (rng.chance(0.3)) q.set(name, rng.pick(values));
  } else if (rng.chance(0.2)) q.set('container', rng.pick(['none', 'wav', 'ogg']));
  return `${listen ? '/v1/listen' : '/v1/speak'}?${q.toString()}`;
}

/** The upgrade request, valid or broken in one way. */
function handshake(
  rng: Rng,
  target: 'realtime' | 'bridge' | 'deepgram',
): { head: string; path: string; valid: boolean } {
  const bridge = target === 'bridge';
  const headers: [string, string][] = [
    ['Host', '127.0.0.1'],
    ['Upgrade', 'websocket'],
    ['Connection', 'Upgrade'],
    ['Sec-WebSocket-Key', rng.bytes(16).toString('base64')],
    ['Sec-WebSocket-Version', '13'],
  ];
  let path =
    target === 'deepgram'
      ? deepgramTarget(rng)
      : bridge
        ? rng.pick(['/v1/audio/speech', '/v1/tasks/run', '/v1/models', '/v1/audio/transcriptions'])
        : `/v1/realtime?model=${rng.pick(['fz-asr', 'fz-asr', 'fz-asr-live'])}`;
  let valid = true;
  if (rng.chance(0.2)) {
    valid = false;
    switch (rng.int(7)) {
      case 0:
        headers[3] = ['Sec-WebSocket-Key', rng.pick(['', 'short', '!!!!'])];
        break;
      case 1:
        headers[4] = ['Sec-WebSocket-Version', rng.pick(['8', '', '99999999999'])];
        break;
      case 2:
        path = rng.pick([
          '/v1/realtime?model=nope',
          '/v1/realtime?model=fz-tts',
          '/v1/elsewhere',
          '/v1/realtime?model=%ff',
        ]);
        break;
      case 3:
        headers.push(['Origin', 'https://elsewhere.example']);
        break;
      case 4:
        headers.push([
          'Sec-WebSocket-Protocol',
          rng.pick([
            'realtime, openai-insecure-api-key.x',
            ',,,',
            'a'.repeat(500),
            'token, x',
            'token',
            'token, ,',
          ]),
        ]);
        valid = true;
        break;
      case 5:
        headers[1] = ['Upgrade', rng.pick(['h2c', 'websocket2', ''])];
        break;
      default:
        path = target === 'deepgram' ? path.slice(0, path.indexOf('?')) : '/v1/realtime';
        valid = true;
    }
  }
  const head = `GET ${path} HTTP/1.1\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  return { head, path, valid };
}

export function websocketCase(
  rng: Rng,
  mutate: (o: Record<string, unknown>) => Record<string, unknown>,
  mutateText: (text: string) => string,
): {
  /** What the upgrade asked for: the realtime API, the bridge, or one of Deepgram's sockets. */
  target: 'realtime' | 'bridge' | 'deepgram';
  request: Buffer;
  earlyClose: boolean;
  /** The close frame, sent once the events had time to be answered. */
  trailer: Buffer | undefined;
  check: (body: string | undefined) => string | undefined;
} {
  const roll = rng.next();
  const target = roll < 0.3 ? 'bridge' : roll < 0.55 ? 'deepgram' : 'realtime';
  const { head, path } = handshake(rng, target);
  const frames: Buffer[] = [];
  let earlyClose = false;
  for (let n = rng.range(1, 6); n > 0; n--) {
    const message =
      target === 'deepgram'
        ? deepgramMessage(rng, path.startsWith('/v1/listen'), mutate)
        : {
            payload: Buffer.from(
              JSON.stringify(target === 'bridge' ? bridgeRequest(rng, mutate) : event(rng, mutate)),
            ),
            binary: false,
          };
    let payload = message.binary
      ? message.payload
      : Buffer.from(
          rng.chance(0.15) ? mutateText(message.payload.toString()) : message.payload.toString(),
          'utf8',
        );
    if (!message.binary && rng.chance(0.05))
      payload = Buffer.concat([payload, Buffer.from([0xc3, 0x28, 0xff])]); // invalid UTF-8
    if (!rng.chance(0.25)) {
      frames.push(frame(rng, message.binary ? 2 : 1, payload));
      continue;
    }
    frames.push(
      ...mangled(rng, payload, () => {
        earlyClose = true;
      }),
    );
  }
  if (!earlyClose && rng.chance(0.1)) earlyClose = true;
  const request = Buffer.concat([Buffer.from(head, 'latin1'), ...frames]);
  return {
    target,
    request,
    earlyClose,
    trailer: earlyClose ? undefined : CLOSE(rng),
    check: (body) => {
      if (body?.includes('"type":"server_error"')) return `a server_error event: ${body.slice(0, 300)}`;
      if (body?.includes('"code":"internal_error"')) return `an internal_error: ${body.slice(0, 300)}`;
      const close = closeOf(body);
      // A 1011 is a fault unless it is a refusal the contract allows (a busy model), told as text.
      if (close?.code === 1011 && !ALLOWED_1011.test(`${close.reason} ${body}`))
        return `the server closed with 1011 (${close.reason.slice(0, 200)})`;
      const fault = body?.match(/"status":5(?!03)\d\d/);
      return fault
        ? `a bridge response ${fault[0]}: ${body!.slice(Math.max(0, fault.index! - 100), fault.index! + 300)}`
        : undefined;
    },
  };
}

/** A frame broken in one way (or a message cut in fragments); `leaves` says the client will leave mid-frame. */
function mangled(rng: Rng, payload: Buffer, leaves: () => void): Buffer[] {
  switch (rng.int(8)) {
    case 0:
      return [frame(rng, 1, payload, { mask: false })];
    case 1:
      return [frame(rng, 1, payload, { rsv: rng.range(1, 7) })];
    case 2:
      return [frame(rng, rng.pick([3, 4, 5, 6, 7, 11, 12, 13, 14, 15]), payload)];
    case 3:
      return [frame(rng, 2, payload)];
    case 4: {
      // A message in fragments, sometimes with a ping between them.
      const cut = rng.int(payload.length + 1);
      return [
        frame(rng, 1, payload.subarray(0, cut), { fin: false }),
        ...(rng.chance(0.5) ? [frame(rng, 9, Buffer.from('p'))] : []),
        frame(rng, 0, payload.subarray(cut)),
      ];
    }
    case 5:
      return [frame(rng, rng.pick([9, 10]), rng.bytes(rng.pick([0, 125, 126, 300])))];
    case 6:
      // A length past the 8 MiB message limit (max_websocket_message_bytes), or one the frame never delivers (then the client leaves).
      if (rng.chance(0.5))
        return [frame(rng, 1, payload, { declared: rng.pick([(8n << 20n) + 1n, 22n << 20n, 1n << 62n]) })];
      leaves();
      return [frame(rng, 1, payload, { declared: BigInt(payload.length + 1000) })];
    default:
      return [frame(rng, 0, payload)]; // a continuation with nothing to continue
  }
}

/**
 * The server's close frame among the frames of a 101's body (read as latin1, one char a byte), if
 * it came: its code and reason. Server frames are unmasked.
 */
export function closeOf(body: string | undefined): { code: number; reason: string } | undefined {
  if (body === undefined) return undefined;
  const bytes = Buffer.from(body, 'latin1');
  for (let at = 0; at + 2 <= bytes.length; ) {
    const opcode = bytes[at]! & 0x0f;
    let length = bytes[at + 1]! & 0x7f;
    let start = at + 2;
    if (length === 126) {
      if (start + 2 > bytes.length) return undefined;
      length = bytes.readUInt16BE(start);
      start += 2;
    } else if (length === 127) {
      if (start + 8 > bytes.length) return undefined;
      length = Number(bytes.readBigUInt64BE(start));
      start += 8;
    }
    if (opcode === 8 && length >= 2 && start + length <= bytes.length)
      return {
        code: bytes.readUInt16BE(start),
        reason: bytes.subarray(start + 2, start + length).toString('utf8'),
      };
    at = start + length;
  }
  return undefined;
}
