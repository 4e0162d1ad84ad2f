/** GET /openapi.json: the OpenAPI 3.1 description of the routes this server registered. */
import { buildOpenApi } from '../openapi.js';
import { OpenApiDocument } from '../schemas/model-responses.js';
import type { Route } from '../transport/route.js';

/**
 * The route, given the server's route list as a function: the list includes this route, so it is
 * read at the first request rather than when the list is built. The JSON is made once.
 */
export function openapiRoutes(routes: () => readonly Route[]): Route[] {
  let body: Buffer | undefined;
  return [
    {
      method: 'GET',
      path: '/openapi.json',
      // The API's description is public (docs/api.md says as much): open with or without keys.
      scope: 'open',
      response: OpenApiDocument,
      handler: async () => {
        body ??= Buffer.from(JSON.stringify(buildOpenApi(routes())), 'utf8');
        // no-cache, not no-store: a client may keep it but must revalidate, so an upgrade shows at once.
        return {
          body,
          contentType: 'application/json',
          headers: { 'Cache-Control': 'no-cache' },
        };
      },
    },
  ];
}
