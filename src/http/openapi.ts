/**
 * The OpenAPI 3.1 description of voxd's HTTP API, served at GET /openapi.json. Both sides of each
 * exchange come from the routes: each declares the schemas it checks its JSON body and its query
 * with, its multipart fields, and the JSON body of its 200 answer (src/http/schemas), so the
 * document cannot disagree with validation nor with the handlers' types; every response schema is
 * a component under its title, and error bodies are the Error schema. What a schema does not say
 * (summaries, path parameters, an answer's other content types, headers, error statuses) is written
 * here to say what docs/api.md says. The paths come from the routes actually registered: a route
 * with no description here, or a JSON answer written here rather than declared by its route, makes
 * the build throw, so a new route cannot ship undescribed (test/http/openapi.test.ts checks both
 * ways, the test helpers validate real requests and responses against it).
 */
import { readFileSync } from 'node:fs';
import type { TSchema } from '@sinclair/typebox';
import * as audioResponses from './schemas/audio-responses.js';
import * as commonResponses from './schemas/common-responses.js';
import * as managementResponses from './schemas/management-responses.js';
import * as modelResponses from './schemas/model-responses.js';
import type { Route } from './transport/route.js';

type Obj = Record<string, unknown>;

const VERSION = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

const ref = (name: string): Obj => ({ $ref: `#/components/schemas/${name}` });
const refTo = (schema: TSchema): Obj => ref(schema.title as string);
const res = (name: string): Obj => ({ $ref: `#/components/responses/${name}` });
const json = (schema: Obj): Obj => ({ 'application/json': { schema } });
/** A 200's JSON content comes from its route's `response`, added by buildOpenApi. */
const ok = (description: string, content: Obj = {}, headers?: Obj): Obj => ({
  description,
  content,
  ...(headers ? { headers } : {}),
});
const str = (description?: string): Obj => ({ type: 'string', ...(description ? { description } : {}) });
const int = (description?: string): Obj => ({ type: 'integer', ...(description ? { description } : {}) });
const SSE = 'text/event-stream';
const sse = (description: string): Obj => ({
  [SSE]: {
    schema: {
      type: 'string',
      description: `${description} Each event is one \`data: <json>\\n\\n\` frame; a stream that succeeded ends with \`data: [DONE]\`; a failure after the headers is one \`{"type":"error","error":{...}}\` event (the Error object), with no [DONE].`,
    },
  },
});
const binary: Obj = { type: 'string', contentMediaType: 'application/octet-stream' };

const TIMING_HEADERS: Obj = {
  'X-AudioCPP-Wall-Ms': { description: 'Milliseconds of the run, 6 decimals.', schema: str() },
  'X-AudioCPP-Audio-Duration-Ms': { description: 'Duration of the output audio.', schema: str() },
  'X-AudioCPP-RTF': { description: 'wall_ms / audio_duration_ms.', schema: str() },
};

const errorResponse = (description: string, headers?: Obj): Obj => ({
  description,
  content: json(refTo(commonResponses.ErrorBody)),
  ...(headers ? { headers } : {}),
});

const responses: Obj = {
  BadRequest: errorResponse('Malformed JSON or multipart, a missing or invalid field, an unsupported value.'),
  Unauthorized: errorResponse(
    'type authentication_error: the server has API keys and the request sent none, or an unknown one.',
  ),
  Forbidden: errorResponse(
    'type forbidden (a management route while ui_management is off; a server path outside the file roots; without API keys, a Host that is not a name the server answers to (host_not_allowed) or a POST from a page of another origin (origin_not_allowed)) or permission_error (an API key whose scopes do not cover the route).',
  ),
  NotFound: errorResponse('Unknown endpoint, unknown model id, unknown package or job.'),
  UpgradeRequired: errorResponse('A WebSocket endpoint asked without `Upgrade: websocket`.'),
  MethodNotAllowed: errorResponse(
    'A known path with another method (`method GET is not allowed on ...; use POST`).',
  ),
  RequestTimeout: errorResponse(
    'The request body sent nothing for body_timeout_ms, or had not arrived whole after body_deadline_ms; the connection is closed.',
  ),
  Conflict: errorResponse('A model install job is active for this id (or any, for a models-root change).'),
  PayloadTooLarge: errorResponse(
    'Body over max_request_body_bytes (a JSON body over max_json_body_bytes), or input audio over max_audio_seconds (or, decoded by ffmpeg, samples over max_request_body_bytes).',
  ),
  UnsupportedMediaType: errorResponse(
    'Without API keys: a Content-Type the route does not read (application/json; multipart/form-data on the upload routes), such as the text/plain a page of another site could send unasked (unsupported_media_type).',
  ),
  Unprocessable: errorResponse('An installed folder that no engine family recognises.'),
  InternalError: errorResponse('An engine failed to load or run, or a fault inside voxd.'),
  ServiceUnavailable: errorResponse(
    'server_busy (busy timeout, residency full, shutting down, engine restarted), insufficient_memory, queue_full (the model queue is full; retry after Retry-After seconds), body_budget (the request bodies in flight would pass max_inflight_body_bytes) or too_many_connections (max_connections).',
    {
      'Retry-After': {
        description:
          'Seconds to wait before retrying (sent with queue_full, body_budget and too_many_connections).',
        schema: int(),
      },
    },
  ),
  GatewayTimeout: errorResponse('The run went past max_inference_ms and was cancelled.'),
  InsufficientStorage: errorResponse(
    "The server's temporary folder filled while the upload was spooled to it, or while uploaded or base64 audio was stored for ffmpeg (insufficient_storage).",
  ),
};

