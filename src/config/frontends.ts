/**
 * audio.cpp's optional frontends (`frontend_listener`, `frontend_options`; reference §6 "Optional
 * frontends"), as voxd serves them on its own port: `https` is voxd's TLS (`cert_file`/`key_file`
 * are `tls_cert_file`/`tls_key_file` under the frontend's names) and `websocket` is the WebSocket
 * bridge (src/http/bridge/). The pre/post modules (`audio_decode`, `mp3_encode`) are no listeners:
 * voxd decodes and encodes through ffmpeg without them.
 */
import { ConfigError, expectString, keyPath } from './errors.js';
import { FRONTEND_LISTENERS, type FrontendListener } from './frontend-listeners.js';
import type { ConfigNotice, OptionMap } from './types.js';

/** The options each listener reads; any other is ignored with a notice, as audio.cpp ignores it. */
const LISTENER_OPTIONS: Record<FrontendListener, readonly string[]> = {
  '': [],
  https: ['cert_file', 'key_file'],
  websocket: [],
};

export function parseFrontendListener(value: unknown, key: string): FrontendListener {
  const name = expectString(value, key);
  if (name === '' || (FRONTEND_LISTENERS as readonly string[]).includes(name))
    return name as FrontendListener;
  throw ConfigError.rejected(
    key,
    name,
    `voxd serves the frontend listeners ${FRONTEND_LISTENERS.map((l) => `"${l}"`).join(' and ')} (or "" for none)`,
  );
}

/** Where a listener's options came from: server.json's map, or the `--frontend-option` flags. */
export interface FrontendOptionSources {
  file: OptionMap;
  cli: OptionMap;
}

/**
 * The options in force (the flags' over the file's). Options without a listener are an error on
 * the command line (audio.cpp refuses them there too) and ignored with a notice in server.json;
 * an option the listener does not read is ignored with a notice naming the ones it does.
 */
export function checkFrontendOptions(
  listener: FrontendListener,
  { file, cli }: FrontendOptionSources,
  notices: ConfigNotice[],
): OptionMap {
  if (listener === '' && Object.keys(cli).length > 0)
    throw ConfigError.rejected('--frontend-option', cli, 'requires --frontend-listener (https or websocket)');
  const options = { ...file, ...cli };
  if (listener === '') {
    if (Object.keys(file).length > 0)
      notices.push({
        key: 'frontend_options',
        message: 'frontend_options: no frontend_listener is set; ignored',
      });
    return options;
  }
  const known = LISTENER_OPTIONS[listener];
  for (const name of Object.keys(options)) {
    if (known.includes(name)) continue;
    notices.push({
      key: keyPath('frontend_options', name),
      message: `${keyPath('frontend_options', name)}: not an option of the ${listener} listener (${
        known.length === 0 ? 'it takes none' : `it takes ${known.join(', ')}`
      }); ignored`,
    });
  }
  return options;
}
