/**
 * A model entry's configuration made complete and checked before it is registered: its installed
 * package filled in, its family looked up, its task and isolation checked against the family, and
 * its voice presets read.
 */
import type { ModelConfig, TaskToken } from '../config/types.js';
import type { EngineCatalog } from '../engines/catalog.js';
import type { EngineFamily } from '../engines/types.js';
import { invalidField, invalidRequest } from '../errors.js';
import type { Installer } from '../models/installer.js';
import type { ModelsRoot } from '../models/models-root.js';
import { type ResolvedPreset, resolvePresets } from './voice-presets.js';

export interface ModelDefinition {
  config: ModelConfig;
  family: EngineFamily;
  presets: ReadonlyMap<string, ResolvedPreset>;
}

export interface DefinitionSources {
  catalog: EngineCatalog;
  modelsRoot: ModelsRoot<Installer>;
}

/** The complete, checked definition of a configured model; a 400 for one voxd cannot serve. */
export async function defineModel(config: ModelConfig, sources: DefinitionSources): Promise<ModelDefinition> {
  const complete = await withPackage(config, sources.modelsRoot);
  checkTask(complete, sources.catalog);
  const family = familyOf(complete, sources.catalog);
  return { config: complete, family, presets: await resolvePresets(complete) };
}

export function familyOf(config: ModelConfig, catalog: EngineCatalog): EngineFamily {
  const family = catalog.get(config.family);
  if (!family) {
    throw invalidField(
      'family',
      `family: "${config.family}" is unknown; known families: ${[...catalog.keys()].join(', ')}`,
    );
  }
  return family;
}

/**
 * A model entry naming an installed `package` takes its family, task (unless the entry names one)
 * and path from it; a package that is not installed, or of another family, is a 400.
 */
async function withPackage(config: ModelConfig, modelsRoot: ModelsRoot<Installer>): Promise<ModelConfig> {
  if (config.package === undefined) return config;
  const root = modelsRoot.root;
  const installed = (await modelsRoot.installer.list()).find((p) => p.id === config.package);
  if (!installed)
    throw invalidField(
      'package',
      `package: "${config.package}" is not installed in ${root}; install it with \`voxd models pull ${config.package}\` or POST /v1/ui/models/install`,
    );
  if (config.family !== '' && config.family !== installed.family)
    throw invalidField(
      'family',
      `family: "${config.family}" does not match package "${installed.id}", which is a ${installed.family} model`,
    );
  return {
    ...config,
    family: installed.family,
    task: config.task || (installed.task as TaskToken),
    path: installed.path,
  };
}

function checkTask(config: ModelConfig, catalog: EngineCatalog): void {
  const family = familyOf(config, catalog);
  if (!family.tasks.includes(config.task)) {
    throw invalidRequest(
      `model '${config.id}': family '${family.name}' does not serve task '${config.task}'; it serves ${family.tasks.join(', ')}`,
    );
  }
  const isolations = family.isolations ?? ['session'];
  if (config.isolation && !isolations.includes(config.isolation)) {
    throw invalidField(
      'isolation',
      `isolation: "${config.isolation}" is not available for model '${config.id}': family '${family.name}' supports ${isolations.map((i) => `"${i}"`).join(', ')} (its engine object cannot serve two slots at once; see docs/engines.md)`,
    );
  }
}