type Status =
  | '400'
  | '401'
  | '403'
  | '404'
  | '408'
  | '409'
  | '413'
  | '415'
  | '422'
  | '426'
  | '500'
  | '503'
  | '504'
  | '507';
const ERROR_REFS: Record<Status, string> = {
  '400': 'BadRequest',
  '401': 'Unauthorized',
  '403': 'Forbidden',
  '404': 'NotFound',
  '408': 'RequestTimeout',
  '409': 'Conflict',
  '413': 'PayloadTooLarge',
  '415': 'UnsupportedMediaType',
  '422': 'Unprocessable',
  '426': 'UpgradeRequired',
  '500': 'InternalError',
  '503': 'ServiceUnavailable',
  '504': 'GatewayTimeout',
  '507': 'InsufficientStorage',
};
const errors = (...statuses: Status[]): Obj =>
  Object.fromEntries(statuses.map((s) => [s, res(ERROR_REFS[s])]));

/**
 * Every route with a JSON body can be refused for its body (400, 408, 413, 415 for another
 * Content-Type without keys, and 503 past the body budget) or its key (401, 403).
 */
const BODY_ERRORS: Status[] = ['400', '401', '403', '408', '413', '415', '503'];
/**
 * What an inference route adds: its model (404), the engine (500), busy or full (503), too slow
 * (504), a full temporary folder while audio is stored for ffmpeg (507: base64 audio as well).
 */
const INFERENCE_ERRORS: Status[] = [...BODY_ERRORS, '404', '500', '504', '507'];
/** The routes that take multipart uploads: a full temporary folder while one is spooled (507). */
const UPLOAD_ERRORS: Status[] = INFERENCE_ERRORS;
/**
 * The live routes: their model is a query parameter, so an unknown one is a 400, not a 404; their
 * raw body may have any Content-Type.
 */
const LIVE_ERRORS: Status[] = INFERENCE_ERRORS.filter((s) => s !== '404' && s !== '507' && s !== '415');
/** Management routes that read no model: a key, the ui_management gate, a bad body. */
const MANAGEMENT_ERRORS: Status[] = BODY_ERRORS;

interface Operation {
  tags: string[];
  summary: string;
  description?: string;
  parameters?: Obj[];
  requestBody?: Obj;
  responses: Obj;
  /**
   * false: open to every client even when the server has API keys; 'optional': open while listed in
   * open_endpoints (the default), else it takes a key like the rest.
   */
  secured?: boolean | 'optional';
}

const liveBody: Obj = {
  required: true,
  description: 'Raw PCM sent with Transfer-Encoding: chunked, read as it arrives (bounded by live_ingest).',
  content: { 'application/octet-stream': { schema: binary } },
};

/**
 * The operations, by path then method. Paths and methods here that the server does not register
 * (another build's routes) are left out of the document; routes it registers must all be here.
 */
