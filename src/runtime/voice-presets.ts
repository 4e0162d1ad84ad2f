/** Voice presets with their reference audio read once, at registration, as the reference requires. */
import type { Audio } from '../audio/types.js';
import { decodeWav } from '../audio/wav-decode.js';
import type { ModelConfig, VoicePreset } from '../config/types.js';
import { invalidRequest } from '../errors.js';
import { openRegularFile } from '../util/regular-file.js';

/** A reference voice is seconds of speech; a preset file larger than this is not one. */
const MAX_PRESET_BYTES = 64 * 1024 * 1024;

async function readPresetFile(path: string): Promise<Buffer> {
  const file = await openRegularFile(path);
  if (!file) throw new Error('not a readable regular file');
  try {
    if (file.size > MAX_PRESET_BYTES) throw new Error(`larger than ${MAX_PRESET_BYTES} bytes`);
    return await file.handle.readFile();
  } finally {
    await file.handle.close();
  }
}

export interface ResolvedPreset {
  voiceId?: string;
  voiceRef?: Audio;
  referenceText?: string;
}

export const DEFAULT_PRESET = '\u0000default';

async function resolvePreset(name: string, preset: VoicePreset, modelId: string): Promise<ResolvedPreset> {
  let voiceRef: Audio | undefined;
  if (preset.voice_ref !== undefined) {
    try {
      voiceRef = decodeWav(await readPresetFile(preset.voice_ref));
    } catch (err) {
      throw invalidRequest(
        `model '${modelId}': voice preset '${name}' voice_ref ${preset.voice_ref}: ${err instanceof Error ? err.message : String(err)}`,
        err,
      );
    }
  }
  return { voiceId: preset.voice_id, voiceRef, referenceText: preset.reference_text };
}

/** All presets of a model; an inline default preset is stored under DEFAULT_PRESET. */
export async function resolvePresets(config: ModelConfig): Promise<Map<string, ResolvedPreset>> {
  const presets = new Map<string, ResolvedPreset>();
  for (const [name, preset] of Object.entries(config.voice_presets)) {
    presets.set(name, await resolvePreset(name, preset, config.id));
  }
  if (typeof config.default_voice_preset === 'object') {
    presets.set(
      DEFAULT_PRESET,
      await resolvePreset('default_voice_preset', config.default_voice_preset, config.id),
    );
  }
  return presets;
}
