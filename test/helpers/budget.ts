/** What tests of the server-wide byte budget share: its highest use, and large JSON made to measure. */
import type { ByteBudget } from '../../src/session/byte-budget.js';

/**
 * Watches `budget` from now on: `highest` is the most it held at once, seen at every take as it
 * happens, not only at the moments a test samples.
 */
export function watchHighest(budget: ByteBudget): { readonly highest: number } {
  const watch = { highest: budget.inUse };
  const take = budget.take.bind(budget);
  budget.take = (bytes: number) => {
    const took = take(bytes);
    watch.highest = Math.max(watch.highest, budget.inUse);
    return took;
  };
  return watch;
}

/**
 * JSON text of exactly `bytes` bytes: `head`, which must end by opening an array of strings
 * (`..."pad":["`), then strings of 512 KiB of `a` (one JSON string may be at most 1 MiB), then `"]}`.
 */
export function paddedJson(head: string, bytes: number): Buffer {
  const start = Buffer.from(head);
  const text = Buffer.alloc(bytes, 'a');
  start.copy(text);
  for (let at = start.length + 512 * 1024; at + 6 < bytes; at += 512 * 1024) text.write('","', at);
  text.write('"]}', bytes - 3);
  return text;
}