const OPERATIONS: Record<string, Record<string, Operation>> = {
  '/health': {
    get: {
      tags: ['Operations'],
      summary: 'Server status',
      description: '503 with status shutting_down once a shutdown begins.',
      secured: 'optional',
      responses: {
        '200': ok('The server runs.'),
        '503': ok('A shutdown began.', json(refTo(modelResponses.Health))),
        ...errors('401'),
      },
    },
  },
  '/ready': {
    get: {
      tags: ['Operations'],
      summary: 'Readiness probe',
      description: '200 while voxd takes work; 503 server_busy from the moment a shutdown begins.',
      secured: 'optional',
      responses: { '200': ok('Ready.'), ...errors('401', '503') },
    },
  },
  '/metrics': {
    get: {
      tags: ['Operations'],
      summary: 'Prometheus metrics',
      description: 'The Prometheus text exposition format of the server and model metrics.',
      secured: 'optional',
      responses: {
        '200': ok('Metrics.', { 'text/plain': { schema: str('Prometheus text exposition format 0.0.4.') } }),
        ...errors('401'),
      },
    },
  },
  '/openapi.json': {
    get: {
      tags: ['Operations'],
      summary: 'This document',
      description: 'The OpenAPI 3.1 description of every route, sent with Cache-Control: no-cache.',
      secured: false,
      responses: {
        '200': ok('The OpenAPI document.'),
      },
    },
  },
  '/v1/models': {
    get: {
      tags: ['Models'],
      summary: 'Registered models',
      responses: {
        '200': ok(
          'The models, loaded or not, then one entry per alias of a registered model (with alias_of).',
        ),
        ...errors('401', '403'),
      },
    },
  },
  '/v1/models/{id}': {
    get: {
      tags: ['Models'],
      summary: 'One model',
      description:
        "OpenAI's models.retrieve: the entry /v1/models lists under this id, a model's or an alias's. An unknown id is a 404 naming it (for a catalogue package not installed, saying how to install it).",
      parameters: [
        { name: 'id', in: 'path', required: true, schema: str(), description: 'A model id or alias.' },
      ],
      responses: { '200': ok('The model.'), ...errors('401', '403', '404') },
    },
  },
  '/v1/audio/voices': {
    get: {
      tags: ['Audio'],
      summary: 'Voice names',
      description:
        "The voice_dir voices, the model's presets and, for a speech model, its voice aliases. An unknown model gives the voice_dir list only, never an error.",
      responses: { '200': ok('The voices.'), ...errors('401', '403') },
    },
  },
  '/v1/audio/speech': {
    post: {
      tags: ['Audio'],
      summary: 'Text to speech',
      description:
        'For models with task tts, clon or vdes. With stream (or stream_format) the speech streams as SSE or raw audio from a mode "streaming" model; errors after the headers arrive in the stream.',
      responses: {
        '200': ok(
          'The speech: a file in response_format, base64 WAV in JSON, or a stream.',
          {
            'audio/wav': { schema: binary },
            'audio/mpeg': { schema: binary },
            'audio/ogg': { schema: binary },
            'audio/aac': { schema: binary },
            'audio/flac': { schema: binary },
            'application/octet-stream': {
              schema: { ...binary, description: 'Raw PCM16 (pcm), whole or streamed.' },
            },
            ...sse(
              "speech.audio.delta {audio} events, then speech.audio.done {usage: {input_tokens (the input's characters), output_tokens (0), total_tokens}, timing: {ttft_ms}}.",
            ),
          },
          TIMING_HEADERS,
        ),
        ...errors(...INFERENCE_ERRORS),
      },
    },
  },
  '/v1/audio/speech/live': {
    post: {
      tags: ['Audio'],
      summary: 'Live speech: streamed input audio, streamed speech',
      description:
        'Reads the chunked raw PCM body to its end, then speaks `input` as a streamed speech response (mode "streaming" models).',
      requestBody: liveBody,
      responses: {
        '200': ok('The speech stream.', {
          'application/octet-stream': { schema: binary },
          ...sse('speech.text.delta, speech.audio.delta, speech.text.done, speech.audio.done events.'),
        }),
        ...errors(...LIVE_ERRORS),
      },
    },
  },
  '/v1/audio/transcriptions': {
    post: {
      tags: ['Audio'],
      summary: 'Speech recognition or diarization',
      description:
        'For models with task asr or diar: a multipart upload (WAV or any container ffmpeg decodes, told by its content), or JSON naming a server-local audio file. stream=true answers SSE (mode "streaming" models).',
      responses: {
        '200': ok('The transcript in response_format.', {
          'text/plain': { schema: str('response_format text.') },
          'application/x-subrip': { schema: str('response_format srt.') },
          'text/vtt': { schema: str('response_format vtt.') },
          ...sse(
            'transcript.text.delta events, then transcript.text.done {text, usage: {type: "duration", seconds}, timing} (diarization models: diarization.delta/done with speaker_turns).',
          ),
        }),
        ...errors(...UPLOAD_ERRORS),
      },
    },
  },
  '/v1/audio/transcriptions/details': {
    post: {
      tags: ['Audio'],
      summary: 'Everything the engine gives for a transcription',
      description: 'The request of /v1/audio/transcriptions; always JSON; stream=true is a 400.',
      responses: {
        '200': ok('Text, segments, speaker turns and words, as the engine gives them.'),
        ...errors(...UPLOAD_ERRORS),
      },
    },
  },
  '/v1/audio/translations': {
    post: {
      tags: ['Audio'],
      summary: 'Translation into English',
      description:
        'For multilingual whisper_asr models; the request of /v1/audio/transcriptions (no stream, no diarized_json).',
      responses: {
        '200': ok('The English text in response_format.', {
          'text/plain': { schema: str() },
          'application/x-subrip': { schema: str() },
          'text/vtt': { schema: str() },
        }),
        ...errors(...UPLOAD_ERRORS),
      },
    },
  },
  '/v1/audio/transcriptions/live': {
    post: {
      tags: ['Audio'],
      summary: 'Live transcription of streamed input audio',
      description:
        'A chunked raw PCM body read as it arrives; the events of a streamed transcription come back on the same connection.',
      requestBody: liveBody,
      responses: {
        '200': ok(
          'The transcription stream.',
          sse('transcript.text.delta/done or diarization.delta/done events.'),
        ),
        ...errors(...LIVE_ERRORS),
      },
    },
  },
  '/v1/realtime': {
    get: {
      tags: ['Audio'],
      summary: 'Realtime transcription over a WebSocket (OpenAI Realtime API)',
      description:
        "A WebSocket upgrade (`Upgrade: websocket`): the session's events are OpenAI's Realtime transcription events, GA (`session.update`) and beta (`transcription_session.update`) shapes, described in docs/realtime.md. Keys as on every route, and also `?api_key=` or the subprotocol `openai-insecure-api-key.<key>` (answered with `realtime`); an ephemeral key from /v1/realtime/client_secrets in any of those places, with or without API keys. Every refusal happens at the upgrade, as an HTTP answer with the Error body; asked without the upgrade, 426.",
      responses: {
        '101': { description: 'Switching Protocols: the session begins with a session.created event.' },
        ...errors('400', '401', '403', '404', '426', '503'),
      },
    },
  },
  '/v1/listen': {
    get: {
      tags: ['Audio'],
      summary: "Live transcription over a WebSocket (Deepgram's streaming STT)",
      description:
        "A WebSocket upgrade (`Upgrade: websocket`) speaking Deepgram's live transcription protocol: binary audio frames in the query's `encoding`, `sample_rate` and `channels`; `KeepAlive`, `Finalize` and `CloseStream` messages; `Results`, `SpeechStarted`, `UtteranceEnd` and a closing `Metadata`. A Deepgram model name in `model` stands for `deepgram_listen_model`. Keys as on every route, also `Authorization: Token <key>` and the subprotocols `token, <key>`. Every refusal happens at the upgrade, as an HTTP answer with the Error body; asked without the upgrade, 426. docs/deepgram.md.",
      responses: {
        '101': { description: 'Switching Protocols: the session takes audio.' },
        ...errors('400', '401', '403', '404', '426', '503'),
      },
    },
    post: {
      tags: ['Audio'],
      summary: "Transcription of prerecorded audio in Deepgram's REST shape",
      description:
        "Deepgram's `POST /v1/listen`, as `@deepgram/sdk`'s `listen.v1.media.transcribeFile` and `transcribeUrl` call it: the body is the audio (any format voxd decodes; raw samples when the query names `encoding` and `sample_rate`), or JSON `{\"url\"}` naming a server-side file under `file_roots` (voxd fetches no remote URL). The answer is Deepgram's: `metadata`, `results.channels[0].alternatives[0]` (transcript, confidence, timed words) and `results.utterances` with `utterances=true`. `callback` is refused. docs/deepgram.md.",
      requestBody: {
        required: true,
        description: 'The audio, or JSON {"url"} naming a server-side file.',
        content: {
          'application/octet-stream': { schema: binary },
          'application/json': {
            schema: {
              type: 'object',
              required: ['url'],
              properties: {
                url: { type: 'string', description: 'A server-side path or file: URL under file_roots.' },
              },
            },
          },
        },
      },
      responses: {
        '200': ok("Deepgram's prerecorded transcription (metadata, results)."),
        ...errors(...INFERENCE_ERRORS),
      },
    },
  },
  '/v1/speak': {
    get: {
      tags: ['Audio'],
      summary: "Text-in streaming speech over a WebSocket (Deepgram's Aura streaming TTS)",
      description:
        "A WebSocket upgrade (`Upgrade: websocket`) speaking Deepgram's streaming TTS protocol: `Speak` messages carry text as it is written (words, half words), `Flush` speaks what is buffered, `Clear` stops at once, `Close` ends; the answer is binary audio in the query's `encoding` and `sample_rate`, with `Metadata`, `Flushed`, `Cleared` and `Warning` messages. A Deepgram voice name in `model` stands for `deepgram_speak_model` and `deepgram_speak_voice`. Keys as on every route, also `Authorization: Token <key>` and the subprotocols `token, <key>`. Every refusal happens at the upgrade, as an HTTP answer with the Error body; asked without the upgrade, 426. docs/deepgram.md.",
      responses: {
        '101': { description: 'Switching Protocols: the session begins with a Metadata message.' },
        ...errors('400', '401', '403', '404', '426', '503'),
      },
    },
    post: {
      tags: ['Audio'],
      summary: "Text to speech in Deepgram's REST shape (Aura)",
      description:
        "Deepgram's `POST /v1/speak`, as `@deepgram/sdk`'s `speak.v1.audio.generate` calls it: a JSON body `{\"text\"}` and the socket's query (`model`, `encoding`, `sample_rate`, `speed`), plus `container` `wav` (the default, as Deepgram's) or `none` (the raw samples); the audio streams as it is made. `callback` is refused (voxd calls no URL). docs/deepgram.md.",
      responses: {
        '200': ok("The speech in the query's encoding and rate.", {
          'audio/l16': { schema: { ...binary, description: 'linear16: 16-bit little-endian PCM, mono.' } },
          'audio/PCMU': { schema: { ...binary, description: 'mulaw (G.711), mono.' } },
          'audio/PCMA': { schema: { ...binary, description: 'alaw (G.711), mono.' } },
          'audio/wav': { schema: { ...binary, description: 'container=wav.' } },
        }),
        ...errors(...INFERENCE_ERRORS),
      },
    },
  },
  '/v1/realtime/client_secrets': {
    post: {
      tags: ['Audio'],
      summary: 'Mint an ephemeral key for a realtime transcription session (OpenAI client secrets)',
      description:
        "OpenAI's ephemeral-key flow for browser apps: a short-lived `ek_...` key (10 to 7200 s, 600 by default) that /v1/realtime accepts as `Authorization: Bearer`, the `openai-insecure-api-key.` subprotocol or `?api_key=`, and every other route refuses (401). Its session config is checked as a session update is; the key starts its sessions on its model. At most max_client_secrets keys live at once (503 too_many_client_secrets; 403 when that is 0). docs/realtime.md.",
      responses: {
        '200': ok('The key, its expiry and the session it starts.'),
        ...errors(...BODY_ERRORS, '404'),
      },
    },
  },
  '/v1/realtime/transcription_sessions': {
    post: {
      tags: ['Audio'],
      summary: 'Mint an ephemeral key for a transcription session (OpenAI beta shape)',
      description:
        "The beta form of /v1/realtime/client_secrets: the body is a transcription session config (the key's life under client_secret.expires_at), the answer that session with client_secret {value, expires_at}. docs/realtime.md.",
      responses: {
        '200': ok('The session with its key.'),
        ...errors(...BODY_ERRORS, '404'),
      },
    },
  },
  '/v1/batches/transcriptions': {
    post: {
      tags: ['Audio'],
      summary: 'Several audio files on one asr or diar model',
      description: 'Multipart only: one or more file parts. Every file is checked before the stream starts.',
      responses: {
        '200': ok(
          'The results as they complete.',
          sse(
            'batch.transcription.result {index, filename, text | error} per file, then batch.transcription.done.',
          ),
        ),
        ...errors(...UPLOAD_ERRORS),
      },
    },
  },
  '/v1/tasks/run': {
    post: {
      tags: ['Tasks'],
      summary: 'Run any task on any model',
      responses: { '200': ok('The result.'), ...errors(...INFERENCE_ERRORS) },
    },
  },
  '/v1/tasks/stream': {
    post: {
      tags: ['Tasks'],
      summary: "Run any task on a streaming model, with the run's events",
      description:
        'Without stream_format: one JSON body {events, result} at the end. "stream_format": "sse": events as they happen.',
      responses: {
        '200': ok('The events and the result.', {
          ...sse('task.stream.event {event} per event, then task.stream.done {result}.'),
        }),
        ...errors(...INFERENCE_ERRORS),
      },
    },
  },
  '/v1/tasks/batch': {
    post: {
      tags: ['Tasks'],
      summary: 'Run several requests on one model',
      description:
        'Every entry is checked before the stream starts; a failed run is a result event with error.',
      responses: {
        '200': ok(
          'The results as they complete.',
          sse('task.batch.result {index, result | error}, then task.batch.done.'),
        ),
        ...errors(...INFERENCE_ERRORS),
      },
    },
  },
  '/v1/models/load': {
    post: {
      tags: ['Management'],
      summary: 'Register or reconfigure a model',
      description: 'Needs ui_management. Answers once the model is loaded.',
      responses: {
        '200': ok('The model is ready.'),
        ...errors(...MANAGEMENT_ERRORS, '404', '422', '500', '503'),
      },
    },
  },
  '/v1/models/unload': {
    post: {
      tags: ['Management'],
      summary: 'Unload one model',
      description: 'Needs ui_management. The model stays registered.',
      responses: {
        '200': ok('Unloaded.'),
        ...errors(...MANAGEMENT_ERRORS, '404', '500', '503'),
      },
    },
  },
  '/v1/ui/models/config': {
    get: {
      tags: ['Management'],
      summary: "A model's registration body",
      description: 'Needs ui_management. Sent back to /v1/models/load unchanged, it reconfigures nothing.',
      responses: {
        '200': ok('The models[i] entry.'),
        ...errors('400', '401', '403', '404'),
      },
    },
  },
  '/v1/tasks/unload_models': {
    post: {
      tags: ['Management'],
      summary: 'Unload some models',
      description: 'Not gated by ui_management. Unknown ids go to not_found.',
      responses: {
        '200': ok('What was unloaded.'),
        ...errors(...MANAGEMENT_ERRORS, '500', '503'),
      },
    },
  },
  '/v1/tasks/unload_all_models': {
    post: {
      tags: ['Management'],
      summary: 'Unload every model',
      description: 'Not gated by ui_management. No body needed.',
      responses: {
        '200': ok('What was unloaded.'),
        ...errors(...MANAGEMENT_ERRORS, '500', '503'),
      },
    },
  },
  '/v1/ui/models-root': {
    get: {
      tags: ['Installer'],
      summary: 'Where installed model packages live',
      description: 'Needs ui_management.',
      responses: { '200': ok('The models root.'), ...errors('401', '403') },
    },
    post: {
      tags: ['Installer'],
      summary: 'Move the models root',
      description: 'Needs ui_management. An empty path restores the default; 409 while a download runs.',
      responses: {
        '200': ok('The new models root.'),
        ...errors(...MANAGEMENT_ERRORS, '409'),
      },
    },
  },
  '/v1/ui/browse-directories': {
    post: {
      tags: ['Installer'],
      summary: 'The folder picker',
      description:
        "Needs ui_management. Only under voxd's data folder, the models root and the file roots (else 403).",
      responses: { '200': ok('The subfolders.'), ...errors(...MANAGEMENT_ERRORS) },
    },
  },
  '/v1/ui/path-status': {
    post: {
      tags: ['Installer'],
      summary: 'Whether a path exists, and what it is',
      description: "Needs ui_management. Only under the folder picker's roots (else 403).",
      responses: { '200': ok('The path.'), ...errors(...MANAGEMENT_ERRORS) },
    },
  },
  '/v1/ui/models/install': {
    post: {
      tags: ['Installer'],
      summary: 'Start a model download',
      description: 'Needs ui_management. The job runs in the background; its failures are in its message.',
      responses: {
        '200': ok('The job.'),
        ...errors(...MANAGEMENT_ERRORS, '404', '409'),
      },
    },
  },
  '/v1/ui/models/install/stop': {
    post: {
      tags: ['Installer'],
      summary: 'Stop a model download',
      description: 'Needs ui_management. 404 without a job, 400 when it is not running.',
      responses: { '200': ok('The job.'), ...errors(...MANAGEMENT_ERRORS, '404') },
    },
  },
  '/v1/ui/models/clean-partial': {
    post: {
      tags: ['Installer'],
      summary: "Remove a download's partial files",
      description: 'Needs ui_management. 409 while its job runs.',
      responses: {
        '200': ok('Cleaned.'),
        ...errors(...MANAGEMENT_ERRORS, '409'),
      },
    },
  },
  '/v1/ui/models/delete': {
    post: {
      tags: ['Installer'],
      summary: 'Remove an installed package',
      description:
        'Needs ui_management. 404 when not installed, 409 while its job runs, 400 while a model loaded from it is loaded.',
      responses: {
        '200': ok('Removed.'),
        ...errors(...MANAGEMENT_ERRORS, '404', '409'),
      },
    },
  },
  '/v1/ui/models/install-status': {
    get: {
      tags: ['Installer'],
      summary: 'Install jobs',
      description:
        'Needs ui_management. One job (an idle one for an id without a job), or all of them without id.',
      responses: {
        '200': ok('One job, or {data: [jobs]}.'),
        ...errors('400', '401', '403'),
      },
    },
  },
  '/v1/ui/models/package-sizes': {
    get: {
      tags: ['Installer'],
      summary: "The catalogue's packages and their sizes",
      description: 'Needs ui_management.',
      responses: { '200': ok('The packages.'), ...errors('401', '403') },
    },
  },
  '/v1/ui/models/installed': {
    get: {
      tags: ['Installer'],
      summary: 'The packages in the models root',
      description: 'Needs ui_management.',
      responses: {
        '200': ok('The installed packages.'),
        ...errors('401', '403'),
      },
    },
  },
  '/v1/ui/status/stream': {
    get: {
      tags: ['UI'],
      summary: "The dashboard's live model list",
      description: 'Needs ui (404 while it is off). The body of GET /v1/models, again whenever it changes.',
      responses: {
        '200': ok(
          'The model list as it changes.',
          sse('{object: "list", data: [...]} events; `: heartbeat` comments.'),
        ),
        ...errors('401', '403', '404'),
      },
    },
  },
  '/': {
    get: {
      tags: ['UI'],
      summary: "The web UI's page",
      description: 'Needs ui (404 while it is off).',
      secured: false,
      responses: {
        '200': ok('The page.', { 'text/html': { schema: str() } }),
        ...errors('404'),
      },
    },
  },
};

