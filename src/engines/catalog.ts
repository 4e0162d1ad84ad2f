/** The engine families this build of voxd knows, by the `family` name used in configs. */
import { FixtureFamily } from './fixture/fixture-family.js';
import type { EngineFamily } from './types.js';

export type EngineCatalog = ReadonlyMap<string, EngineFamily>;

/** A fresh catalogue: families keep per-process state (the fixture's record), so each server gets its own. */
export function createEngineCatalog(): EngineCatalog {
  const families: EngineFamily[] = [new FixtureFamily()];
  return new Map(families.map((family) => [family.name, family]));
}
