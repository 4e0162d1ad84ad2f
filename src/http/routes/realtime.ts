/**
 * GET /v1/realtime is a WebSocket: its upgrade is answered by src/http/realtime/upgrade.ts before
 * any route runs. This route answers the same path asked without the upgrade, so that it is a 426
 * naming what to do rather than a 404, and so that the document describes it.
 */
import { VoxdError } from '../../errors.js';
import { queryRoute } from '../request/schema.js';
import { RealtimeQuery } from '../schemas/query.js';
import { REALTIME_PATH } from '../transport/auth.js';
import type { Route } from '../transport/route.js';

export const realtimeRoute: Route = queryRoute({
  method: 'GET',
  path: REALTIME_PATH,
  scope: 'inference',
  query: RealtimeQuery,
  handler: async () => {
    throw new VoxdError(
      'E_UPGRADE_REQUIRED',
      `${REALTIME_PATH} is a WebSocket endpoint: connect with Upgrade: websocket (docs/realtime.md)`,
    );
  },
});
