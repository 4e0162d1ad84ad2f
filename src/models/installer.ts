/**
 * Model packages under a models root: install (download, unpack, validate, one rename), stop,
 * clean-up of partial downloads, removal, and the job objects of audio.cpp's installer routes.
 *
 *   <root>/<id>/                      an installed package, with .voxd-package.json
 *   <root>/.partial/<id>/downloads/   files being downloaded (`*.part` resume after a cut or a stop)
 *   <root>/.partial/<id>/unpacked/    the package being assembled and checked
 *
 * A package appears under <root>/<id> by one rename of a folder that already holds every file and
 * its manifest, so a reader never sees half a package. A failed step removes what it made: after a
 * download failure or a stop, only the downloads stay (for a resume); after a later step, nothing.
 *
 * Jobs run concurrently for different ids, one at a time per id. A job's state goes
 * queued → running → complete | failed | cancelled (through cancelling when stopped). Finished
 * jobs are kept for status, the last MAX_FINISHED_JOBS of them for FINISHED_JOB_TTL_MS at most;
 * messages never carry a URL's user, password or query, and stay short.
 *
 * Bounds (each refused with a message naming it): a download past `maxDownloadBytes`, or past the
 * free space when its length is unknown; an archive whose listing holds more than
 * MAX_ARCHIVE_ENTRIES entries or expands past `maxPackageBytes` or the free space (refused before
 * anything is extracted); a download target on a private address (url-guard.ts). Only packages
 * (what list() shows: a manifest, or a folder a family recognises) can be removed.
 *
 * @example
 * const installer = new Installer({ root: '/srv/models' });
 * installer.install('whisper-base.en');
 * const job = await installer.whenDone('whisper-base.en'); // job.state === 'complete'
 */
import { lstat, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, isAbsolute, join, relative } from 'node:path';
import { createEngineCatalog, type EngineCatalog } from '../engines/catalog.js';
import { cutText, invalidField, invalidRequest, notFound, VoxdError } from '../errors.js';
import { makeFolder } from '../util/make-folder.js';
import {
  type Artifact,
  artifactUrl,
  type CatalogPackage,
  catalogPackages,
  checkPackageId,
  mirrorHint,
  mirrorOrigins,
  packageSize,
  type SourceName,
} from './catalog.js';
import { detectFamily, type Recognition, recogniseAs } from './detect.js';
import { type DownloadResult, download } from './download.js';
import {
  ACTIVE_JOB_STATES,
  type InstallJob,
  type JobState,
  jobErrorCode,
  moveJob,
  newJob,
} from './install-job.js';
import { detectFormat, unpack } from './unpack.js';
import { type HostPolicy, isPrivateAddress, scrubUrls, showUrl, withoutUserinfo } from './url-guard.js';

export const MANIFEST = '.voxd-package.json';
const PARTIAL = '.partial';

/** Finished jobs kept for install-status: the most recent this many... */
export const MAX_FINISHED_JOBS = 50;
/** ...and none finished longer ago than this (ms). */
export const FINISHED_JOB_TTL_MS = 60 * 60 * 1000;
/** A job message is cut to this many characters. */
const MAX_MESSAGE_CHARS = 500;

export type { InstallJob, JobState } from './install-job.js';

/** A package pulled from a URL outside the catalogue. */
export interface UrlSource {
  url: string;
  /** The package id; default: from the URL's file name, reduced to [A-Za-z0-9_-]. */
  id?: string;
  /** The family that must recognise it; default: detected (see detect.ts). */
  family?: string;
  sha256?: string | null;
  size_bytes?: number | null;
}

export interface ManifestFile {
  url: string;
  sha256: string;
  size_bytes: number;
}

export interface PackageManifest {
  id: string;
  family: string;
  task: string;
  /** The `path` to load it with, relative to the package folder ('.' or the model file). */
  path: string;
  source_urls: string[];
  files: ManifestFile[];
  /** Bytes the installed folder takes (its files). */
  size_bytes: number;
  installed_at: string;
}

export interface InstalledPackage {
  id: string;
  family: string;
  task: string;
  size_bytes: number;
  /** null for a folder put there by hand (no manifest; its family was recognised). */
  installed_at: string | null;
  /** Absolute path to load it with. */
  path: string;
  manifest: boolean;
}

