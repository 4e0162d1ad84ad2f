/** Deepgram's text-in streaming speech socket, `GET /v1/speak` (docs/deepgram.md). */
import { speakUpgradeRoute } from '../../routes/deepgram.js';
import { DEEPGRAM_SPEAK_PATH } from '../../transport/auth.js';
import type { DeepgramSocket } from '../upgrade.js';
import { speakPlan } from './plan.js';
import { SpeakSession } from './session.js';

export const speakSocket: DeepgramSocket = {
  path: DEEPGRAM_SPEAK_PATH,
  protocol: 'deepgram_speak',
  route: speakUpgradeRoute,
  async prepare(url, deps) {
    const plan = await speakPlan(url.searchParams, deps, false);
    return (ws) => new SpeakSession(ws, deps, plan);
  },
};
