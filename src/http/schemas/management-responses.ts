/**
 * The answers of the management and installer routes: registration and unloading, the models
 * root and its folder picker, install jobs and packages. Published as components under their titles.
 */
import { Type } from '@sinclair/typebox';
import { OneOf } from '../request/schema.js';
import { arrayOf, bool, componentRef, int, nullable, num, object, str } from './response-schema.js';

export const ModelConfig = object({ id: str(), family: str() }, ['id', 'family'], { title: 'ModelConfig' });

export const LoadModelResult = object(
  { id: str(), loaded: bool(), reconfigured: bool() },
  ['id', 'loaded', 'reconfigured'],
  {
    title: 'LoadModelResult',
  },
);

export const UnloadModelResult = object(
  { id: str(), loaded: Type.Unsafe<false>({ type: 'boolean', enum: [false] }) },
  ['id', 'loaded'],
  { title: 'UnloadModelResult' },
);

export const UnloadModelsResult = object(
  { unloaded: arrayOf(str()), not_found: arrayOf(str()) },
  ['unloaded', 'not_found'],
  {
    title: 'UnloadModelsResult',
  },
);

export const UnloadAllResult = object({ unloaded: arrayOf(str()) }, ['unloaded'], {
  title: 'UnloadAllResult',
});

export const ModelsRoot = object(
  { models_root: str(), default_models_root: str(), is_default: bool() },
  ['models_root', 'default_models_root', 'is_default'],
  { title: 'ModelsRoot' },
);

export const Directories = object(
  {
    current: str(),
    parent: str(),
    roots: arrayOf(str()),
    directories: arrayOf(object({ name: str(), path: str() }, ['name', 'path'])),
  },
  ['current', 'parent', 'roots', 'directories'],
  { title: 'Directories' },
);

export const PathStatus = object(
  { path: str(), exists: bool(), directory: bool(), file: bool() },
  ['path', 'exists', 'directory', 'file'],
  { title: 'PathStatus' },
);

export const InstallJob = object(
  {
    id: str(),
    state: OneOf(['idle', 'queued', 'running', 'cancelling', 'cancelled', 'complete', 'failed']),
    message: str(),
    exit_code: nullable('integer'),
    error_code: nullable(
      'string',
      "A failed job's error code (host_unreachable, download_failed, ...); null otherwise.",
    ),
    downloaded_bytes: int(),
    total_bytes: int(),
    progress_percent: num('-1 while the size is unknown.'),
    started_at_ms: num(),
    finished_at_ms: num(),
    partial_files: bool(
      'Whether the ended job left partial files (a stopped or failed download, kept for a resume).',
    ),
  },
  [
    'id',
    'state',
    'message',
    'exit_code',
    'error_code',
    'downloaded_bytes',
    'total_bytes',
    'progress_percent',
    'started_at_ms',
    'finished_at_ms',
    'partial_files',
  ],
  { title: 'InstallJob' },
);

export const InstallJobs = object({ data: arrayOf(componentRef(InstallJob)) }, ['data'], {
  title: 'InstallJobs',
});

/** GET /v1/ui/models/install-status: one job with an id, all of them without. */
export const InstallStatus = Type.Union([componentRef(InstallJob), componentRef(InstallJobs)], {
  title: 'InstallStatus',
});

export const CleanPartialResult = object({ id: str(), cleaned: bool(), message: str() }, ['id', 'cleaned'], {
  title: 'CleanPartialResult',
});

export const DeleteResult = object({ id: str(), removed: bool(), message: str() }, ['id', 'removed'], {
  title: 'DeleteResult',
});

export const PackageSizes = object(
  {
    state: str(),
    message: str(),
    data: arrayOf(
      object(
        {
          id: str(),
          family: str(),
          task: str(),
          size_bytes: nullable('integer'),
          state: str(),
          message: str(),
          installed: bool(),
          version_state: str(),
          local_revision: nullable('string'),
          remote_revision: nullable('string'),
        },
        ['id', 'family', 'task', 'size_bytes', 'installed'],
      ),
    ),
  },
  ['state', 'data'],
  { title: 'PackageSizes' },
);

export const InstalledPackages = object(
  {
    models_root: str(),
    data: arrayOf(
      object(
        {
          id: str(),
          family: str(),
          task: str(),
          path: str(),
          size_bytes: int(),
          installed_at: nullable('string'),
          registered: bool(),
          model: nullable('string'),
        },
        ['id', 'family', 'task', 'path', 'registered', 'model'],
      ),
    ),
  },
  ['models_root', 'data'],
  { title: 'InstalledPackages' },
);
