/**
 * `model_aliases`: other names a request may give for a model, so that clients which hard-code
 * OpenAI's model names (`whisper-1`, `tts-1`, ...) reach a voxd model unmodified. The defaults map
 * those names to the embedded models; server.json's `model_aliases` and then `--model-alias` flags
 * add names or repoint them, and `null` (an empty flag value) removes one. A model id always wins
 * over an alias of the same name, so an alias can never hide a model.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { showValue } from '../errors.js';
import { DEFAULT_MODEL_ALIASES } from './embedded-models.js';
import { ConfigError, isPlainObject, keyPath } from './errors.js';
import { checkModelId } from './model-config.js';
import type { ConfigNotice } from './types.js';

export type ModelAliases = Readonly<Record<string, string>>;

interface Given {
  /** server.json's object, unchecked. */
  file: unknown;
  /** `--model-alias name=id` flags, collected; an empty id removes the name. */
  flags: Readonly<Record<string, string>> | undefined;
  /** The configured model ids, and where installed packages live (an alias may name one). */
  modelIds: readonly string[];
  modelsRoot: string;
}

/** The aliases in force: the defaults, then the file's, then the flags', each checked. */
export function parseModelAliases(given: Given, notices: ConfigNotice[]): ModelAliases {
  const aliases = new Map<string, { target: string; key: string } | null>();
  for (const [name, target] of Object.entries(DEFAULT_MODEL_ALIASES)) aliases.set(name, { target, key: '' });
  const set = (name: string, target: unknown, key: string) => {
    checkModelId(name, key);
    if (target === null) return aliases.set(name, null);
    if (typeof target !== 'string')
      throw ConfigError.invalid(key, target, 'a model id, or null to remove the name');
    aliases.set(name, { target: checkModelId(target, key), key });
  };
  if (given.file !== undefined) {
    if (!isPlainObject(given.file))
      throw ConfigError.invalid('model_aliases', given.file, 'an object of "name": "model id" pairs');
    for (const [name, target] of Object.entries(given.file))
      set(name, target, keyPath('model_aliases', name));
  }
  for (const [name, target] of Object.entries(given.flags ?? {}))
    set(name, target === '' ? null : target, '--model-alias');

  const models = new Set(given.modelIds);
  const result: [string, string][] = [];
  for (const [name, alias] of aliases) {
    if (alias === null) continue;
    if (models.has(name)) {
      // A default is simply unused where a model has its name; a configured one would never be.
      if (alias.key === '') continue;
      throw ConfigError.rejected(
        alias.key,
        name,
        `${showValue(name)} is the id of a configured model, which a request naming it always gets; pick another alias name`,
      );
    }
    const chained = aliases.get(alias.target);
    if (chained && !models.has(alias.target)) {
      // A configured alias took the name a default points at: that default means nothing here.
      if (alias.key === '') continue;
      throw ConfigError.rejected(
        alias.key,
        alias.target,
        `${showValue(alias.target)} is itself an alias (of ${showValue(chained.target)}); an alias names a model id`,
      );
    }
    if (
      alias.key !== '' &&
      !models.has(alias.target) &&
      !existsSync(path.join(given.modelsRoot, alias.target))
    )
      notices.push({
        key: alias.key,
        message: `${alias.key}: ${showValue(name)} names ${showValue(alias.target)}, which is neither a configured model nor installed in the models root; requests naming ${showValue(name)} get a 404 until it is`,
      });
    result.push([name, alias.target]);
  }
  // fromEntries defines own keys: an alias called "__proto__" stays an ordinary one.
  return Object.fromEntries(result);
}

/** The model id `name` stands for, if it is an alias (own keys only: "constructor" is no alias). */
export function aliasTarget(aliases: ModelAliases, name: string): string | undefined {
  return Object.hasOwn(aliases, name) ? aliases[name] : undefined;
}

/** The aliases of model `id`, in the order they were defined. */
export function aliasesOf(aliases: ModelAliases, id: string): string[] {
  return Object.keys(aliases).filter((name) => aliases[name] === id);
}
