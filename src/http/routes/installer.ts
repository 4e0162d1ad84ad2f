/**
 * audio.cpp's installer routes (`/v1/ui/models/*`) over the models root's Installer: install jobs
 * with progress, stop, partial clean-up, removal, status and package sizes, plus voxd's list of
 * what is installed. All need `ui_management` (403 otherwise, with audio.cpp's messages). A job
 * runs in the background; its object is what `install-status` reports.
 */

import type { Static } from '@sinclair/typebox';
import { requireString } from '../../api/fields.js';
import { invalidField } from '../../errors.js';
import { checkPackageId } from '../../models/catalog.js';
import type { UrlSource } from '../../models/installer.js';
import { managedRoute, queryRoute } from '../request/schema.js';
import { IdRequest, InstallRequest } from '../schemas/management-request.js';
import {
  CleanPartialResult,
  DeleteResult,
  InstalledPackages,
  InstallJob,
  InstallStatus,
  PackageSizes,
} from '../schemas/management-responses.js';
import { PackageQuery } from '../schemas/query.js';
import { type Route, type RouteContext, requireManagement } from '../transport/route.js';

type IdBody = Static<typeof IdRequest>;

const INSTALL_DISABLED = 'UI model installation is disabled';

/** `{id}` for a catalogue package, or `{url, id?, family?, sha256?}` for an archive anywhere. */
function installRequest(body: Static<typeof InstallRequest>): string | UrlSource {
  const url = body.url ?? undefined;
  if (url === undefined) return requireString(body, 'id');
  const { id, family, sha256 } = body;
  return { url, ...(id ? { id } : {}), ...(family ? { family } : {}), ...(sha256 ? { sha256 } : {}) };
}

async function install(ctx: RouteContext, body: Static<typeof InstallRequest>) {
  const job: Static<typeof InstallJob> = ctx.runtime.modelsRoot.installer.install(installRequest(body));
  return { json: job };
}

async function stop(ctx: RouteContext, body: IdBody) {
  return { json: ctx.runtime.modelsRoot.installer.stop(body.id) };
}

async function cleanPartial(ctx: RouteContext, body: IdBody) {
  return { json: await ctx.runtime.modelsRoot.installer.cleanPartial(body.id) };
}

/**
 * Removes an installed package. A registered model loaded from it is refused (its engine has the
 * files open or will read them): unload it first.
 */
async function remove(ctx: RouteContext, body: IdBody) {
  const id = checkPackageId(body.id);
  const { runtime } = ctx;
  const installer = runtime.modelsRoot.installer;
  const installed = (await installer.list()).find((p) => p.id === id);
  const user = installed && runtime.snapshots().find((m) => m.loaded && m.path === installed.path);
  if (user)
    throw invalidField(
      'id',
      `id: package ${id} is loaded as model '${user.id}'; unload it first (POST /v1/models/unload)`,
    );
  return { json: await installer.remove(id) };
}

async function installStatus(ctx: RouteContext, { id }: Static<typeof PackageQuery>) {
  const installer = ctx.runtime.modelsRoot.installer;
  const json: Static<typeof InstallStatus> = id ? installer.status(id) : { data: installer.status() };
  return { json };
}

/**
 * audio.cpp's package-sizes answer: it scans remote sizes in the background; voxd's sizes come
 * from its catalogue, so the scan is always complete. Installed packages are not compared with a
 * remote revision (version_state `unknown`).
 */
async function packageSizes(ctx: RouteContext) {
  requireManagement(ctx, INSTALL_DISABLED);
  const rows = await ctx.runtime.modelsRoot.installer.packageSizes();
  return {
    json: {
      state: 'complete',
      message: 'sizes from the catalogue',
      data: rows.map((row) => ({
        id: row.id,
        family: row.family,
        task: row.task,
        size_bytes: row.size_bytes,
        state: row.size_bytes === null ? 'unknown' : 'ok',
        message: row.size_bytes === null ? 'size not in the catalogue' : '',
        installed: row.installed,
        version_state: row.installed ? 'unknown' : 'not_installed',
        local_revision: null,
        remote_revision: null,
      })),
    } satisfies Static<typeof PackageSizes>,
  };
}

/** voxd's own: every package in the models root, and whether a registered model uses it. */
async function installed(ctx: RouteContext) {
  requireManagement(ctx, INSTALL_DISABLED);
  const { runtime } = ctx;
  const registered = new Map(runtime.snapshots().map((m) => [m.path, m.id]));
  const packages = await runtime.modelsRoot.installer.list();
  return {
    json: {
      models_root: runtime.modelsRoot.root,
      data: packages.map((p) => ({
        id: p.id,
        family: p.family,
        task: p.task,
        path: p.path,
        size_bytes: p.size_bytes,
        installed_at: p.installed_at,
        registered: registered.has(p.path),
        model: registered.get(p.path) ?? null,
      })),
    } satisfies Static<typeof InstalledPackages>,
  };
}

export const installerRoutes: Route[] = [
  managedRoute('/v1/ui/models/install', INSTALL_DISABLED, InstallRequest, InstallJob, install),
  managedRoute('/v1/ui/models/install/stop', INSTALL_DISABLED, IdRequest, InstallJob, stop),
  managedRoute(
    '/v1/ui/models/clean-partial',
    'UI model cleanup is disabled',
    IdRequest,
    CleanPartialResult,
    cleanPartial,
  ),
  managedRoute('/v1/ui/models/delete', 'UI model removal is disabled', IdRequest, DeleteResult, remove),
  queryRoute({
    method: 'GET',
    path: '/v1/ui/models/install-status',
    scope: 'admin',
    query: PackageQuery,
    response: InstallStatus,
    guard: (ctx) => requireManagement(ctx, INSTALL_DISABLED),
    handler: installStatus,
  }),
  {
    method: 'GET',
    path: '/v1/ui/models/package-sizes',
    scope: 'admin',
    response: PackageSizes,
    handler: packageSizes,
  },
  {
    method: 'GET',
    path: '/v1/ui/models/installed',
    scope: 'admin',
    response: InstalledPackages,
    handler: installed,
  },
];
