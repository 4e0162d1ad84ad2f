/** Deepgram's text-in streaming speech socket, `GET /v1/speak` (docs/deepgram.md). */
import { VoxdError } from '../../../errors.js';
import { speakUpgradeRoute } from '../../routes/deepgram.js';
import { DEEPGRAM_SPEAK_PATH } from '../../transport/auth.js';
import type { DeepgramSocket } from '../upgrade.js';

export const speakSocket: DeepgramSocket = {
  path: DEEPGRAM_SPEAK_PATH,
  protocol: 'deepgram_speak',
  route: speakUpgradeRoute,
  async prepare() {
    throw new VoxdError('E_NOT_FOUND', 'not yet');
  },
};
