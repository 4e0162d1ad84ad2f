/**
 * Which engine family a model folder belongs to, asked of each family's `recognise` (its load
 * checks without the weights). The installer validates a catalogue package against its family
 * and detects the family of a package pulled from a bare URL.
 */
import type { EngineCatalog } from '../engines/catalog.js';
import { VoxdError } from '../errors.js';

/**
 * Families whose check is loose: piper_tts takes any folder with one `.onnx` and `tokens.txt`,
 * which most sherpa folders have. When a stricter family also recognises a folder, it wins.
 */
const LOOSE_FAMILIES = new Set(['piper_tts']);

export interface Recognition {
  family: string;
  /** The `path` a load of the folder takes (the folder, or its one model file). */
  path: string;
}

/** Asks one family; E_PACKAGE_UNRECOGNISED carries the family's own reason. */
export async function recogniseAs(catalog: EngineCatalog, family: string, dir: string): Promise<Recognition> {
  const engine = catalog.get(family);
  if (!engine?.recognise)
    throw new VoxdError('E_PACKAGE_UNRECOGNISED', `family ${family} cannot check model folders`);
  try {
    return { family, path: await engine.recognise(dir) };
  } catch (err) {
    throw new VoxdError(
      'E_PACKAGE_UNRECOGNISED',
      `${family} does not recognise ${dir}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

/** Every family that recognises `dir`, in catalogue order. */
export async function recognisingFamilies(catalog: EngineCatalog, dir: string): Promise<Recognition[]> {
  const found: Recognition[] = [];
  for (const engine of catalog.values()) {
    if (!engine.recognise) continue;
    try {
      found.push({ family: engine.name, path: await engine.recognise(dir) });
    } catch {
      // not this family
    }
  }
  return found;
}

/** The one family of `dir`; E_PACKAGE_UNRECOGNISED when none or (after loose ones drop) several. */
export async function detectFamily(catalog: EngineCatalog, dir: string): Promise<Recognition> {
  const all = await recognisingFamilies(catalog, dir);
  const strict = all.filter((r) => !LOOSE_FAMILIES.has(r.family));
  const pick = strict.length > 0 ? strict : all;
  if (pick.length === 1) return pick[0]!;
  if (pick.length === 0)
    throw new VoxdError('E_PACKAGE_UNRECOGNISED', `no engine family recognises the model folder ${dir}`);
  throw new VoxdError(
    'E_PACKAGE_UNRECOGNISED',
    `several engine families recognise ${dir} (${pick.map((r) => r.family).join(', ')}); name the family`,
  );
}
