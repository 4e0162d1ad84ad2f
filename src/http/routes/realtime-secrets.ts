/**
 * OpenAI's ephemeral-key flow for browser apps: `POST /v1/realtime/client_secrets` (GA) and
 * `POST /v1/realtime/transcription_sessions` (beta) mint a short-lived `ek_...` key that opens a
 * /v1/realtime session and nothing else (src/http/transport/auth.ts). The session config is checked
 * as the session's own update would check it, so a key is never minted for a session that would be
 * refused; the answer echoes it in the session events' shapes.
 */
import type { Static } from '@sinclair/typebox';
import { modelEntry, requireTask } from '../../api/model-lookup.js';
import { requireVadModel } from '../../api/vad/vad-model.js';
import { VoxdError } from '../../errors.js';
import type { InputFormat } from '../realtime/audio-format.js';
import type { TurnDetectionField } from '../realtime/client-events.js';
import { type ClientSecrets, DEFAULT_LIFE_S } from '../realtime/client-secrets.js';
import { type FieldPaths, formatOf, GA_PARAMS, SessionSettings } from '../realtime/events.js';
import { turnDetection } from '../realtime/turn-detection.js';
import { jsonRoute } from '../request/schema.js';
import {
  ClientSecret,
  ClientSecretRequest,
  TranscriptionSessionRequest,
  TranscriptionSessionSecret,
} from '../schemas/realtime-secrets.js';
import { REALTIME_PATH } from '../transport/auth.js';
import type { Route, RouteContext } from '../transport/route.js';

/** Where the beta body's fields sit: at its top level, not under `session`. */
const BETA_BODY_PARAMS: FieldPaths = {
  format: 'input_audio_format',
  model: 'input_audio_transcription.model',
  turnDetection: 'turn_detection',
};

interface StartingConfig {
  format: InputFormat | undefined;
  transcription:
    | { model?: string | null; language?: string | null; prompt?: string | null }
    | null
    | undefined;
  turnDetection: Partial<NonNullable<TurnDetectionField>> | null | undefined;
  include: string[] | null | undefined;
  params: FieldPaths;
}

/** The session the key starts, checked as a session update is (its model, the VAD model server VAD needs). */
async function startingSettings(ctx: RouteContext, config: StartingConfig): Promise<SessionSettings> {
  const { transcription, params } = config;
  const model = transcription?.model ?? undefined;
  if (model !== undefined) {
    try {
      const entry = await modelEntry(ctx.runtime, model);
      requireTask(entry.config, ['asr', 'diar'], REALTIME_PATH);
    } catch (err) {
      if (err instanceof VoxdError) throw new VoxdError(err.code, err.message, { param: params.model });
      throw err;
    }
  }
  const settings = new SessionSettings(model);
  if (config.turnDetection) {
    requireVadModel(ctx.runtime, ctx.config, params.turnDetection);
    // OpenAI's create requests may leave the type out: server VAD.
    settings.vad = turnDetection({
      ...config.turnDetection,
      type: config.turnDetection.type ?? 'server_vad',
    });
  }
  if (config.format) settings.format = config.format;
  settings.language = transcription?.language ?? undefined;
  settings.prompt = transcription?.prompt ?? undefined;
  if (config.include) settings.include = config.include;
  return settings;
}

/** Mints the key; its expiry in epoch seconds, as OpenAI gives it. */
function mint(secrets: ClientSecrets, settings: SessionSettings, lifeS: number | null | undefined) {
  const life = lifeS ?? DEFAULT_LIFE_S;
  const { model, format, language, prompt, include, vad, beta } = settings;
  const value = secrets.mint({ model, start: { format, language, prompt, include, vad, beta } }, life);
  return { value, expires_at: Math.floor(Date.now() / 1000) + life };
}

async function clientSecret(
  secrets: ClientSecrets,
  ctx: RouteContext,
  body: Static<typeof ClientSecretRequest>,
) {
  const session = body.session ?? {};
  const input = session.audio?.input;
  const settings = await startingSettings(ctx, {
    format: input?.format ? formatOf(input.format.type, input.format.rate) : undefined,
    transcription: input?.transcription,
    turnDetection: input?.turn_detection,
    include: session.include,
    params: GA_PARAMS,
  });
  const secret = mint(secrets, settings, body.expires_after?.seconds);
  return { json: { ...secret, session: { ...settings.ga(), expires_at: secret.expires_at } } };
}

async function transcriptionSession(
  secrets: ClientSecrets,
  ctx: RouteContext,
  body: Static<typeof TranscriptionSessionRequest>,
) {
  const encoding = body.input_audio_format ?? undefined;
  const settings = await startingSettings(ctx, {
    format: encoding ? { encoding, rate: encoding === 'pcm16' ? 24000 : 8000 } : undefined,
    transcription: body.input_audio_transcription,
    turnDetection: body.turn_detection,
    include: body.include,
    params: BETA_BODY_PARAMS,
  });
  settings.beta = true;
  const secret = mint(secrets, settings, body.client_secret?.expires_at?.seconds);
  return { json: { ...settings.betaShape(), client_secret: secret } };
}

/** The routes, minting into the server's own store of keys (a restart forgets them). */
export const realtimeSecretRoutes = (secrets: ClientSecrets): Route[] => [
  jsonRoute({
    method: 'POST',
    path: '/v1/realtime/client_secrets',
    scope: 'inference',
    body: ClientSecretRequest,
    response: ClientSecret,
    handler: (ctx, body) => clientSecret(secrets, ctx, body),
  }),
  jsonRoute({
    method: 'POST',
    path: '/v1/realtime/transcription_sessions',
    scope: 'inference',
    body: TranscriptionSessionRequest,
    response: TranscriptionSessionSecret,
    handler: (ctx, body) => transcriptionSession(secrets, ctx, body),
  }),
];
