/** Deepgram's live transcription socket, `GET /v1/listen` (docs/deepgram.md, session.ts). */
import { requireVadModel } from '../../../api/vad/vad-model.js';
import { VoxdError } from '../../../errors.js';
import { listenUpgradeRoute } from '../../routes/deepgram.js';
import { DEEPGRAM_LISTEN_PATH } from '../../transport/auth.js';
import { deepgramModel } from '../model-name.js';
import type { DeepgramSocket } from '../upgrade.js';
import { listenOptions } from './options.js';
import { ListenSession } from './session.js';

export const listenSocket: DeepgramSocket = {
  path: DEEPGRAM_LISTEN_PATH,
  protocol: 'deepgram_listen',
  route: listenUpgradeRoute,
  async prepare(url, deps) {
    const options = listenOptions(url.searchParams);
    const { entry } = await deepgramModel(deps.runtime, deps.config, options.model, 'listen');
    try {
      // Utterances are found by the server's VAD: a server without one cannot run this socket.
      requireVadModel(deps.runtime, deps.config, 'endpointing');
    } catch (err) {
      throw new VoxdError(
        'E_MODEL_NOT_FOUND',
        `/v1/listen finds utterances with the server's VAD model: ${(err as Error).message}`,
      );
    }
    return (ws) => new ListenSession(ws, deps, options, entry);
  },
};
