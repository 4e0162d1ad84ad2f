/**
 * The audio.cpp UI routes about the models root: where installed packages live
 * (`/v1/ui/models-root`), and the folder picker the UI chooses one with
 * (`/v1/ui/browse-directories`, `/v1/ui/path-status`). All need `ui_management` (403 otherwise,
 * each with audio.cpp's message). Unlike audio.cpp, browsing and path inspection are confined to
 * the folders a models root may be chosen in: voxd's data folder (the default root's parent), the
 * current root and the file roots; any other path is one 403 that says nothing about it.
 *
 * A relative `path` resolves against one folder on all three routes: the config file's folder
 * (`base_dir`, the cwd without a config file), as relative paths in the config do.
 */
import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Static } from '@sinclair/typebox';
import { VoxdError } from '../../errors.js';
import { managedRoute } from '../request/schema.js';
import { PathRequest } from '../schemas/management-request.js';
import { Directories, ModelsRoot, PathStatus } from '../schemas/management-responses.js';
import { type Route, type RouteContext, requireManagement } from '../transport/route.js';

type PathBody = Static<typeof PathRequest>;

/** The `path` field: absent, null or empty means the default. */
const pathField = (body: PathBody): string => body.path ?? '';

async function getRoot(ctx: RouteContext) {
  requireManagement(ctx, 'UI model management is disabled');
  return { json: ctx.runtime.modelsRoot.status() satisfies Static<typeof ModelsRoot> };
}

async function setRoot(ctx: RouteContext, body: PathBody) {
  const root: Static<typeof ModelsRoot> = await ctx.runtime.modelsRoot.change(
    pathField(body),
    ctx.config.base_dir,
  );
  return { json: root };
}

/** The folders the picker may show, with their symlinks resolved (those that exist). */
async function browseRoots(ctx: RouteContext): Promise<string[]> {
  const { modelsRoot } = ctx.runtime;
  const wanted = [path.dirname(modelsRoot.defaultRoot), modelsRoot.root, ...ctx.config.file_roots];
  const roots: string[] = [];
  for (const dir of wanted) {
    const real = await realpath(dir).catch(() => undefined);
    if (real && !roots.includes(real)) roots.push(real);
  }
  return roots;
}

function isInside(root: string, target: string): boolean {
  return target === root || target.startsWith(root.endsWith(path.sep) ? root : `${root}${path.sep}`);
}

/**
 * Where `target` really is: the real path of its nearest existing ancestor with the rest appended
 * (so a folder about to be made can be inspected), or a 403 when that lies outside every root.
 */
async function confine(target: string, roots: readonly string[]): Promise<string> {
  let existing = target;
  const rest: string[] = [];
  for (;;) {
    const real = await realpath(existing).catch(() => undefined);
    if (real !== undefined) {
      const resolved = path.join(real, ...rest.reverse());
      if (roots.some((root) => isInside(root, resolved))) return resolved;
      break;
    }
    const parent = path.dirname(existing);
    if (parent === existing) break;
    rest.push(path.basename(existing));
    existing = parent;
  }
  throw new VoxdError(
    'E_FORBIDDEN',
    `path: the folder picker shows only folders under ${roots.join(', ') || '(no folder)'}`,
    { param: 'path' },
  );
}

async function browse(ctx: RouteContext, body: PathBody) {
  const requested = pathField(body);
  const roots = await browseRoots(ctx);
  // No path: the current models root; a relative one: against base_dir, like the other routes.
  const target =
    requested === '' ? ctx.runtime.modelsRoot.root : path.resolve(ctx.config.base_dir, requested);
  const current = await confine(target, roots);
  let entries: Dirent[];
  try {
    entries = await readdir(current, { withFileTypes: true });
  } catch (err) {
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `path: folder is not accessible: ${current} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      { param: 'path' },
    );
  }
  const directories = entries
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
    .map((entry) => ({ name: entry.name, path: path.join(current, entry.name) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // No way up past the roots: the picker's "parent" is empty where it would lead outside them.
  const up = path.dirname(current);
  const parent = up !== current && roots.some((root) => isInside(root, up)) ? up : '';
  return { json: { current, parent, roots, directories } satisfies Static<typeof Directories> };
}

async function pathStatus(ctx: RouteContext, body: PathBody) {
  const requested = pathField(body);
  if (requested === '') throw new VoxdError('E_INVALID_REQUEST', "'path' is required", { param: 'path' });
  const target = await confine(path.resolve(ctx.config.base_dir, requested), await browseRoots(ctx));
  const info = await stat(target).catch(() => undefined);
  return {
    json: {
      path: target,
      exists: info !== undefined,
      directory: info?.isDirectory() ?? false,
      file: info?.isFile() ?? false,
    } satisfies Static<typeof PathStatus>,
  };
}

export const modelsRootRoutes: Route[] = [
  { method: 'GET', path: '/v1/ui/models-root', scope: 'admin', response: ModelsRoot, handler: getRoot },
  managedRoute('/v1/ui/models-root', 'UI model management is disabled', PathRequest, ModelsRoot, setRoot),
  managedRoute(
    '/v1/ui/browse-directories',
    'UI directory browsing is disabled',
    PathRequest,
    Directories,
    browse,
  ),
  managedRoute('/v1/ui/path-status', 'UI path inspection is disabled', PathRequest, PathStatus, pathStatus),
];
