/**
 * Deepgram's paths over plain HTTP: `GET /v1/listen` and `GET /v1/speak` are WebSockets, whose
 * upgrades src/http/deepgram/upgrade.ts answers before any route runs; these routes answer the same
 * paths asked without the upgrade (a 426 naming what to do) and describe their queries in the
 * document. The prerecorded forms, `POST /v1/listen` and `POST /v1/speak`, are routes of their own
 * (deepgram-listen.ts, deepgram-speak.ts).
 */
import { type TObject, Type } from '@sinclair/typebox';
import { VoxdError } from '../../errors.js';
import { queryRoute } from '../request/schema.js';
import { DEEPGRAM_LISTEN_PATH, DEEPGRAM_SPEAK_PATH } from '../transport/auth.js';
import type { Route } from '../transport/route.js';

function upgradeRoute(path: string, query: TObject): Route {
  return queryRoute({
    method: 'GET',
    path,
    scope: 'inference',
    query,
    handler: async () => {
      throw new VoxdError(
        'E_UPGRADE_REQUIRED',
        `${path} is a WebSocket endpoint (Deepgram's streaming API): connect with Upgrade: websocket, or POST for the prerecorded form (docs/deepgram.md)`,
      );
    },
  });
}

// The sockets' queries are checked by their own modules at the upgrade; the document names the model.
const modelOnly = Type.Object(
  {
    model: Type.Optional(
      Type.String({
        description:
          "A voxd model id or alias, or a Deepgram model name (mapped by the server's deepgram_* settings).",
      }),
    ),
  },
  { additionalProperties: true },
);

export const listenUpgradeRoute: Route = upgradeRoute(DEEPGRAM_LISTEN_PATH, modelOnly);
export const speakUpgradeRoute: Route = upgradeRoute(DEEPGRAM_SPEAK_PATH, modelOnly);
