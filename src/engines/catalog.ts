/** The engine families this build of voxd knows, by the `family` name used in configs. */
import { ClassicDiarFamily } from './classic-diar/classic-diar-family.js';
import { FestivalFamily } from './festival/festival-family.js';
import { FixtureFamily } from './fixture/fixture-family.js';
import { PocketsphinxFamily } from './pocketsphinx/pocketsphinx-family.js';
import { createCanaryFamily } from './sherpa-asr/canary.js';
import { createNemoCtcFamily } from './sherpa-asr/nemo-ctc.js';
import { createParakeetTdtFamily } from './sherpa-asr/parakeet-tdt.js';
import { createSenseVoiceFamily } from './sherpa-asr/sense-voice.js';
import { createWhisperFamily } from './sherpa-asr/whisper.js';
import { PyannoteFamily } from './sherpa-diar/pyannote-family.js';
import { createKokoroFamily } from './sherpa-tts/kokoro-family.js';
import { createMatchaFamily } from './sherpa-tts/matcha-family.js';
import { createPiperFamily } from './sherpa-tts/piper-family.js';
import { SileroVadFamily } from './silero-vad/silero-vad-family.js';
import type { EngineFamily } from './types.js';
import { createEspeakFamily, createFliteFamily } from './wasm-tts/wasm-tts-family.js';

export type EngineCatalog = ReadonlyMap<string, EngineFamily>;

/** A fresh catalogue: families keep per-process state (the fixture's record), so each server gets its own. */
export function createEngineCatalog(): EngineCatalog {
  const families: EngineFamily[] = [
    new FixtureFamily(),
    createFliteFamily(),
    createEspeakFamily(),
    new FestivalFamily(),
    new SileroVadFamily(),
    new ClassicDiarFamily(),
    new PocketsphinxFamily(),
    createPiperFamily(),
    createKokoroFamily(),
    createMatchaFamily(),
    createNemoCtcFamily(),
    createWhisperFamily(),
    createCanaryFamily(),
    createSenseVoiceFamily(),
    createParakeetTdtFamily(),
    new PyannoteFamily(),
  ];
  return new Map(families.map((family) => [family.name, family]));
}

/**
 * The one line the parallel runtime prints at startup: which families have been validated with
 * more than one slot. Everything else runs one slot per model.
 */
export function parallelScope(catalog: EngineCatalog): string {
  const multi = [...catalog.values()].filter((f) => f.maxCapacity > 1);
  const list = multi.length ? multi.map((f) => `${f.name} (up to ${f.maxCapacity})`).join(', ') : 'none';
  return (
    `parallel runtime (--parallel-jobs, experimental): validated scope: families admitting more than one slot: ${list}; ` +
    'every other family runs 1 slot per model; lifecycle and backend coverage is incomplete beyond the controlled fixture engine'
  );
}
