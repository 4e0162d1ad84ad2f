/**
 * The models root and its installer, as one consistent pair: installed packages live in the root,
 * and the installer writes there. Changing the root (POST /v1/ui/models-root) builds and checks
 * the new pair completely before it replaces the old one in a single assignment, so a failure at
 * any step (a path that is not a folder or cannot be made, an installer that cannot be built)
 * leaves the old pair whole (contract cell fail.models-root). While a download runs the root
 * cannot change (409).
 */
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { invalidRequest, VoxdError } from '../errors.js';

/** What the root needs of an installer: the jobs running on it now. */
export interface RootInstaller {
  activeJobs(): readonly unknown[];
}

export interface ModelsRootStatus {
  models_root: string;
  default_models_root: string;
  is_default: boolean;
}

interface Pair<I> {
  root: string;
  installer: I;
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
    return new ModelsRoot(await stage(root, build), defaultRoot, build);
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
      is_default: this.root === this.defaultRoot,
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
      const staged = await stage(root, this.build);
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

async function stage<I>(root: string, build: (root: string) => Promise<I>): Promise<Pair<I>> {
  try {
    await mkdir(root, { recursive: true });
  } catch (err) {
    throw invalidRequest(`path: the models root ${root} cannot be created (${(err as Error).message})`);
  }
  // mkdir succeeds on an existing path of any kind only when it is a folder, but a link may lead
  // anywhere: the path must end at a folder.
  const info = await stat(root).catch(() => undefined);
  if (!info?.isDirectory()) throw invalidRequest(`path: the models root ${root} is not a folder`);
  let installer: I;
  try {
    installer = await build(root);
  } catch (err) {
    throw invalidRequest(
      `path: the installer for the models root ${root} could not be set up (${(err as Error).message})`,
    );
  }
  return { root, installer };
}
