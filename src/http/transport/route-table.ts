/**
 * A server's routes indexed by path, built once when the server is made: a request looks its path
 * up rather than scanning the list. The list itself is the composition's (src/http/index.ts).
 */
import { notFound, VoxdError } from '../../errors.js';
import type { Route } from './route.js';

/** A route path whose last segment is a parameter (`/v1/models/{id}`), as OpenAPI writes it. */
const PARAMETER = /^(.*\/)\{[a-z_]+\}$/;

export class RouteTable {
  /** The routes of each exact path. */
  readonly #byPath = new Map<string, Route[]>();
  /** Routes ending in a parameter, by the prefix before it; exact paths win over them. */
  readonly #byPrefix = new Map<string, Route[]>();

  constructor(readonly routes: readonly Route[]) {
    for (const route of routes) {
      const prefix = PARAMETER.exec(route.path)?.[1];
      const index = prefix === undefined ? this.#byPath : this.#byPrefix;
      const key = prefix ?? route.path;
      const byPath = index.get(key);
      if (byPath) byPath.push(route);
      else index.set(key, [route]);
    }
  }

  /** The routes of `path`: its own, or those of the parameter route it fills (one plain segment). */
  routesOf(path: string): Route[] | undefined {
    const own = this.#byPath.get(path);
    if (own) return own;
    const slash = path.lastIndexOf('/');
    if (slash === path.length - 1) return undefined;
    return this.#byPrefix.get(path.slice(0, slash + 1));
  }
}

/** The route of `method` among `byPath` (the routes of `path`), else the 405 or 404. */
export function findRoute(
  method: string,
  path: string,
  byPath: readonly Route[] | undefined,
): Route | VoxdError {
  const route = byPath?.find((r) => r.method === method);
  if (route) return route;
  if (byPath) {
    const allowed = byPath.map((r) => r.method).join(', ');
    return new VoxdError(
      'E_METHOD_NOT_ALLOWED',
      `method ${method} is not allowed on ${path}; use ${allowed}`,
    );
  }
  return notFound(`unknown endpoint: ${path}`);
}
