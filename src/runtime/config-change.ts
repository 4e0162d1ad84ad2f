/** How a model's new configuration differs from its live one: what a reconfiguration must redo. */
import type { ModelConfig } from '../config/types.js';

const LOAD_KEYS = [
  'family',
  'path',
  'task',
  'mode',
  'config',
  'weight',
  'model_spec_override',
  'isolation',
] as const;

/** Whether two configs load the same weights and sessions (so a live capacity still applies). */
export function sameLoadInputs(a: ModelConfig, b: ModelConfig): boolean {
  return (
    LOAD_KEYS.every((k) => a[k] === b[k]) &&
    sameMap(a.load_options, b.load_options) &&
    sameMap(a.session_options, b.session_options)
  );
}

/** 'reload' when the pool must be rebuilt, 'metadata' when only request-time settings changed. */
export function compareConfigs(a: ModelConfig, b: ModelConfig): 'same' | 'metadata' | 'reload' {
  if (!sameLoadInputs(a, b) || (a.slots ?? 1) !== (b.slots ?? 1)) return 'reload';
  return stableJson(a) === stableJson(b) ? 'same' : 'metadata';
}

/** JSON with object keys sorted, so key order in a request body does not count as a change. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
      : v,
  );
}

function sameMap(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
