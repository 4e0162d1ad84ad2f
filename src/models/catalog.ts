/**
 * The catalogue of model packages the installer can fetch (src/models/catalog.json). Each package
 * is an archive and/or single files, each named by a URL relative to a source's base URL, so a
 * mirror or a test server stands in for GitHub or Hugging Face through an environment variable.
 */
import { readFileSync } from 'node:fs';
import { invalidField, showValue } from '../errors.js';

/** Package ids: what a folder under the models root may be called. */
/** Package ids become folder names: letters, digits, `_`, `-` and `.`, never a leading `.` (so never `.`, `..` or a hidden folder). */
export const PACKAGE_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

export type SourceName = 'github' | 'huggingface';

/** One file to download. */
export interface Artifact {
  source: SourceName;
  /** Relative to the source's base URL. */
  url: string;
  /** The name the file gets in the package folder (single files only; archives are unpacked). */
  name?: string;
  /** null: unknown, not checked. */
  size_bytes: number | null;
  /** Lowercase hex; null: unknown, not checked. */
  sha256: string | null;
}

export interface CatalogPackage {
  id: string;
  family: string;
  task: string;
  description: string;
  /** Unpacked into the package folder (its single top-level folder, if any, becomes the folder). */
  archive?: Artifact;
  /** Placed into the package folder under their `name`, after the archive. */
  files?: Artifact[];
  licence: string;
  homepage: string;
}

interface SourceSpec {
  base_url: string;
  env: string;
}

interface CatalogFile {
  sources: Record<SourceName, SourceSpec>;
  packages: CatalogPackage[];
}

/** The JSON sits next to this module in src/ (dist/ holds only compiled code). */
function readCatalogFile(): CatalogFile {
  const candidates = [
    new URL('./catalog.json', import.meta.url),
    new URL('../../../src/models/catalog.json', import.meta.url),
  ];
  for (const url of candidates) {
    try {
      return JSON.parse(readFileSync(url, 'utf8')) as CatalogFile;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  throw new Error('src/models/catalog.json not found');
}

let cached: CatalogFile | undefined;
const catalogFile = () => (cached ??= readCatalogFile());

/** Every package of the catalogue, in its order. */
export function catalogPackages(): readonly CatalogPackage[] {
  return catalogFile().packages;
}

/** The catalogue entry of `id`, or undefined. */
export function findPackage(id: string): CatalogPackage | undefined {
  return catalogFile().packages.find((p) => p.id === id);
}

/** Throws a 400 unless `id` is a valid package id. */
export function checkPackageId(id: unknown): string {
  if (typeof id !== 'string' || !PACKAGE_ID.test(id))
    throw invalidField(
      'id',
      `id: ${showValue(id)} is invalid; expected 1 to 128 of A-Z a-z 0-9 _ - . (not starting with .)`,
    );
  return id;
}

/** The environment variable that points a source at a mirror (VOXD_GITHUB_BASE_URL, VOXD_HF_BASE_URL). */
export function sourceEnvName(source: SourceName): string {
  const spec = catalogFile().sources[source];
  if (!spec) throw new Error(`unknown catalogue source: ${source}`);
  return spec.env;
}

/**
 * The base URL of a source: its environment variable (VOXD_GITHUB_BASE_URL, VOXD_HF_BASE_URL)
 * when set, else the catalogue's. Read at each call, so a test can point it at a local server.
 */
export function sourceBaseUrl(source: SourceName, env: NodeJS.ProcessEnv = process.env): string {
  const override = env[sourceEnvName(source)]?.trim();
  return (override || catalogFile().sources[source].base_url).replace(/\/+$/, '');
}

/**
 * The origins (`http://host:port`) of the mirrors the environment sets (VOXD_GITHUB_BASE_URL,
 * VOXD_HF_BASE_URL): set by the operator, so the installer trusts them (url-guard.ts).
 */
export function mirrorOrigins(env: NodeJS.ProcessEnv = process.env): string[] {
  const origins: string[] = [];
  for (const spec of Object.values(catalogFile().sources)) {
    const override = env[spec.env]?.trim();
    if (!override) continue;
    try {
      origins.push(new URL(override).origin);
    } catch {
      // Not a URL: downloads through it fail with their own message.
    }
  }
  return origins;
}

/**
 * What to tell a person whose download from `source` reached no host: the variable that points the
 * source at a mirror (which someone offline does not know of), or, when it is set, that the mirror
 * it names is what could not be reached.
 */
export function mirrorHint(source: SourceName, env: NodeJS.ProcessEnv = process.env): string {
  const name = sourceEnvName(source);
  return env[name]?.trim()
    ? `the download goes through the mirror ${name} names`
    : `to install from a mirror, set ${name} to its base URL`;
}

/** The absolute URL of an artifact. */
export function artifactUrl(artifact: Artifact, env: NodeJS.ProcessEnv = process.env): string {
  return `${sourceBaseUrl(artifact.source, env)}/${artifact.url.replace(/^\/+/, '')}`;
}

/** The package's total download size, or null when any part's size is unknown. */
export function packageSize(pkg: CatalogPackage): number | null {
  const parts = [...(pkg.archive ? [pkg.archive] : []), ...(pkg.files ?? [])];
  let total = 0;
  for (const part of parts) {
    if (part.size_bytes === null) return null;
    total += part.size_bytes;
  }
  return total;
}
