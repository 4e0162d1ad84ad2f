/**
 * The models root and its installer, as one consistent pair: installed packages live in the root,
 * and the installer writes there. Changing the root (POST /v1/ui/models-root) builds and checks
 * the new pair completely before it replaces the old one in a single assignment, so a failure at
 * any step (a path that is not a folder or cannot be made, an installer that cannot be built)
 * leaves the old pair whole (contract cell fail.models-root). While a download runs the root
 * cannot change (409).
 *
 * A root is judged by its real path (a link is resolved, and the root becomes where it leads):
 * virtual file systems and operating-system folders are refused (root-location.ts) before anything
 * is made, and the folder is made level by level (util/make-folder.ts), never with a recursive
 * mkdir, which hangs for paths such as /proc/nope/x.
 */
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { invalidField, VoxdError } from '../errors.js';
import { makeFolder } from '../util/make-folder.js';
import { refusedRootLocation } from './root-location.js';

/** A package installed in the root, as a request may name it (by its id). */
export interface InstalledModel {
  id: string;
  family: string;
  task: string;
  /** Absolute path to load it with. */
  path: string;
}

/** What voxd needs of an installer: the jobs running on it now, and the packages in its root. */
export interface RootInstaller {
  activeJobs(): readonly unknown[];
  list(): Promise<readonly InstalledModel[]>;
}

export interface ModelsRootStatus {
  models_root: string;
  default_models_root: string;
  is_default: boolean;
}

interface Pair<I> {
  /** The real path of the folder. */
  root: string;
  installer: I;
  isDefault: boolean;
}

export class ModelsRoot<I extends RootInstaller> {
  #pair: Pair<I>;
  /** Changes run one at a time, so two never stage their pairs over each other. */
  #changing: Promise<unknown> = Promise.resolve();

  private constructor(
    pair: Pair<I>,
    readonly defaultRoot: string,
    private readonly build: (root: string) => Promise<I>,
  ) {
    this.#pair = pair;
  }

  /** Makes the root folder when it is missing and builds its installer; throws when either fails. */
  static async open<I extends RootInstaller>(
    root: string,
    defaultRoot: string,
    build: (root: string) => Promise<I>,
  ): Promise<ModelsRoot<I>> {
    return new ModelsRoot(await stage(root, root === defaultRoot, build), defaultRoot, build);
  }

  get root(): string {
    return this.#pair.root;
  }

  get installer(): I {
    return this.#pair.installer;
  }

  status(): ModelsRootStatus {
    return {
      models_root: this.root,
      default_models_root: this.defaultRoot,
      is_default: this.#pair.isDefault,
    };
  }

  /**
   * Moves to `requested` (resolved against `base`; empty: the default root). The new folder is
   * made and checked and its installer built first; only then does the pair change.
   */
  change(requested: string, base: string): Promise<ModelsRootStatus> {
    const run = this.#changing.then(async () => {
      this.#refuseWhileInstalling();
      const root = requested.trim() === '' ? this.defaultRoot : path.resolve(base, requested);
      const staged = await stage(root, root === this.defaultRoot, this.build);
      // A download may have started while the new pair was built.
      this.#refuseWhileInstalling();
      this.#pair = staged;
      return this.status();
    });
    this.#changing = run.catch(() => {});
    return run;
  }

  #refuseWhileInstalling(): void {
    if (this.#pair.installer.activeJobs().length > 0)
      throw new VoxdError(
        'E_INSTALL_ACTIVE',
        'the models root cannot change while a model download runs; stop it or wait for it to end',
      );
  }
}

async function stage<I>(
  requested: string,
  isDefault: boolean,
  build: (root: string) => Promise<I>,
): Promise<Pair<I>> {
  const before = await refusedRootLocation(requested);
  if (before) throw invalidField('path', `path: the models root ${requested} is refused: ${before}`);
  try {
    await makeFolder(requested);
  } catch (err) {
    throw invalidField(
      'path',
      `path: the models root ${requested} cannot be created (${(err as Error).message})`,
    );
  }
  // Made or found: where it really is now (a link swapped meanwhile is judged again).
  const root = await realpath(requested).catch(() => undefined);
  const info = root === undefined ? undefined : await stat(root).catch(() => undefined);
  if (root === undefined || !info?.isDirectory())
    throw invalidField('path', `path: the models root ${requested} is not a folder`);
  const after = await refusedRootLocation(root);
  if (after) throw invalidField('path', `path: the models root ${requested} is refused: ${after}`);
  let installer: I;
  try {
    installer = await build(root);
  } catch (err) {
    throw invalidField(
      'path',
      `path: the installer for the models root ${root} could not be set up (${(err as Error).message})`,
    );
  }
  return { root, installer, isDefault };
}