/** The web UI's files: one path per file the server registered (the files of ui/ at startup). */
const UI_FILE_TYPES: Record<string, string> = { html: 'text/html', js: 'text/javascript', css: 'text/css' };
function uiFileOperation(path: string): Operation | undefined {
  const type = UI_FILE_TYPES[path.slice(path.lastIndexOf('.') + 1)];
  if (!path.startsWith('/ui/') || !type) return undefined;
  return {
    tags: ['UI'],
    summary: `Web UI file ${path.slice(4)}`,
    description: 'Needs ui (404 while it is off).',
    secured: false,
    responses: { '200': ok('The file.', { [type]: { schema: str() } }), ...errors('404') },
  };
}

function operationObject(path: string, method: string, op: Operation): Obj {
  const { secured, ...rest } = op;
  return {
    operationId:
      `${method}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}` ||
      method,
    ...rest,
    ...(secured === false ? { security: [] } : {}),
    ...(secured === 'optional' ? { security: [{}, { bearerAuth: [] }] } : {}),
  };
}

/** A route's schema under components.schemas, by its title: the same object the route checks with. */
function component(schema: TSchema, into: Obj): Obj {
  const name = schema.title;
  if (!name) throw new Error('openapi: a route schema has no title');
  // Plain JSON: TypeBox marks its schemas with symbols, which a document does not carry.
  into[name] = JSON.parse(JSON.stringify(schema));
  return ref(name);
}

