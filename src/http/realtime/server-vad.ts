/** What a session's server VAD is set to: the detector's settings and OpenAI's name for them. */
import type { DetectorSettings } from '../../api/vad/speech-detector.js';

export interface ServerVad extends DetectorSettings {
  type: 'server_vad' | 'semantic_vad';
  eagerness?: 'low' | 'medium' | 'high' | 'auto';
}
