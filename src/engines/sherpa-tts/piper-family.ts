/**
 * `piper_tts`: Piper (VITS) voices as sherpa-onnx distributes them. `path` is the model folder:
 * one `*.onnx` file, `tokens.txt`, and `espeak-ng-data/` (or, without it, Debian's espeak-ng-data,
 * which voxd's set-up installs). Each session is a worker thread with its own OfflineTts.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { invalidRequest, VoxdError } from '../../errors.js';
import { speakableText, speedOption } from '../engine-options.js';
import { findOnnxAndTokens } from '../sherpa-model-folder.js';
import { ThreadEngineSession } from '../thread-session.js';
import type {
  EngineFamily,
  EngineRequest,
  EngineResult,
  LoadedModel,
  LoadSpec,
  ParamRow,
  RunContext,
} from '../types.js';
import type { VitsFiles, VitsJob, VitsReply } from './vits-worker.js';

const WORKER_URL = new URL('./vits-worker.js', import.meta.url);
const SYSTEM_ESPEAK_DATA = '/usr/lib/x86_64-linux-gnu/espeak-ng-data';
const CAPACITY = 4;

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** The files of a Piper voice folder, with espeak-ng data from the folder or the system. */
export async function findPiperFiles(modelId: string, dir: string): Promise<VitsFiles> {
  const { model, tokens } = await findOnnxAndTokens(modelId, 'piper_tts', dir);
  const local = join(dir, 'espeak-ng-data');
  const dataDir = (await exists(local)) ? local : SYSTEM_ESPEAK_DATA;
  if (!(await exists(join(dataDir, 'phontab')))) {
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `model '${modelId}': missing espeak-ng data: neither ${local} nor ${SYSTEM_ESPEAK_DATA} (Debian package espeak-ng-data) exists`,
    );
  }
  return { model, tokens, dataDir };
}

class PiperSession extends ThreadEngineSession<Omit<VitsJob, 'id'>, VitsReply> {
  constructor(id: string, files: VitsFiles) {
    super(id, WORKER_URL, files);
  }

  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    const text = speakableText(request);
    const voice = request.voiceId ?? '0';
    if (!/^\d{1,4}$/.test(voice))
      throw invalidRequest(
        `voice: "${voice}" is invalid; Piper voices are chosen by speaker number (0, 1, ...)`,
      );
    const speed = speedOption(request.options);
    const reply = await this.thread.call({ text, sid: Number(voice), speed }, signal);
    if (!reply.ok) {
      if (reply.message.startsWith('voice:')) throw invalidRequest(reply.message);
      throw new Error(reply.message);
    }
    return { audio: { samples: reply.samples, sampleRate: reply.sampleRate, channels: 1 } };
  }
}

export class PiperFamily implements EngineFamily {
  readonly name = 'piper_tts';
  readonly tasks = ['tts'] as const;
  readonly backends = ['cpu'] as const;
  readonly maxCapacity = CAPACITY;
  readonly params: readonly ParamRow[] = [
    { name: 'speed', type: 'float', description: 'speaking rate, 0.25..4', default: '1' },
    { name: 'voice', type: 'string', description: 'speaker number of a multi-speaker voice', default: '0' },
  ];
  #sessions = 0;

  async load(spec: LoadSpec): Promise<LoadedModel> {
    const files = await findPiperFiles(spec.modelId, spec.path);
    return {
      capacity: CAPACITY,
      audioInput: { sampleRate: 16000, channels: 1 },
      createSession: async () => new PiperSession(`${spec.modelId}#${++this.#sessions}`, files),
      dispose: async () => {},
    };
  }
}