/**
 * Every response schema, published whether a route answers it or another schema refers to it
 * (Timing, SpeakerTurn), so that each `$ref` resolves.
 */
const RESPONSE_SCHEMAS: TSchema[] = [commonResponses, modelResponses, audioResponses, managementResponses]
  .flatMap((module) => Object.values(module) as TSchema[])
  .filter((schema) => typeof schema.title === 'string');

/**
 * The operation's responses with the 200's JSON content taken from the route's `response`, so the
 * document publishes the schema the route declares; a JSON answer written here by hand throws.
 */
function responsesOf(route: Route, op: Operation, into: Obj): Obj {
  const answer = op.responses['200'] as Obj | undefined;
  const content = (answer?.['content'] ?? {}) as Obj;
  const where = `${route.method} ${route.path}`;
  if (content['application/json'])
    throw new Error(
      `openapi: ${where}: declare its JSON answer as the route's response, not in src/http/openapi.ts`,
    );
  if (!route.response) {
    if (answer && !Object.keys(content).length) throw new Error(`openapi: ${where}: its 200 has no content`);
    return op.responses;
  }
  if (!answer) throw new Error(`openapi: ${where} declares a response but its description has no 200`);
  const declared = json(component(route.response, into));
  return { ...op.responses, '200': { ...answer, content: { ...declared, ...content } } };
}