export interface PackageSizeRow {
  id: string;
  family: string;
  task: string;
  /** Total download size; null when the catalogue does not know it. */
  size_bytes: number | null;
  installed: boolean;
}

export interface InstallerOptions {
  root: string;
  /** Families that recognise folders. @default createEngineCatalog() */
  engines?: EngineCatalog;
  /** @default catalogPackages() */
  packages?: readonly CatalogPackage[];
  /** Where VOXD_GITHUB_BASE_URL / VOXD_HF_BASE_URL are read. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** @default 30000 (ms) */
  stallTimeoutMs?: number;
  /** Free bytes at a path (a seam for tests). */
  freeSpace?: (dir: string) => Promise<number>;
  /** @default Date.now */
  now?: () => number;
  /** Called with a snapshot after each change of a job (state, message, progress). */
  onJobUpdate?: (job: InstallJob) => void;
  /** The largest file a download may bring (max_download_bytes); 0 = no limit. @default 0 */
  maxDownloadBytes?: number;
  /** The most bytes an archive may expand to (max_package_bytes); 0 = no limit. @default 0 */
  maxPackageBytes?: number;
  /** Downloads may target loopback, link-local and private addresses. @default false */
  allowPrivateHosts?: boolean;
}

type Step = 'prepare' | 'download' | 'unpack' | 'validate' | 'publish';

interface Plan {
  id: string;
  family: string | undefined;
  task: string | undefined;
  archive: { url: string; artifact: Artifact | undefined } | undefined;
  files: {
    url: string;
    name: string;
    sha256: string | null;
    size: number | null;
    /** The catalogue source it comes from (a mirror can stand in); undefined for a URL install. */
    source?: SourceName;
  }[];
  /** A bare URL whose body may be an archive or a single file. */
  bare: boolean;
}

interface RunningJob {
  job: InstallJob;
  controller: AbortController;
  done: Promise<InstallJob>;
}

const active = (id: string) => new VoxdError('E_INSTALL_ACTIVE', `an install job for ${id} is active`);

/** The id a bare URL gets: its file name without archive extensions, reduced to [A-Za-z0-9_-]. */
export function idFromUrl(url: string): string {
  let name = basename(new URL(url).pathname);
  name = name.replace(/\.(tar\.bz2|tar\.gz|tgz|tbz2|tar|zip)$/i, '').replace(/\.onnx$/i, '');
  const id = name
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\.+/, '')
    .slice(0, 128);
  return checkPackageId(id);
}

async function folderSize(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir)) {
    const info = await lstat(join(dir, name));
    total += info.isDirectory() ? await folderSize(join(dir, name)) : info.size;
  }
  return total;
}

const isDirectory = (path: string) =>
  stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

/** A file name for a download: the URL's last segment, made safe. */
const downloadName = (url: string) =>
  basename(new URL(url).pathname)
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\.+/, '') || 'download';

export class Installer {
  readonly root: string;
  readonly #engines: EngineCatalog;
  readonly #packages: readonly CatalogPackage[];
  readonly #options: InstallerOptions;
  readonly #now: () => number;
  /** The last job of each id (finished ones stay, for status). */
  readonly #jobs = new Map<string, RunningJob>();

  constructor(options: InstallerOptions) {
    this.root = options.root;
    this.#options = options;
    this.#engines = options.engines ?? createEngineCatalog();
    this.#packages = options.packages ?? catalogPackages();
    this.#now = options.now ?? Date.now;
  }

