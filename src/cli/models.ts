/**
 * `voxd models list|info|pull|rm`: the installed packages of the models root, as `ollama list`,
 * `show`, `pull` and `rm` handle theirs. Everything runs in this process through the Installer
 * (src/models/installer.ts), on the root `--models-root` names, else the config's models_root,
 * else the default. stdout holds the result and nothing else; messages are one line on stderr
 * `voxd: <message>`; exit 0 done, 1 failed, 2 bad usage, 130 when a pull is interrupted.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { installerSettings, openModelsRoot } from '../app.js';
import { ConfigError } from '../config/errors.js';
import { type CliOverrides, loadServerConfig } from '../config/server-config.js';
import { createEngineCatalog } from '../engines/catalog.js';
import { isVoxdError } from '../errors.js';
import { findPackage, packageSize } from '../models/catalog.js';
import { Installer, type InstallJob, MANIFEST } from '../models/installer.js';
import { isUrl, type ModelsArgs, modelsHelp, parseModelsArgs } from './models-args.js';
import { EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE } from './one-shot.js';
import { UsageError } from './one-shot-args.js';

/** A failure the command reports with this exit code. */
class ExitError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/** Writes to stdout and resolves once the bytes are handed to the OS (before the process ends). */
function writeStdout(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(text, (err) => (err ? reject(err) : resolve()));
  });
}

/** 1.5 GB, 74.1 MB, 812 kB, 12 B (powers of 1000, as download sizes are usually given). */
export function formatBytes(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** Rows as columns padded to the widest cell, two spaces apart. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  return rows
    .map((row) => `${row.map((cell, col) => cell.padEnd(widths[col]!)).join('  ')}`.trimEnd())
    .join('\n')
    .concat('\n');
}

/** The installer of the root the flags name (made when missing, as `voxd serve` makes it). */
async function openInstaller(args: ModelsArgs, onJobUpdate?: (job: InstallJob) => void): Promise<Installer> {
  const catalog = createEngineCatalog();
  const overrides: CliOverrides = {};
  if (args.modelsRoot !== undefined) overrides.models_root = args.modelsRoot;
  const { config } = loadServerConfig({
    configPath: args.configPath,
    overrides,
    knownFamilies: [...catalog.keys()],
  });
  // The URL comes from the operator's own shell, not from a client over the network: the guard
  // against private addresses (installer_allow_private_hosts) is for URLs clients send, so a pull
  // from a LAN mirror needs no config.
  const build = async (root: string) =>
    new Installer({
      root,
      engines: catalog,
      ...installerSettings(config),
      allowPrivateHosts: true,
      ...(onJobUpdate ? { onJobUpdate } : {}),
    });
  return (await openModelsRoot(config, catalog, build)).installer;
}

async function list(args: ModelsArgs, installer: Installer): Promise<void> {
  const found = await installer.list();
  if (args.json) return writeStdout(`${JSON.stringify(found, null, 2)}\n`);
  const rows = found.map((p) => [
    p.id,
    p.family,
    p.task,
    formatBytes(p.size_bytes),
    p.installed_at ? p.installed_at.slice(0, 19).replace('T', ' ') : '(by hand)',
  ]);
  return writeStdout(table([['ID', 'FAMILY', 'TASK', 'SIZE', 'INSTALLED'], ...rows]));
}

async function info(args: ModelsArgs, installer: Installer): Promise<void> {
  const id = args.target!;
  const installed = (await installer.list()).find((p) => p.id === id);
  const pkg = findPackage(id);
  let described: Record<string, unknown>;
  if (installed) {
    const manifest = installed.manifest
      ? (JSON.parse(await readFile(join(installer.root, id, MANIFEST), 'utf8')) as Record<string, unknown>)
      : { id, family: installed.family, task: installed.task, size_bytes: installed.size_bytes };
    described = { ...manifest, installed: true, folder: join(installer.root, id), load_path: installed.path };
  } else if (pkg) {
    described = {
      id: pkg.id,
      family: pkg.family,
      task: pkg.task,
      description: pkg.description,
      licence: pkg.licence,
      homepage: pkg.homepage,
      size_bytes: packageSize(pkg),
      installed: false,
    };
  } else {
    throw new ExitError(
      `unknown package id: "${id}" (not in the catalogue, not installed in ${installer.root})`,
      1,
    );
  }
  if (pkg && installed)
    described = { ...described, description: pkg.description, licence: pkg.licence, homepage: pkg.homepage };
  if (args.json) return writeStdout(`${JSON.stringify(described, null, 2)}\n`);
  const lines = Object.entries(described).map(([key, value]) => {
    let text: string;
    if (key === 'size_bytes')
      text = value === null ? 'unknown' : `${formatBytes(value as number)} (${value} bytes)`;
    else if (Array.isArray(value))
      text = value.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ') || '-';
    else text = typeof value === 'string' ? value : JSON.stringify(value);
    return `${key}: ${text}`;
  });
  return writeStdout(`${lines.join('\n')}\n`);
}