/** The request body a route declares: its multipart form fields and its JSON body. */
function requestBodyOf(route: Route, into: Obj): Obj | undefined {
  if (!route.body && !route.form) return undefined;
  const content: Obj = {};
  if (route.form) {
    const uploads = Object.entries(route.form.properties as Record<string, Obj>).filter(
      ([, field]) => field['contentMediaType'] ?? (field['items'] as Obj | undefined)?.['contentMediaType'],
    );
    content['multipart/form-data'] = {
      schema: component(route.form, into),
      encoding: Object.fromEntries(
        uploads.map(([name]) => [name, { contentType: 'application/octet-stream' }]),
      ),
    };
  }
  if (route.body) content['application/json'] = { schema: component(route.body, into) };
  return { required: true, content };
}

/** The query parameters a route declares (src/http/schemas/query.ts), one per property. */
function queryParametersOf(route: Route): Obj[] {
  if (!route.query) return [];
  const required = new Set((route.query['required'] as string[] | undefined) ?? []);
  return Object.entries(route.query['properties'] as Record<string, TSchema>).map(([name, schema]) => {
    // Plain JSON, as component() does; the description moves up to the parameter.
    const { description, ...plain } = JSON.parse(JSON.stringify(schema)) as Obj;
    return { name, in: 'query', required: required.has(name), schema: plain, description };
  });
}

