/**
 * Voice resolution for speech requests, in the reference's order: a configured preset, then
 * `<voice_dir>/<name>.wav` with its transcript from `voice_dir/prompt_text`, then a voice alias
 * (an OpenAI name such as `alloy`, src/engines/voice-aliases.ts), then the model's own voice id. With neither `voice` nor `voice_ref`, the model's default preset applies. An explicit
 * `voice_ref` always supplies the audio and an explicit `reference_text` always wins.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type AudioLimits, decodeBase64Audio, readAudioPath } from '../../audio/input.js';
import type { Audio } from '../../audio/types.js';
import type { ModelConfig } from '../../config/types.js';
import { invalidField, showValue } from '../../errors.js';
import { DEFAULT_PRESET, type ResolvedPreset } from '../../runtime/voice-presets.js';
import { openRegularFile } from '../../util/regular-file.js';
import type { FileAccess } from '../../util/server-files.js';
import { type Fields, optionalString } from '../fields.js';

export interface VoiceChoice {
  voiceId?: string;
  voiceRef?: Audio;
  referenceText?: string;
}

const MAX_VOICE_REF_BYTES = 5 * 1024 * 1024;
const PLAIN_NAME = /^[A-Za-z0-9_-]+$/;

/** Whether a file in voice_dir is a voice that `voice: <name>` can select. */
export function isLibraryVoiceFile(filename: string): boolean {
  return filename.endsWith('.wav') && PLAIN_NAME.test(filename.slice(0, -4));
}

async function explicitVoiceRef(
  raw: unknown,
  access: FileAccess,
  limits: AudioLimits,
): Promise<Audio | undefined> {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'string') return readAudioPath(raw, 'voice_ref', access, limits);
  if (typeof raw === 'object' && !Array.isArray(raw)) {
    const ref = raw as Record<string, unknown>;
    if (ref['type'] === 'path' && typeof ref['path'] === 'string')
      return readAudioPath(ref['path'], 'voice_ref.path', access, limits);
    if (ref['type'] === 'base64' && typeof ref['data'] === 'string') {
      return decodeBase64Audio(ref['data'], 'voice_ref.data', { ...limits, maxBytes: MAX_VOICE_REF_BYTES });
    }
  }
  throw invalidField(
    'voice_ref',
    `voice_ref: ${showValue(raw)} is invalid; expected a path, {"type":"path","path":...} or {"type":"base64","data":...}`,
  );
}

async function libraryVoice(
  voiceDir: string,
  name: string,
  limits: AudioLimits,
): Promise<{ audio: Audio; transcript?: string } | undefined> {
  const file = join(voiceDir, `${name}.wav`);
  // Only a file is a voice: a folder named `<name>.wav` leaves the name a model-native voice id.
  const isFile = await stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!isFile) return undefined;
  // The operator's library, named by a plain name: not confined to the file roots.
  const audio = await readAudioPath(file, 'voice', undefined, limits);
  let transcript: string | undefined;
  for (const line of (await readTranscripts(voiceDir)).split(/\r?\n/)) {
    const bar = line.indexOf('|');
    if (bar > 0 && line.slice(0, bar) === name) transcript = line.slice(bar + 1);
  }
  return { audio, transcript };
}

/** A transcript list is a few KB; anything larger, or not a regular file, is not one. */
const MAX_TRANSCRIPTS_BYTES = 1 << 20;

/** voice_dir/prompt_text, or '' when there is none: the clone then runs without reference text. */
async function readTranscripts(voiceDir: string): Promise<string> {
  const file = await openRegularFile(join(voiceDir, 'prompt_text'));
  if (!file) return '';
  try {
    return file.size > MAX_TRANSCRIPTS_BYTES ? '' : await file.handle.readFile('utf8');
  } catch {
    return '';
  } finally {
    await file.handle.close();
  }
}

function fromPreset(preset: ResolvedPreset, ref: Audio | undefined, text: string | undefined): VoiceChoice {
  return {
    voiceId: preset.voiceId,
    voiceRef: ref ?? preset.voiceRef,
    referenceText: text ?? preset.referenceText,
  };
}

/**
 * `voice` as a name, or as `{"id": name}`, the form newer OpenAI SDKs send (they also allow
 * custom voice objects; only the id matters here).
 */
export function voiceName(body: Fields): string | undefined {
  const raw = body['voice'];
  if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    const id = (raw as Record<string, unknown>)['id'];
    if (typeof id === 'string') return id;
    throw invalidField('voice', `voice: ${showValue(raw)} is invalid; expected a voice name or {"id": name}`);
  }
  return optionalString(body, 'voice');
}

/** An alias's engine voice id; `undefined` leaves the model's default voice. Other names pass through. */
export function unalias(voice: string, aliases: ReadonlyMap<string, string | undefined>): string | undefined {
  return aliases.has(voice) ? aliases.get(voice) : voice;
}

export async function resolveVoice(
  body: Fields,
  model: ModelConfig,
  presets: ReadonlyMap<string, ResolvedPreset>,
  server: { voice_dir?: string; access: FileAccess; limits: AudioLimits },
  aliases: ReadonlyMap<string, string | undefined> = new Map(),
): Promise<VoiceChoice> {
  const voice = voiceName(body);
  const referenceText = optionalString(body, 'reference_text');
  const voiceRef = await explicitVoiceRef(body['voice_ref'], server.access, server.limits);

  if (voice !== undefined && voice !== '') {
    const preset = presets.get(voice);
    if (preset) return fromPreset(preset, voiceRef, referenceText);
    if (!voiceRef && server.voice_dir && PLAIN_NAME.test(voice)) {
      const library = await libraryVoice(server.voice_dir, voice, server.limits);
      if (library) return { voiceRef: library.audio, referenceText: referenceText ?? library.transcript };
    }
    return { voiceId: unalias(voice, aliases), voiceRef, referenceText };
  }
  if (!voiceRef) {
    const fallback =
      typeof model.default_voice_preset === 'string'
        ? presets.get(model.default_voice_preset)
        : presets.get(DEFAULT_PRESET);
    if (fallback) return fromPreset(fallback, undefined, referenceText);
  }
  return { voiceRef, referenceText };
}