  /**
   * Starts an install job and returns its first snapshot (state queued). A catalogue id, or a URL
   * source. Throws at once (no job) for an invalid or unknown id or URL, or an id whose job is
   * active (E_INSTALL_ACTIVE); everything later (a package already installed included) is the
   * job's failure, its message naming the step: prepare, download, unpack, validate, publish.
   */
  install(request: string | UrlSource): InstallJob {
    const plan = this.#plan(request);
    if (this.#isActive(plan.id)) throw active(plan.id);
    this.#forget();
    const job = newJob(plan.id, 'queued', 'queued', this.#now());
    const controller = new AbortController();
    const entry: RunningJob = { job, controller, done: Promise.resolve(job) };
    entry.done = this.#run(plan, job, controller.signal);
    this.#jobs.set(plan.id, entry);
    return { ...job };
  }

  /** Resolves with the job's final snapshot once it ends (at once for an ended or unknown id). */
  async whenDone(id: string): Promise<InstallJob> {
    const entry = this.#jobs.get(id);
    if (!entry) return this.status(id);
    await entry.done;
    return { ...entry.job };
  }

  /** Stops a queued or running job: its state becomes cancelling, its download stops at once. */
  stop(id: string): InstallJob {
    const entry = this.#jobs.get(checkPackageId(id));
    if (!entry) throw notFound(`no install job for ${id}`);
    if (entry.job.state !== 'queued' && entry.job.state !== 'running')
      throw invalidField('id', `id: the install job for ${id} is not running (${entry.job.state})`);
    moveJob(entry.job, 'cancelling');
    entry.job.message = 'cancelling';
    this.#changed(entry.job);
    entry.controller.abort(new VoxdError('E_INSTALL_CANCELLED', `install of ${id} stopped`));
    return { ...entry.job };
  }

  /** Deletes `<root>/.partial/<id>` (partial downloads). Refused while its job is active. */
  async cleanPartial(id: string): Promise<{ id: string; cleaned: true; message: string }> {
    checkPackageId(id);
    if (this.#isActive(id)) throw active(id);
    const dir = this.#partialDir(id);
    const had = await exists(dir);
    await rm(dir, { recursive: true, force: true });
    this.#partialGone(id);
    return {
      id,
      cleaned: true,
      message: had ? `removed partial files of ${id}` : `no partial files of ${id}`,
    };
  }

  /**
   * Deletes an installed package (and its partial files): a folder list() shows, nothing else (a
   * folder that is no package is a 404, untouched). Refused while its job is active.
   */
  async remove(id: string): Promise<{ id: string; removed: true; message: string }> {
    checkPackageId(id);
    if (this.#isActive(id)) throw active(id);
    const dir = join(this.root, id);
    if (!(await this.#describe(id))) {
      const what = (await exists(dir))
        ? 'is not a package (no manifest, no family recognises it)'
        : 'is not installed';
      throw notFound(`package ${id} ${what} in ${this.root}`);
    }
    // Renamed away first, so the package disappears at once even if deleting it takes long.
    const trash = join(this.root, PARTIAL, `.removing-${id}-${this.#now()}`);
    await makeFolder(join(this.root, PARTIAL), 1);
    await rename(dir, trash);
    await rm(trash, { recursive: true, force: true });
    await rm(this.#partialDir(id), { recursive: true, force: true });
    this.#partialGone(id);
    return { id, removed: true, message: `removed ${id}` };
  }

  /** One job (a synthetic idle "Not started" one for an id without a job), or every job. */
  status(id: string): InstallJob;
  status(): InstallJob[];
  status(id?: string): InstallJob | InstallJob[] {
    this.#forget();
    if (id === undefined) return [...this.#jobs.values()].map((e) => ({ ...e.job }));
    const entry = this.#jobs.get(checkPackageId(id));
    if (entry) return { ...entry.job };
    return newJob(id, 'idle', 'Not started', 0);
  }

  /** Jobs queued, running or cancelling (a models-root change must wait for none). */
  activeJobs(): InstallJob[] {
    return [...this.#jobs.values()]
      .filter((e) => ACTIVE_JOB_STATES.has(e.job.state))
      .map((e) => ({ ...e.job }));
  }

  /** Throws E_INSTALL_ACTIVE naming the active jobs, if any (before a models-root change). */
  checkIdle(): void {
    const ids = this.activeJobs().map((job) => job.id);
    if (ids.length > 0)
      throw new VoxdError(
        'E_INSTALL_ACTIVE',
        `model installs are active (${ids.join(', ')}); stop them first`,
      );
  }

  /** Stops every queued or running job and resolves when all jobs have ended (shutdown). */
  async stopAll(): Promise<void> {
    for (const entry of this.#jobs.values())
      if (entry.job.state === 'queued' || entry.job.state === 'running') this.stop(entry.job.id);
    await Promise.all([...this.#jobs.values()].map((entry) => entry.done));
  }

  /** Installed packages: folders with a manifest, or that a family recognises. */
  async list(): Promise<InstalledPackage[]> {
    let names: string[];
    try {
      names = (await readdir(this.root)).sort();
    } catch {
      return [];
    }
    const found: InstalledPackage[] = [];
    for (const name of names) {
      const pkg = await this.#describe(name);
      if (pkg) found.push(pkg);
    }
    return found;
  }

  /** The package in `<root>/<name>`, or undefined when that is no package (list() and remove()'s test). */
  async #describe(name: string): Promise<InstalledPackage | undefined> {
    const dir = join(this.root, name);
    if (name.startsWith('.') || !(await isDirectory(dir))) return undefined;
    const manifest = await readManifest(dir);
    if (manifest)
      return {
        id: name,
        family: manifest.family,
        task: manifest.task,
        size_bytes: manifest.size_bytes,
        installed_at: manifest.installed_at,
        path: join(dir, manifest.path),
        manifest: true,
      };
    const recognised = await detectFamily(this.#engines, dir).catch(() => undefined);
    if (!recognised) return undefined;
    return {
      id: name,
      family: recognised.family,
      task: this.#taskOf(recognised.family),
      size_bytes: await folderSize(dir),
      installed_at: null,
      path: recognised.path,
      manifest: false,
    };
  }

  /** Whether `id` is a package of this installer's catalogue (installed or not). */
  catalogued(id: string): boolean {
    return this.#packages.some((pkg) => pkg.id === id);
  }

  /** The catalogue's packages with their download size and whether each is installed. */
  async packageSizes(): Promise<PackageSizeRow[]> {
    return Promise.all(
      this.#packages.map(async (pkg) => ({
        id: pkg.id,
        family: pkg.family,
        task: pkg.task,
        size_bytes: packageSize(pkg),
        installed: await exists(join(this.root, pkg.id)),
      })),
    );
  }

  /** Drops finished jobs past the bounds: older than FINISHED_JOB_TTL_MS, beyond MAX_FINISHED_JOBS. */
  #forget(): void {
    const now = this.#now();
    const finished = [...this.#jobs.values()]
      .filter((e) => !ACTIVE_JOB_STATES.has(e.job.state))
      .sort((a, b) => b.job.finished_at_ms - a.job.finished_at_ms);
    for (const [index, entry] of finished.entries())
      if (index >= MAX_FINISHED_JOBS || now - entry.job.finished_at_ms > FINISHED_JOB_TTL_MS)
        this.#jobs.delete(entry.job.id);
  }

  #hostPolicy(): HostPolicy {
    return {
      allowPrivate: this.#options.allowPrivateHosts === true,
      trustedOrigins: mirrorOrigins(this.#options.env ?? process.env),
    };
  }

  #isActive(id: string): boolean {
    const entry = this.#jobs.get(id);
    return entry !== undefined && ACTIVE_JOB_STATES.has(entry.job.state);
  }

  #partialDir(id: string): string {
    return join(this.root, PARTIAL, id);
  }

  #taskOf(family: string): string {
    return this.#engines.get(family)?.tasks[0] ?? 'unknown';
  }

  #plan(request: string | UrlSource): Plan {
    const env = this.#options.env ?? process.env;
    if (typeof request === 'string') {
      const id = checkPackageId(request);
      const pkg = this.#packages.find((p) => p.id === id);
      if (!pkg) throw notFound(`unknown package id: ${id}`);
      return {
        id,
        family: pkg.family,
        task: pkg.task,
        archive: pkg.archive ? { url: artifactUrl(pkg.archive, env), artifact: pkg.archive } : undefined,
        files: (pkg.files ?? []).map((f) => ({
          url: artifactUrl(f, env),
          name: f.name ?? downloadName(f.url),
          sha256: f.sha256,
          size: f.size_bytes,
          source: f.source,
        })),
        bare: false,
      };
    }
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      throw invalidField('url', `url: ${JSON.stringify(String(request.url).slice(0, 80))} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw invalidField('url', `url: only http and https URLs are accepted`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!this.#hostPolicy().allowPrivate && isPrivateAddress(host))
      throw invalidField(
        'url',
        `url: ${showUrl(url.href)} names ${host}, a loopback, link-local or private address; set installer_allow_private_hosts to allow it`,
      );
    if (request.family !== undefined && !this.#engines.get(request.family)?.recognise)
      throw invalidField(
        'family',
        `family: ${JSON.stringify(request.family)} is not a family that can be installed`,
      );
    const id = request.id === undefined ? idFromUrl(url.href) : checkPackageId(request.id);
    return {
      id,
      family: request.family,
      task: request.family === undefined ? undefined : this.#taskOf(request.family),
      archive: undefined,
      files: [
        {
          url: url.href,
          name: downloadName(url.href),
          sha256: request.sha256 ?? null,
          size: request.size_bytes ?? null,
        },
      ],
      bare: true,
    };
  }

  async #run(plan: Plan, job: InstallJob, signal: AbortSignal): Promise<InstallJob> {
    // Settles on a later turn, so install() returns its queued snapshot first.
    await Promise.resolve();
    const partial = this.#partialDir(plan.id);
    const downloads = join(partial, 'downloads');
    const unpacked = join(partial, 'unpacked');
    let step: Step = 'prepare';
    try {
      if (await exists(join(this.root, plan.id)))
        throw invalidRequest(`${plan.id} is already installed in ${this.root}; remove it first`);
      signal.throwIfAborted();
      step = 'download';
      moveJob(job, 'running');
      job.message = 'downloading';
      job.progress_percent = -1;
      this.#changed(job);
      await makeFolder(downloads, 3);
      const fetched = await this.#downloadAll(plan, downloads, job, signal);

      step = 'unpack';
      job.message = 'unpacking';
      this.#changed(job);
      signal.throwIfAborted();
      await rm(unpacked, { recursive: true, force: true });
      await makeFolder(unpacked, 1);
      const folder = await this.#assemble(plan, fetched, unpacked);

      step = 'validate';
      job.message = 'validating';
      this.#changed(job);
      signal.throwIfAborted();
      const recognised: Recognition = plan.family
        ? await recogniseAs(this.#engines, plan.family, folder)
        : await detectFamily(this.#engines, folder);

      step = 'publish';
      signal.throwIfAborted();
      const manifest: PackageManifest = {
        id: plan.id,
        family: recognised.family,
        task: plan.task ?? this.#taskOf(recognised.family),
        path: relative(folder, recognised.path) || '.',
        source_urls: fetched.map((f) => withoutUserinfo(f.url)),
        files: fetched.map((f) => ({
          url: withoutUserinfo(f.url),
          sha256: f.result.sha256,
          size_bytes: f.result.size,
        })),
        size_bytes: await folderSize(folder),
        installed_at: new Date(this.#now()).toISOString(),
      };
      await writeFile(join(folder, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
      await makeFolder(this.root, 1);
      await rename(folder, join(this.root, plan.id));
      await rm(partial, { recursive: true, force: true });
      return this.#end(job, 'complete', 0, `installed ${plan.id} (${recognised.family})`);
    } catch (err) {
      await this.#cleanUp(step, downloads, unpacked, partial);
      job.partial_files = await exists(partial);
      if (signal.aborted)
        return this.#end(
          job,
          'cancelled',
          2,
          `cancelled during ${step}${step === 'download' ? '; partial downloads kept for a resume' : ''}`,
        );
      const text = err instanceof Error ? err.message : String(err);
      job.error_code = jobErrorCode(err);
      return this.#end(job, 'failed', 1, `${step} failed: ${text}`);
    }
  }

  /** After a download failure or a stop, the downloads stay (a resume); after a later step, nothing does. */
  async #cleanUp(step: Step, downloads: string, unpacked: string, partial: string): Promise<void> {
    if (step === 'prepare') return; // it made nothing
    if (step === 'download') {
      await rm(unpacked, { recursive: true, force: true }).catch(() => {});
      const left = await readdir(downloads).catch(() => []);
      if (left.length > 0) return;
    }
    await rm(partial, { recursive: true, force: true }).catch(() => {});
  }

  #end(job: InstallJob, state: JobState, code: number, message: string): InstallJob {
    moveJob(job, state);
    job.exit_code = code;
    job.message = cutText(scrubUrls(message), MAX_MESSAGE_CHARS);
    job.finished_at_ms = this.#now();
    if (state === 'complete') job.progress_percent = 100;
    this.#changed(job);
    return { ...job };
  }

  /** The partial files of `id` were deleted: its ended job no longer offers to clean them. */
  #partialGone(id: string): void {
    const job = this.#jobs.get(id)?.job;
    if (job && !ACTIVE_JOB_STATES.has(job.state)) job.partial_files = false;
  }

  #changed(job: InstallJob): void {
    this.#options.onJobUpdate?.({ ...job });
  }

  async #downloadAll(plan: Plan, dir: string, job: InstallJob, signal: AbortSignal) {
    const parts = [
      ...(plan.archive
        ? [
            {
              url: plan.archive.url,
              name: downloadName(plan.archive.url),
              sha256: plan.archive.artifact?.sha256 ?? null,
              size: plan.archive.artifact?.size_bytes ?? null,
              source: plan.archive.artifact?.source,
              archive: true,
            },
          ]
        : []),
      ...plan.files.map((f) => ({ ...f, archive: false })),
    ];
    const fetched: { url: string; name: string; path: string; archive: boolean; result: DownloadResult }[] =
      [];
    let before = 0;
    for (const [index, part] of parts.entries()) {
      const later = parts.slice(index + 1).map((p) => p.size);
      const laterKnown = later.every((s) => s !== null);
      const laterBytes = later.reduce<number>((sum, s) => sum + (s ?? 0), 0);
      const result = await download({
        url: part.url,
        dest: join(dir, `${index}-${part.name}`),
        expectedSize: part.size,
        sha256: part.sha256,
        signal,
        ...(this.#options.stallTimeoutMs !== undefined
          ? { stallTimeoutMs: this.#options.stallTimeoutMs }
          : {}),
        ...(this.#options.freeSpace ? { freeSpace: this.#options.freeSpace } : {}),
        maxBytes: this.#options.maxDownloadBytes ?? 0,
        hosts: this.#hostPolicy(),
        onProgress: (got, total) => {
          job.downloaded_bytes = before + got;
          const known = total !== null && laterKnown;
          job.total_bytes = before + (total ?? got) + laterBytes;
          job.progress_percent = known
            ? Math.min(99, Math.floor((100 * job.downloaded_bytes) / job.total_bytes))
            : -1;
          this.#changed(job);
        },
      }).catch((err: unknown) => {
        throw this.#withMirrorHint(err, part.source);
      });
      before += result.size;
      fetched.push({ url: part.url, name: part.name, path: result.path, archive: part.archive, result });
    }
    return fetched;
  }

  /** An unreachable hub's failure gets the way round it (a mirror). */
  #withMirrorHint(err: unknown, source: SourceName | undefined): unknown {
    if (!(err instanceof VoxdError) || err.code !== 'E_HOST_UNREACHABLE' || source === undefined) return err;
    const hint = mirrorHint(source, this.#options.env ?? process.env);
    return new VoxdError(err.code, `${err.message}; ${hint}`, { cause: err });
  }

  /** Unpacks the archive (if any) and places the single files; returns the package folder. */
  async #assemble(
    plan: Plan,
    fetched: { name: string; path: string; archive: boolean }[],
    unpacked: string,
  ): Promise<string> {
    // A bare URL may serve an archive or a single model file; the bytes say which.
    const items = await Promise.all(
      fetched.map(async (f) => ({ ...f, unpack: f.archive || (plan.bare && (await isArchiveFile(f.path))) })),
    );
    let folder = unpacked;
    const limits = {
      maxBytes: this.#options.maxPackageBytes ?? 0,
      ...(this.#options.freeSpace ? { freeSpace: this.#options.freeSpace } : {}),
    };
    for (const item of items) if (item.unpack) folder = (await unpack(item.path, unpacked, limits)).folder;
    for (const item of items) if (!item.unpack) await rename(item.path, join(folder, item.name));
    return folder;
  }
}

const isArchiveFile = (path: string) =>
  detectFormat(path).then(
    () => true,
    () => false,
  );

/** A folder's manifest, if it has a readable one whose `path` stays inside the folder. */
async function readManifest(dir: string): Promise<PackageManifest | undefined> {
  try {
    const manifest = JSON.parse(await readFile(join(dir, MANIFEST), 'utf8')) as PackageManifest;
    const path = typeof manifest.path === 'string' ? manifest.path : '.';
    if (typeof manifest.family !== 'string' || isAbsolute(path) || path.split(/[\\/]/).includes('..'))
      return undefined;
    return manifest;
  } catch {
    return undefined;
  }
}