/** Builds the document for `routes` (a server's route table); throws when one has no description. */
export function buildOpenApi(routes: readonly Route[]): Obj {
  const paths: Record<string, Obj> = {};
  const components: Obj = {};
  for (const schema of RESPONSE_SCHEMAS) component(schema, components);
  for (const route of routes) {
    const method = route.method.toLowerCase();
    const op =
      OPERATIONS[route.path]?.[method] ?? (method === 'get' ? uiFileOperation(route.path) : undefined);
    if (!op)
      throw new Error(`openapi: ${route.method} ${route.path} has no description in src/http/openapi.ts`);
    const requestBody = requestBodyOf(route, components) ?? op.requestBody;
    const parameters = [...(op.parameters ?? []), ...queryParametersOf(route)];
    paths[route.path] ??= {};
    // A route that checks its query can refuse it, whatever else it refuses.
    const documented = responsesOf(route, op, components);
    const responses = route.query ? { ...errors('400'), ...documented } : documented;
    (paths[route.path] as Obj)[method] = operationObject(route.path, method, {
      ...op,
      responses,
      ...(parameters.length ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
    });
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'voxd',
      version: VERSION,
      summary:
        'Voice-model server: TTS, ASR, diarization and VAD over an audio.cpp- and OpenAI-compatible HTTP API.',
      description: [
        'Every error is the Error object. A path not listed answers 404 (components.responses.NotFound);',
        'a listed path with another method answers 405 (components.responses.MethodNotAllowed).',
        'OPTIONS on any path answers a 204 CORS preflight when cors_origins is "*" or ui is on.',
        'With API keys configured, a request without a valid key answers 401 (components.responses.Unauthorized)',
        'on every path but the open ones, listed or not, so nothing is learnt without a key;',
        '/health, /ready and /metrics are open while listed in open_endpoints (the default).',
        'A streamed response (text/event-stream, or raw audio) reports a failure after its headers inside the stream.',
        'docs/api.md has every field, limit and example.',
      ].join(' '),
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/' }],
    tags: [
      { name: 'Models', description: 'What the server holds.' },
      { name: 'Audio', description: 'Speech, transcription and translation (OpenAI-style routes).' },
      { name: 'Tasks', description: 'Any task on any model (audio.cpp routes).' },
      { name: 'Management', description: 'Register, reconfigure and unload models.' },
      { name: 'Installer', description: 'The models root and model downloads (ui_management).' },
      { name: 'UI', description: 'The web UI (ui).' },
      { name: 'Operations', description: 'Health, readiness, metrics and this document.' },
    ],
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      schemas: components,
      responses,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API key, `Authorization: Bearer <key>`, checked only when the server is configured with API keys (401 without a valid one, 403 when its scopes do not cover the route).',
        },
      },
    },
  };
}