async function rm(args: ModelsArgs, installer: Installer): Promise<void> {
  const removed = await installer.remove(args.target!);
  return writeStdout(`${removed.message}\n`);
}

/** The progress bar of a pull, redrawn in place on stderr; nothing when stderr is not a terminal. */
class PullBar {
  readonly #enabled: boolean;
  #drawn = 0;
  #lastBytes = 0;
  #lastAt = 0;
  #speed = 0;

  constructor(enabled: boolean) {
    this.#enabled = enabled;
  }

  update(job: InstallJob): void {
    if (!this.#enabled || job.state !== 'running') return;
    const now = performance.now();
    // At most 8 redraws a second; the speed is averaged over each redraw's interval.
    if (now - this.#drawn < 125 && job.message === 'downloading') return;
    if (this.#lastAt > 0 && now > this.#lastAt)
      this.#speed = ((job.downloaded_bytes - this.#lastBytes) * 1000) / (now - this.#lastAt);
    this.#lastBytes = job.downloaded_bytes;
    this.#lastAt = now;
    this.#drawn = now;
    let line: string;
    if (job.message !== 'downloading') line = `${job.id}: ${job.message}...`;
    else {
      const width = 24;
      const known = job.progress_percent >= 0;
      const filled = known ? Math.round((width * job.progress_percent) / 100) : 0;
      const bar = known
        ? `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${job.progress_percent}%`
        : '[ ? ]';
      const total = known ? ` / ${formatBytes(job.total_bytes)}` : '';
      line = `${job.id}: ${bar} ${formatBytes(job.downloaded_bytes)}${total} ${formatBytes(Math.max(0, Math.round(this.#speed)))}/s`;
    }
    process.stderr.write(`\r\x1b[Kvoxd: pulling ${line}`);
  }

  /** Clears the line, so what follows on stderr starts clean. */
  stop(): void {
    if (this.#enabled && this.#drawn > 0) process.stderr.write('\r\x1b[K');
    this.#drawn = 0;
  }
}

async function pull(args: ModelsArgs, installer: Installer, bar: PullBar): Promise<void> {
  const target = args.target!;
  let job: InstallJob;
  try {
    job = installer.install(
      isUrl(target)
        ? {
            url: target,
            ...(args.id !== undefined ? { id: args.id } : {}),
            ...(args.family !== undefined ? { family: args.family } : {}),
          }
        : target,
    );
  } catch (err) {
    // An invalid id, URL or family is bad usage; an unknown catalogue id is a failure.
    if (isVoxdError(err) && err.code === 'E_INVALID_REQUEST') throw new UsageError(err.message);
    throw err;
  }
  let interrupted = false;
  const onInterrupt = () => {
    if (interrupted) return;
    interrupted = true;
    try {
      installer.stop(job.id);
    } catch {
      // Ended meanwhile: whenDone below reports how.
    }
  };
  process.on('SIGINT', onInterrupt);
  process.on('SIGTERM', onInterrupt);
  const done = await installer.whenDone(job.id);
  bar.stop();
  if (done.state === 'complete') return writeStdout(`${join(installer.root, done.id)}\n`);
  if (done.state === 'cancelled') {
    throw new ExitError(
      done.partial_files
        ? `interrupted: the partial download of ${done.id} is kept in ${join(installer.root, '.partial', done.id)}; run the same pull again to resume`
        : `interrupted: ${done.message}`,
      EXIT_INTERRUPTED,
    );
  }
  throw new ExitError(done.message, EXIT_FAILURE);
}

/** One line, whatever the error. */
function messageOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

function exitCodeOf(err: unknown): number {
  if (err instanceof ExitError) return err.code;
  return err instanceof UsageError || err instanceof ConfigError ? EXIT_USAGE : EXIT_FAILURE;
}

/** Runs `voxd models <argv>` and ends the process with its exit code. */
export async function runModels(argv: readonly string[]): Promise<never> {
  const bar = new PullBar(process.stderr.isTTY === true);
  process.stdout.on('error', () => {});
  let code = EXIT_OK;
  let message: string | undefined;
  try {
    const args = parseModelsArgs(argv);
    if (args.help) await writeStdout(modelsHelp(args.command));
    else {
      const installer = await openInstaller(
        args,
        args.command === 'pull' ? (job) => bar.update(job) : undefined,
      );
      if (args.command === 'list') await list(args, installer);
      else if (args.command === 'info') await info(args, installer);
      else if (args.command === 'pull') await pull(args, installer, bar);
      else await rm(args, installer);
    }
  } catch (err) {
    code = exitCodeOf(err);
    message = messageOf(err);
  }
  bar.stop();
  if (message !== undefined) process.stderr.write(`voxd: ${message}\n`);
  return process.exit(code);
}
