/** Deepgram's live transcription socket, `GET /v1/listen` (docs/deepgram.md). */
import { VoxdError } from '../../../errors.js';
import { listenUpgradeRoute } from '../../routes/deepgram.js';
import { DEEPGRAM_LISTEN_PATH } from '../../transport/auth.js';
import type { DeepgramSocket } from '../upgrade.js';

export const listenSocket: DeepgramSocket = {
  path: DEEPGRAM_LISTEN_PATH,
  protocol: 'deepgram_listen',
  route: listenUpgradeRoute,
  async prepare() {
    throw new VoxdError('E_NOT_FOUND', 'not yet');
  },
};
